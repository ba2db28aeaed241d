#!/usr/bin/env bash
# The main demo, end to end: inspect the bundled ONNX models and an NB201 architecture.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "$(nproc)" --target dnncost_cli >/dev/null
bin=build/release/dnncost
for m in data/onnx/*.onnx; do
  echo "== $m"
  "$bin" inspect "$m" | sed -n 1,12p   # sed reads to the end: no SIGPIPE under pipefail
done
arch='|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|'
echo "== NAS-Bench-201 $arch"
"$bin" nb201 "$arch" | sed -n 1,12p   # sed reads to the end: no SIGPIPE under pipefail
