#!/usr/bin/env bash
# A small table built through the real ONNX Runtime runner: SqueezeNet's operators at the
# network's own channel counts only (grid proportional:1), few repeats; then the network priced.
# Skipped (exit 77) only when Node.js is not installed.
# usage: table_ort.sh DNNCOST_BINARY DATA_DIR WORK_DIR
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
model=$data/onnx/squeezenet1_1.onnx
timeout 600 "$bin" table build --network "$model" --runner "$runner/run --optimization all --threads 1" \
  --grid proportional:1 --warmup 1 --repeats 3 --out t.csv >out.txt 2>err.txt
rc=$?
[ $rc -eq 0 ] || { fail "build: exit $rc"; sed 's/^/  | /' err.txt | head -5; }
grep -q 'failed 0' out.txt || fail "build: '$(head -1 out.txt)'"
grep -q '^# device: .*onnxruntime' t.csv || fail "the table lacks the runner's device line"
# an operator the runtime fuses into its producer (a Relu after a Conv) costs about what the sink
# alone costs, so its entry may be 0 after the subtraction; a negative or non-numeric one is a bug
awk -F, '!/^#/ && NR > 2 && !($8 >= 0) { bad = 1 } END { exit bad }' t.csv || fail "a negative latency"
awk -F, '!/^#/ && NR > 2 && $8 > 0 { n++ } END { exit !(n > 0) }' t.csv || fail "no positive latency at all"
"$bin" table price --table t.csv --network "$model" --fallback roofline --peak-gflops 100 --bandwidth-gbs 10 \
  >out.txt 2>err.txt || fail "price: exit $?"
grep -q 'ms (sum over' out.txt || fail "price: '$(cat out.txt)'"
cat out.txt
finish table_ort
