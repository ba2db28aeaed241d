#!/usr/bin/env bash
# Do measurements repeat? The noise check of the measuring defaults through the bundled ONNX
# Runtime runner (optimisation "all", 1 thread): 30 networks of each search space (seed 4242) and
# the five data/onnx networks, each measured and then re-measured from scratch by fresh runner
# processes (`measure --noise-check`). Run it on a quiet machine, or with the load whose effect
# is wanted: about 8 minutes.
#
# usage: bench/noise_check.sh OUT_DIR [MEASURE OPTIONS...]
#   e.g. bench/noise_check.sh bench/results/measure_noise/noise_checks/idle
#        bench/noise_check.sh /tmp/fresh --fresh-sessions
# Writes OUT_DIR/{nb201,fbnet,ofa,vit,kws,onnx}.{csv,device.json,json} and prints a Markdown
# table: per set, the share re-measured within ±5 % and ±10 %, the implied sigma, seconds per
# network of the first measurement, and whether the run was flagged disturbed.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bench/noise_check.sh OUT_DIR [MEASURE OPTIONS...]" >&2; exit 2; }
out=$1; shift
bin=build/release/dnncost
[ -x "$bin" ] || { cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null &&
                   cmake --build build/release --target dnncost_cli -j "$(nproc)" >/dev/null; }
bash scripts/deps.sh
mkdir -p "$out"
runner="$PWD/runners/onnxruntime/run --optimization all --threads 1"
for space in nb201 fbnet ofa vit kws; do
  "$bin" measure --runner "$runner" --device ort-cpu-all-1t --space $space --sample 30 --seed 4242 \
    --noise-check 30 --force --out "$out/$space.csv" --json "$@" > "$out/$space.json"
done
"$bin" measure --runner "$runner" --device ort-cpu-all-1t data/onnx/*.onnx --seed 4242 \
  --noise-check 5 --force --out "$out/onnx.csv" --json "$@" > "$out/onnx.json"

python3 - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
print("| set | within ±5 % | within ±10 % | sigma | s per network | disturbed |")
print("|---|---|---|---|---|---|")
for s in ["nb201", "fbnet", "ofa", "vit", "kws", "onnx"]:
    d = json.load(open(f"{out}/{s}.json"))
    n = d["noise_check"]
    print(f"| {s} | {100 * n['within_5']:.0f} % | {100 * n['within_10']:.0f} % | {n['sigma']:.3f} | "
          f"{d['seconds_per_network']:.2f} | {'yes' if d['disturbed'] else 'no'} |")
EOF
