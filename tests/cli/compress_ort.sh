#!/usr/bin/env bash
# Pruned MobileNetV2 networks measured through the real ONNX Runtime runner (runners/onnxruntime):
# a two-generation `dnncost compress` of 2 candidates each, each exported with weights and run at
# optimisation "all". Skipped (exit 77) only when Node.js is not installed.
# usage: compress_ort.sh DNNCOST_BINARY DATA_DIR WORK_DIR
runner="$(cd "$(dirname "$0")/../../runners/onnxruntime" && pwd)"
source "$(dirname "$0")/common.sh"
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node (Node.js) is not installed; scripts/deps.sh installs it"
  exit 77
fi
if [ ! -d "$runner/node_modules/onnxruntime-node" ]; then
  echo "FAIL: $runner/node_modules is missing: run 'npm ci --ignore-scripts' there (scripts/deps.sh does)"
  exit 1
fi
export TMPDIR=$work
timeout 900 "$bin" compress --network "$data/onnx/mobilenet_v2.onnx" --runner "$runner/run --optimization all --threads 1" \
  --gens 1 --pop 2 --handover 2 --rounds 1 --warmup 1 --repeats 2 --timeout 300 --seed 2 --out out >out.txt 2>err.txt
rc=$?
[ $rc -eq 0 ] || { fail "exit $rc"; sed 's/^/  | /' err.txt | tail -5; }
[ "$(awk -F, 'NR > 1 && $6 == "ok"' out/results.csv | wc -l)" -ge 3 ] || fail "fewer than 3 pruned networks measured"
grep -q '"runtime":"onnxruntime"' out/results.device.json || fail "the sidecar does not name ONNX Runtime"
awk -F, 'NR > 1 && !($3 > 0) { bad = 1 } END { exit bad }' out/front.csv || fail "a front member without a measured latency"
cat out.txt
finish compress_ort
