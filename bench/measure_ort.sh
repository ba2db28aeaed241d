#!/usr/bin/env bash
# The measuring figures of the README, on this machine, through the bundled ONNX Runtime runner
# (1 thread). Run it on a quiet machine: other processes are exactly the noise it measures.
#
#  1. Noise and cost of the default protocol: N random NB201 networks (seed S) measured with
#     the defaults at optimisation "all"; then every one of them re-measured from scratch by
#     fresh runner processes (--noise-check N): agreement within ±5 % and ±10 %, time per network.
#  2. What graph optimisation buys: the same networks and every ONNX model of data/onnx measured
#     at "disabled" and at "all"; per network the speed-up latency(disabled) / latency(all).
#
# usage: bench/measure_ort.sh [N=100] [SEED=1]
# Writes bench/results/measure_ort/ (stores, sidecars, JSON summaries) and bench/results/measure_ort.md.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100} seed=${2:-1}
bash scripts/deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "$(nproc)" --target dnncost_cli >/dev/null
bin=build/release/dnncost
out=bench/results/measure_ort
mkdir -p "$out"
runner() { echo "runners/onnxruntime/run --optimization $1 --threads 1"; }

# 1. the defaults, and a re-measurement of every network from scratch (fresh stores: --force)
"$bin" measure --runner "$(runner all)" --device ort-cpu-all-1t --space nb201 --sample "$n" --seed "$seed" \
  --out "$out/nb201_all.csv" --force --noise-check "$n" --json > "$out/nb201_all.json"
# 2. the other optimisation level, and the ONNX models at both
"$bin" measure --runner "$(runner disabled)" --device ort-cpu-disabled-1t --space nb201 --sample "$n" --seed "$seed" \
  --out "$out/nb201_disabled.csv" --force --json > "$out/nb201_disabled.json"
for level in disabled all; do
  "$bin" measure --runner "$(runner $level)" --device "ort-cpu-$level-1t" data/onnx/*.onnx \
    --out "$out/onnx_$level.csv" --force --json > "$out/onnx_$level.json"
done

# one JSON number from a summary: json_field FILE KEY (first occurrence; the summaries are flat
# apart from the nested noise_check object, whose keys are distinct)
json_field() { grep -o "\"$2\": [^,}]*" "$1" | head -1 | sed 's/.*: //'; }
# ok rows: key -> latency_ms (store columns: key,id,latency_ms,spread,rounds,status,...)
speedups() {  # speedups DISABLED.csv ALL.csv -> "id ratio" lines
  awk -F, 'FNR == 1 { next } NR == FNR { if ($6 == "ok") d[$1] = $3; next }
           $6 == "ok" && ($1 in d) { print $2, d[$1] / $3 }' "$1" "$2"
}
summary() {  # median and geometric mean of the ratios on stdin
  sort -g -k2 | awk '{ r[NR] = $2; s += log($2) } END {
    if (NR == 0) { print "n/a"; exit }
    m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
    printf "median %.2fx, geometric mean %.2fx, range %.2fx-%.2fx (%d networks)", m, exp(s / NR), r[1], r[NR], NR }'
}

cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
ort=$(grep -o '"version":"[^"]*"' "$out/nb201_all.device.json" | head -1 | sed 's/.*:"//; s/"//')
{
  echo "# Measuring with the bundled ONNX Runtime runner"
  echo
  echo "Host: $cpu, $(nproc) logical CPUs; ONNX Runtime $ort (onnxruntime-node, CPU execution provider), 1 thread;"
  echo "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg). Produced by bench/measure_ort.sh $n $seed."
  echo
  echo "## Noise of the default protocol ($n random NB201 networks, optimisation \"all\")"
  echo
  echo "| | value |"
  echo "|---|---|"
  echo "| settings | $(grep -o '"settings": {[^}]*}' "$out/nb201_all.device.json" | sed 's/"settings": //; s/"//g') |"
  echo "| networks measured / failed | $(json_field "$out/nb201_all.json" measured) / $(json_field "$out/nb201_all.json" failed) |"
  echo "| networks given extra rounds | $(json_field "$out/nb201_all.json" remeasured) |"
  echo "| time per network (s) | $(json_field "$out/nb201_all.json" seconds_per_network) |"
  echo "| re-measured from scratch | $(json_field "$out/nb201_all.json" pairs) |"
  echo "| agreement within ±5 % | $(json_field "$out/nb201_all.json" within_5) |"
  echo "| agreement within ±10 % | $(json_field "$out/nb201_all.json" within_10) |"
  echo "| sigma of one measurement (log space) | $(json_field "$out/nb201_all.json" sigma) |"
  echo
  echo "## Speed-up of optimisation \"all\" over \"disabled\" (latency disabled / latency all)"
  echo
  echo "- NB201 ($n networks): $(speedups "$out/nb201_disabled.csv" "$out/nb201_all.csv" | summary)"
  echo "- ONNX models of data/onnx:"
  echo
  echo "| model | disabled (ms) | all (ms) | speed-up |"
  echo "|---|---|---|---|"
  awk -F, 'FNR == 1 { next } NR == FNR { if ($6 == "ok") d[$1] = $3; next }
           $6 == "ok" && ($1 in d) { n = split($2, p, "/"); printf "| %s | %.3f | %.3f | %.2fx |\n", p[n], d[$1], $3, d[$1] / $3 }' \
    "$out/onnx_disabled.csv" "$out/onnx_all.csv"
  echo
  echo "Weights are exported as graph inputs (fed with random data) until io::export_onnx writes"
  echo "them as initializers; constant folding and fusions that need constant weights cannot apply."
} > bench/results/measure_ort.md
cat bench/results/measure_ort.md
