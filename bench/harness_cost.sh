#!/usr/bin/env bash
# The measuring harness's cost per network through the bundled ONNX Runtime runner (1 thread,
# optimisation "all"), with the default settings of `dnncost measure`: wall time per network
# against the sum of the timed runs the runner reported (bench/bench_harness.cpp). Run it on a
# quiet machine; the instant-runner part (the harness's own cost) runs first.
#
# usage: bench/harness_cost.sh [NETWORKS=20] [CPU]
#   CPU: pin the runner to this CPU (its command is run under `taskset -c CPU`).
# Writes bench/results/harness_cost.json (Google Benchmark's JSON).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20} cpu=${2:-}
bash scripts/deps.sh
# its own build tree: the test build (build/release) stays without benchmarks
cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DDNNCOST_BUILD_BENCH=ON -DDNNCOST_BUILD_TESTS=OFF >/dev/null
cmake --build build/bench -j "$(nproc)" --target bench_harness >/dev/null
runner="$PWD/runners/onnxruntime/run --optimization all --threads 1"
[ -n "$cpu" ] && runner="taskset -c $cpu $runner"
mkdir -p bench/results
build/bench/bench/bench_harness --runner "$runner" --networks "$n" --store-dir build/bench \
  --benchmark_out=bench/results/harness_cost.json --benchmark_out_format=json
