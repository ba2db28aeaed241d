#!/usr/bin/env bash
# `dnncost device check` of the committed device models against ONNX Runtime's own kernels:
# the five data/onnx networks and a few networks of each space, at "all" and "disabled".
#   run.sh OUT_DIR [RULES_FILE [LEVEL]]   (RULES_FILE: check those rules at LEVEL, default "all",
#                                          instead of the model's, e.g. data/devices/rules/*.rules)
# Needs a built dnncost (DNNCOST, default build/release/dnncost) and the bundled runner's packages.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out=$1 rules=${2:-} rules_level=${3:-all}
bin=${DNNCOST:-$root/build/release/dnncost}
runner=$root/runners/onnxruntime/run
mkdir -p "$out"
levels=(all disabled)
[ -n "$rules" ] && levels=("$rules_level")
for level in "${levels[@]}"; do
  args=(device check --model "$root/data/devices/ort-cpu-$level-1t.dnnc" --runner "$runner --optimization $level --threads 1" --json)
  [ -n "$rules" ] && args+=(--rules "$rules")
  "$bin" "${args[@]}" "$root"/data/onnx/*.onnx > "$out/onnx_$level.json" || true
  for sp in nb201:5 fbnet:5 ofa:3 vit:3 kws:5; do
    "$bin" "${args[@]}" --space "${sp%%:*}" --sample "${sp##*:}" --seed 7 > "$out/${sp%%:*}_$level.json" || true
  done
done
