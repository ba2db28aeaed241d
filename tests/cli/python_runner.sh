#!/usr/bin/env bash
# The Python runner (runners/onnxruntime-python) against a stand-in onnxruntime module
# (tests/measure/fake_onnxruntime): its protocol handling, options, kept sessions and profiles,
# and a `dnncost measure --profile` run through it. Skipped (exit 77) when no Python 3 with numpy is found.
# usage: python_runner.sh DNNCOST_BINARY DATA_DIR WORK_DIR
root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$root/tests/cli/common.sh"
runner="$root/runners/onnxruntime-python/run"
py=
for c in "${PYTHON:-}" /usr/bin/python3 python3; do
  [ -n "$c" ] && "$c" -c 'import numpy' >/dev/null 2>&1 && { py=$c; break; }
done
[ -n "$py" ] || { echo "SKIP: no Python 3 with numpy"; exit 77; }
export PYTHON=$py PYTHONPATH="$root/tests/measure/fake_onnxruntime" FAKE_ORT_LOG="$work/ort.log" TMPDIR=$work
json() {  # json FILE LINE EXPR: evaluate EXPR on the JSON value of line LINE (1-based) of FILE as `a`
  "$py" -c 'import json,sys; a=json.loads(open(sys.argv[1]).read().splitlines()[int(sys.argv[2])-1]); sys.exit(0 if eval(sys.argv[3]) else 1)' "$@"
}
echo model > "$work/a.onnx"
echo model > "$work/broken.onnx"
{
  echo '{"id":1,"model":"'"$work"'/a.onnx","warmup":2,"repeats":3}'
  echo '{"id":2,"model":"'"$work"'/a.onnx","warmup":1,"repeats":4,"profile":true}'
  echo '{"id":3,"model":"'"$work"'/broken.onnx","repeats":2}'
  echo 'not json'
  echo '{"id":4,"model":"'"$work"'/a.onnx","repeats":2,"keep":true}'
  echo '{"id":5,"model":"'"$work"'/a.onnx","repeats":2,"keep":true}'
  echo '{"id":6,"model":"'"$work"'/a.onnx","repeats":"x"}'
  echo '{"id":7,"model":"'"$work"'/missing.onnx","repeats":1}'
  echo '{"id":8,"model":"'"$work"'/a.onnx","repeats":1,"profile":"yes"}'
} | timeout 60 "$runner" --seed 3 --threads 2 >out.jsonl 2>err.txt
rc=$?
[ $rc -eq 0 ] || { fail "runner exit $rc"; sed 's/^/  | /' err.txt | head -5; }
[ "$(wc -l <out.jsonl)" -eq 10 ] || fail "not 10 lines (a device line and 9 answers): $(wc -l <out.jsonl)"
json out.jsonl 1 'a["device"]["version"] == "0.0.0-fake" and a["device"]["optimization"] == "all" and a["device"]["threads"] == 2' ||
  fail "device line: $(head -1 out.jsonl)"
json out.jsonl 2 'a["id"] == 1 and len(a["latency_ms"]) == 3 and all(t > 0 for t in a["latency_ms"]) and "kernels" not in a' ||
  fail "plain answer: $(sed -n 2p out.jsonl)"
json out.jsonl 3 'a["id"] == 2 and len(a["latency_ms"]) == 4 and [k["name"] for k in a["kernels"]] == ["conv_fused", "pool"] and a["kernels"][0]["op"] == "FusedConv" and all(0.3 < k["ms"] < 50 for k in a["kernels"])' ||
  fail "profiled answer: $(sed -n 3p out.jsonl)"
# two of the four timed runs spent 40 ms in "pool": its time is that of the runs that did not
json out.jsonl 3 'a["kernels"][1]["ms"] < 10 and max(a["latency_ms"]) > 40' ||
  fail "profiled answer: not the kernels' fastest runs: $(sed -n 3p out.jsonl)"
json out.jsonl 3 'a["optimized_model"].endswith("/a.optimized.onnx")' && [ -f "$work/a.optimized.onnx" ] ||
  fail "no optimised model beside the model"
