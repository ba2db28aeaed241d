#!/usr/bin/env bash
# Whole networks measured on this machine for the device models: 40 networks of each search space
# (seed 7) for training the graph-level residual, 30 of each (seed 4242, the noise check's) and the
# five networks of data/onnx held out for judging. Default harness settings. Run on an idle
# machine: about 15 minutes per optimisation level.
#   bench/device_model/measure_networks.sh LEVEL [OUT_DIR]   (LEVEL: all | disabled)
set -euo pipefail
cd "$(dirname "$0")/../.."
level=$1 out=${2:-bench/results/device_model/networks}
cli=build/release/dnncost
runner="$PWD/runners/onnxruntime/run --optimization $level --threads 1"
device=ort-cpu-$level-1t
mkdir -p "$out/$level"
for space in nb201 fbnet ofa vit kws; do
  "$cli" measure --runner "$runner" --device $device --space $space --sample 40 --seed 7 \
    --out "$out/$level/train_$space.csv" > /dev/null
  "$cli" measure --runner "$runner" --device $device --space $space --sample 30 --seed 4242 \
    --out "$out/$level/heldout_$space.csv" > /dev/null
done
"$cli" measure --runner "$runner" --device $device --out "$out/$level/onnx.csv" data/onnx/*.onnx > /dev/null
