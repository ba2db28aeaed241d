#!/usr/bin/env bash
# A few tiny networks measured through the real ONNX Runtime runner (runners/onnxruntime):
# NB201 networks and one network of each other search space at optimisation "all", an ONNX model of data/onnx at "disabled", and the
# store used as a training data set. Skipped (exit 77) only when Node.js is not installed;
# scripts/test.sh installs it, with the runner's npm dependencies.
# usage: measure_ort.sh DNNCOST_BINARY DATA_DIR WORK_DIR
source "$(dirname "$0")/common.sh"
runner="$(cd "$(dirname "$0")/../../runners/onnxruntime" && pwd)"
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node (Node.js) is not installed; scripts/deps.sh installs it"
  exit 77
fi
if [ ! -d "$runner/node_modules/onnxruntime-node" ]; then
  echo "FAIL: $runner/node_modules is missing: run 'npm ci --ignore-scripts' there (scripts/deps.sh does)"
  exit 1
fi
export TMPDIR=$work
small=(--rounds 2 --max-rounds 2 --warmup 1 --repeats 3 --timeout 120)

timeout 600 "$bin" measure --runner "$runner/run --optimization all --threads 1" --device ort-test --space nb201 --sample 3 \
  --seed 5 "${small[@]}" --out nb201.csv --json >out.json 2>err.txt
rc=$?
[ $rc -eq 0 ] || { fail "nb201 at 'all': exit $rc"; sed 's/^/  | /' err.txt | head -5; }
grep -q '"measured": 3' out.json || fail "nb201: not 3 measured"
grep -q '"runtime":"onnxruntime","version":"1.30.0"' nb201.device.json || fail "sidecar lacks the ONNX Runtime version"
grep -q '"optimization":"all"' nb201.device.json || fail "sidecar lacks the optimisation level"
awk -F, 'NR > 1 && $6 == "ok" && !($3 > 0) { bad = 1 } END { exit bad }' nb201.csv || fail "a non-positive latency"
awk -F, 'NR > 1 && $6 == "ok" { n++ } END { exit n != 3 }' nb201.csv || fail "not 3 ok rows"
cat err.txt

# one small architecture of every other search space: exported with weights, run by the runtime
for space in fbnet ofa vit kws; do
  timeout 600 "$bin" measure --runner "$runner/run --optimization all --threads 1" --device ort-test --space $space \
    --sample 1 --seed 5 "${small[@]}" --out $space.csv --json >out.json 2>err.txt
  rc=$?
  [ $rc -eq 0 ] || { fail "$space at 'all': exit $rc"; sed 's/^/  | /' err.txt | head -5; }
  grep -q '"measured": 1' out.json || fail "$space: not 1 measured: $(cat out.json)"
  awk -F, -v s="$space:" 'NR > 1 && $6 == "ok" && index($2, s) == 1 && $3 > 0 { n++ } END { exit n != 1 }' $space.csv \
    || fail "$space: no ok row with a positive latency: $(cat $space.csv)"
done

timeout 600 "$bin" measure --runner "$runner/run --optimization disabled --threads 1" --device ort-test-disabled \
  "$data/onnx/squeezenet1_1.onnx" "${small[@]}" --out onnx.csv >out.txt 2>err.txt
rc=$?
[ $rc -eq 0 ] || { fail "squeezenet at 'disabled': exit $rc"; sed 's/^/  | /' err.txt | head -5; }
grep -q 'squeezenet1_1.onnx' onnx.csv || fail "onnx.csv lacks the model's id"
cat out.txt

# a session kept for "keep": the runner answers from it while the file's identity (inode, size,
# modification time) is unchanged, even with its bytes overwritten in place, and loads afresh
# otherwise; a request without "keep" uses it once more and releases it
"$bin" space nb201 '|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|' \
  --onnx kept.onnx --weights random >/dev/null 2>err.txt || fail "space --onnx: $(head -1 err.txt)"
cp -p kept.onnx kept.copy
k=$PWD/kept.onnx
overwrite() { dd if=/dev/zero of=kept.onnx bs=1 count=4096 seek=64 conv=notrunc status=none; }
rm -f runner.in; mkfifo runner.in
timeout 300 "$runner/run" <runner.in >kept.out 2>err.txt &
exec 7>runner.in
ask() {  # ask ID EXTRA: one request, then wait for its answer
  echo '{"id":'$1',"model":"'"$k"'","warmup":0,"repeats":2'"$2"'}' >&7
  for ((w = 0; w < 1200; ++w)); do grep -q '"id":'$1',' kept.out && return; sleep 0.1; done
}
ask 1 ',"keep":true'
overwrite; touch -r kept.copy kept.onnx
ask 2 ',"keep":true'
ask 3 ''
ask 4 ''
cp kept.copy kept.onnx
ask 5 ',"keep":true'
overwrite
ask 6 ',"keep":"yes"'
ask 7 ''
exec 7>&-
wait
for id in 1 2 3 5; do
  grep -q '"id":'$id',"latency_ms"' kept.out || fail "kept session: request $id not answered with latencies: $(cat kept.out)"
done
grep -q '"id":4,"error"' kept.out || fail "a released session's overwritten file was not loaded afresh: $(cat kept.out)"
grep -q '"id":6,"error":"\\"keep\\" must be true or false"' kept.out || fail "a malformed keep was taken: $(cat kept.out)"
grep -q '"id":7,"error"' kept.out || fail "a kept session was used for a changed file: $(cat kept.out)"

# the store as a data set: the NB201 ids build their graphs
"$bin" train --data nb201.csv --target latency_ms --preset additive --train 2 --val 0 --out m.dnnc >out.txt 2>err.txt
grep -q '3 rows (3 distinct graphs) from nb201.csv' err.txt || fail "train --data nb201.csv: '$(grep -m1 rows err.txt)'"
finish measure_ort
