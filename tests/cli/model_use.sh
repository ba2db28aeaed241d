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

# a results store mixes spaces: the model records every space it learnt from, and warns only
# for inputs of another one
store="$data/measured/ort_cpu_all_1t.csv"
{ head -n 1 "$store"; grep ',|' "$store" | head -n 20; grep ',fbnet:' "$store" | head -n 20; } > mixed.csv
fbnet_arch="$(grep ',fbnet:' "$store" | sed -n 30p | cut -d, -f2 | cut -d: -f2)"
"$bin" train --data mixed.csv --target latency_ms --preset additive --train 28 --val 10 --seed 2 --out mixed.dnnc \
  > /dev/null 2> mixed_train.err || { fail "training on a mixed store"; tail -3 mixed_train.err; }
"$bin" predict --model mixed.dnnc --space fbnet "$fbnet_arch" > mixed_fb.out 2> mixed_fb.err || fail "predict fbnet"
grep -q "warning" mixed_fb.err && fail "predict on one of the training spaces warns: $(cat mixed_fb.err)"
"$bin" predict --model mixed.dnnc "$onnx" > /dev/null 2> mixed_onnx.err || fail "predict onnx with the mixed model"
grep -q "mixed.dnnc was trained on fbnet,nb201 graphs; these inputs are onnx" mixed_onnx.err \
  || fail "predict on ONNX files does not name the training spaces: $(cat mixed_onnx.err)"

finish model_use
