#!/usr/bin/env bash
# Reproduce the estimator-accuracy tables: presets on the six NB201 devices, 100 training + 100
# validation networks, the same splits for every preset, several seeds.
#
#   bench/reproduce.sh [--out FILE.md] [any dnncost_reproduce option, e.g.
#                       --presets additive --devices pixel3,gold_6240 --seeds 3 --ensemble 5]
#
# The committed tables came from these options (the per-fit lines are kept beside each as a .log):
#   bench/results/accuracy_nb201.md         --presets additive,hifisage --seeds 10 --test 2000 --threads 2 --precision auto
#   bench/results/accuracy_nb201_brpnas.md  --presets brpnas --seeds 10 --test 2000 --threads 2 --precision bf16
#
# Environment: BUILD_DIR (default build/train), JOBS (default 2). Without --out the table goes to
# bench/results/reproduce.md, so a run never overwrites a committed table by accident.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build/train}"
jobs="${JOBS:-2}"
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DDNNCOST_BUILD_TESTS=OFF -DDNNCOST_BUILD_EXAMPLES=OFF \
        -DDNNCOST_BUILD_BENCH=ON >/dev/null
fi
cmake --build "$build" -j"$jobs" --target dnncost_reproduce >&2
args=("$@")
has_out=0
for a in "${args[@]}"; do [[ "$a" == "--out" ]] && has_out=1; done
[[ $has_out == 1 ]] || args+=(--out "$root/bench/results/reproduce.md")
mkdir -p "$root/bench/results"
exec "$build/bench/dnncost_reproduce" --data "$root/data/nb201/latency_ms.csv" "${args[@]}"
