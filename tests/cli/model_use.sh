#!/usr/bin/env bash
# A model file records what `dnncost train` learned it from (target column, search space, data);
# `eval` and `predict` say so when a model is used otherwise, and still run.
# usage: model_use.sh DNNCOST_BINARY DATA_DIR WORK_DIR
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"

head -n 61 "$data/nb201/latency_ms.csv" > small.csv
arch="$(sed -n 70p "$data/nb201/latency_ms.csv" | cut -d, -f1)"
onnx="$(ls "$data"/onnx/*.onnx | head -1)"
"$bin" train --data small.csv --target pixel3 --preset additive --train 30 --val 10 --seed 2 --out m.dnnc > /dev/null 2> train.err \
  || { fail "training"; tail -3 train.err; }

"$bin" eval --model m.dnnc --data small.csv --target pixel3 > same.out 2> same.err || fail "eval, same target"
grep -q "trained on" same.err && fail "eval on the training target warns: $(cat same.err)"
"$bin" eval --model m.dnnc --data small.csv --target gold_6240 --json > other.json 2> other.err || fail "eval, other target"
grep -q "m.dnnc was trained on column 'pixel3'; comparing its predictions with 'gold_6240'" other.err \
  || fail "eval against another column does not say so: $(cat other.err)"
grep -q '"model_target": "pixel3"' other.json || fail "eval --json lacks model_target"
grep -q '"target": "gold_6240"' other.json || fail "eval --json lacks target"

"$bin" predict --model m.dnnc --space nb201 "$arch" > nb.out 2> nb.err || fail "predict nb201"
grep -q "warning" nb.err && fail "predict on the training space warns: $(cat nb.err)"
"$bin" predict --model m.dnnc "$onnx" > onnx.out 2> onnx.err || fail "predict onnx"
grep -q "m.dnnc was trained on nb201 graphs; these inputs are onnx" onnx.err || fail "predict on ONNX files does not warn: $(cat onnx.err)"
[ "$(wc -l < onnx.out)" -eq 1 ] || fail "predict onnx: expected one line, got: $(cat onnx.out)"

finish model_use