json out.jsonl 4 'a["id"] == 3 and "INVALID_PROTOBUF" in a["error"]' || fail "broken model: $(sed -n 4p out.jsonl)"
json out.jsonl 5 'a["id"] is None and a["error"].startswith("malformed request")' || fail "malformed line: $(sed -n 5p out.jsonl)"
json out.jsonl 6 'a["id"] == 4 and len(a["latency_ms"]) == 2' || fail "keep: $(sed -n 6p out.jsonl)"
json out.jsonl 8 'a["id"] == 6 and "repeats" in a["error"]' || fail "bad repeats: $(sed -n 8p out.jsonl)"
json out.jsonl 9 'a["id"] == 7 and "no such model file" in a["error"]' || fail "missing file: $(sed -n 9p out.jsonl)"
json out.jsonl 10 'a["id"] == 8 and "profile" in a["error"]' || fail "bad profile flag: $(sed -n 10p out.jsonl)"
# a primed first session, one per plain request, one profiled, and one for the two kept requests
[ "$(grep -c '^session a.onnx' ort.log)" -eq 4 ] || fail "sessions created: $(grep -c '^session a.onnx' ort.log), expected 4"
[ "$(grep -c 'profiling=True' ort.log)" -eq 1 ] || fail "not one profiled session"
grep -q 'threads=2 ' ort.log || fail "--threads not passed on"
[ "$(grep '^run a.onnx' ort.log | awk '{ print $3 }' | sort -u | wc -l)" -eq 1 ] || fail "the seeded inputs differ between sessions"
ls "$work"/dnncost-profile-* >/dev/null 2>&1 && fail "a profile directory was left behind"

# a kept session is not used once its file changed
rm -f ort.log
{
  echo '{"id":1,"model":"'"$work"'/a.onnx","repeats":1,"keep":true}'
  for ((k = 0; k < 600; ++k)); do [ "$(wc -l <out2.jsonl)" -ge 2 ] && break; sleep 0.1; done
  touch -d '2001-01-01' "$work/a.onnx"
  echo '{"id":2,"model":"'"$work"'/a.onnx","repeats":1,"keep":true}'
} | timeout 60 "$runner" --optimization disabled --seed 4 >out2.jsonl 2>>err.txt
[ "$(grep -c '^session a.onnx' ort.log)" -eq 3 ] || fail "a changed file kept its session"
grep -q 'level=0 ' ort.log || fail "--optimization disabled not passed on"
json out2.jsonl 1 'a["device"]["optimization"] == "disabled"' || fail "device line at disabled"

# bad options and a host without the package
"$runner" --optimization fast </dev/null >/dev/null 2>opt.txt; rc=$?
[ $rc -eq 2 ] && grep -q "unknown optimization level 'fast'" opt.txt || fail "bad --optimization: exit $rc"
"$runner" --threads 0 </dev/null >/dev/null 2>opt.txt; rc=$?
[ $rc -eq 2 ] || fail "--threads 0: exit $rc"
PYTHONPATH="$work/none" "$runner" </dev/null >/dev/null 2>imp.txt; rc=$?
PYTHONPATH="$work/none" "$py" -c 'import onnxruntime' >/dev/null 2>&1 ||
  { [ $rc -eq 3 ] && grep -q "cannot load onnxruntime" imp.txt || fail "without onnxruntime: exit $rc"; }

# the harness measures through it
timeout 300 "$bin" measure --runner "$runner --seed 1" --device fake-ort --space nb201 --sample 2 --seed 5 \
  --rounds 2 --max-rounds 2 --warmup 1 --repeats 3 --out nb201.csv --profile --json >m.json 2>m.txt
rc=$?
[ $rc -eq 0 ] || { fail "dnncost measure: exit $rc"; sed 's/^/  | /' m.txt | head -5; }
grep -q '"measured": 2' m.json || fail "dnncost measure: not 2 measured"
grep -q '"version":"0.0.0-fake"' nb201.device.json || fail "the sidecar lacks the runner's device line"
[ "$(grep -c '"name":"conv_fused","op":"FusedConv"' nb201.kernels.jsonl 2>/dev/null)" -eq 2 ] ||
  fail "dnncost measure --profile: nb201.kernels.jsonl lacks the 2 networks' kernels"
finish python_runner
