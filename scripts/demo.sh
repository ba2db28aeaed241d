#!/usr/bin/env bash
# The main demo, end to end: inspect the bundled ONNX models and an NB201 architecture, price them
# with the committed device models, learn a device's latency from 100 measurements, measure
# networks with ONNX Runtime on this CPU and learn from them, map and co-search, and compress
# MobileNetV2 with measurements handed over to an estimator.
set -euo pipefail
cd "$(dirname "$0")/.."
# "== [m:ss] step": the time since the demo started, so that a slow step shows where it is.
step() { printf '== [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
step "install missing packages (scripts/deps.sh)"
bash scripts/deps.sh
step "build the command-line tool (the compiled library, then one source per command)"
source scripts/generator.sh
generator_for build/release
cmake -S . -B build/release "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" >/dev/null
cmake --build build/release -j "$(nproc)" --target dnncost_cli |
  { grep --line-buffered -E '^\[ *[0-9]+(%|/[0-9]+)\]' || true; } | sed -u 's/^/   /'   # make's or ninja's progress
bin=build/release/dnncost
for m in data/onnx/*.onnx; do
  step "$m"
  "$bin" inspect "$m" | sed -n 1,12p   # sed reads to the end: no SIGPIPE under pipefail
done
arch='|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|'
step "NAS-Bench-201 $arch"
"$bin" nb201 "$arch" | sed -n 1,12p   # sed reads to the end: no SIGPIPE under pipefail

# Price real networks with the committed device models of this kind of machine (ONNX Runtime
# "all" and "disabled", 1 thread): a prediction per network, then ResNet-50's costliest kernels.
for level in all disabled; do
  step "predict with data/devices/ort-cpu-$level-1t.dnnc (ms, ONNX Runtime \"$level\", 1 thread)"
  "$bin" predict --model "data/devices/ort-cpu-$level-1t.dnnc" data/onnx/*.onnx 2>/dev/null
done
step "ResNet-50's five costliest kernels under \"all\" (predict --per-kernel)"
"$bin" predict --model data/devices/ort-cpu-all-1t.dnnc --per-kernel data/onnx/resnet50.onnx 2>/dev/null |
  awk -F'\t' 'NF == 4' | sort -t$'\t' -k3 -g -r | sed -n 1,5p

# Learn a device from 100 measurements (+100 for validation), test on 2,000 other networks,
# and compare with the additive (per-operator ridge) baseline on the same split.
device=gold_6240
out=build/demo
mkdir -p "$out"
for preset in additive hifisage; do
  step "train $preset on 100 measured NB201 networks of $device (seed 1)"
  "$bin" train --data data/nb201/latency_ms.csv --space nb201 --target "$device" --train 100 --val 100 \
    --test 2000 --seed 1 --preset "$preset" --threads "$(nproc)" --out "$out/$preset.dnnc" \
    --json >"$out/$preset.json" 2>"$out/$preset.log"
  # which candidate the model selection kept (the trained GNN or its additive path), and why
  grep -E '^best epoch' "$out/$preset.log" | sed 's/^/selection: /' || true
  grep -E '^dnncost: trained in' "$out/$preset.log" | sed 's/^dnncost: //' || true  # GEMM precision (GNN presets)
done
step "predict with the saved HiFi-SAGE model (ms on $device)"
"$bin" predict --model "$out/hifisage.dnnc" --space nb201 "$arch" \
  '|nor_conv_1x1~0|+|skip_connect~0|none~1|+|avg_pool_3x3~0|nor_conv_3x3~1|nor_conv_1x1~2|' \
  '|none~0|+|skip_connect~0|none~1|+|skip_connect~0|none~1|nor_conv_3x3~2|'

# The product's own loop on a real device: measure 60 NB201 networks on this CPU with ONNX
# Runtime (optimisation "all", 1 thread; resumable: a second run measures nothing), train the
# additive and HiFi-SAGE estimators on 45 of them and test on the other 15. Three rounds per
# network (at most five when unstable) instead of five (at most ten): under a minute instead of
# nearly three, at some cost in repeatability (docs/measure.md).
step "measure 60 NB201 networks with ONNX Runtime on this CPU (about a minute)"
"$bin" measure --runner "runners/onnxruntime/run --optimization all --threads 1" --device onnxruntime-cpu-all-1t \
  --space nb201 --sample 60 --seed 1 --rounds 3 --max-rounds 5 --out "$out/ort_cpu.csv" ||
  [ $? -eq 3 ]  # 3: some networks failed
for preset in additive hifisage; do
  step "train $preset on 45 of them, test on the other 15"
  "$bin" train --data "$out/ort_cpu.csv" --target latency_ms --train 45 --val 0 --test 0 --seed 1 --preset "$preset" \
    --threads "$(nproc)" --out "$out/ort_$preset.dnnc" 2>"$out/ort_$preset.log"
done
# Mapping: a ViG subnet's blocks onto the GPU and DLA of the Xavier-like platform (front, best P,
# exact front for comparison), then a short architecture x mapping co-search (accuracy proxy).
step "map a ViG subnet onto GPU + DLA (data/mapping/vig_small_xavier_dvfs.csv, MaxN)"
"$bin" map --blocks data/mapping/vig_small_xavier_dvfs.csv --exact | awk '!/^  [0-9]/ || n++ < 5'  # 5 front rows
step "co-search on the Xavier-like platform (OOE 40 x 10, IOE 200 x 10)"
"$bin" cosearch --ooe-pop 40 --ooe-gens 10 --threads "$(nproc)" --top 5
# Compression: a short channel-pruning search of MobileNetV2 measured with ONNX Runtime on this CPU
# for 2 generations, then guided by a HiFi-SAGE estimator trained on those measurements; the
# final front is re-measured (prints the front and the measurements saved; resumable).
step "compress MobileNetV2: 3 generations of 8, handover after 2"
"$bin" compress --network data/onnx/mobilenet_v2.onnx --runner "runners/onnxruntime/run --optimization all --threads 1" \
  --gens 2 --pop 8 --handover 2 --remeasure-budget 3 --epochs 40 --seed 1 --out "$out/compress_mobilenet_v2"
step "done"
