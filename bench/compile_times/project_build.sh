#!/usr/bin/env bash
# The project's own build from scratch, as scripts/test.sh and scripts/demo.sh configure it (-O2):
# the CLI target alone (the compiled library, then one source per command) with -j JOBS, then
# everything else; each compile's time and peak memory through launcher.sh. Run it on a quiet
# machine: nothing else compiling or measuring.
#
# usage: bench/compile_times/project_build.sh [JOBS=2] [--cli-only]
# Writes bench/results/compile_times_build.md and its per-compile log compile_times_build.tsv.
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs=${1:-2}
build=build/compile_times
out=bench/results/compile_times_build
rm -rf "$build" && mkdir -p bench/results
export DNNCOST_COMPILE_LOG="$PWD/$build.tsv"
rm -f "$DNNCOST_COMPILE_LOG"
source scripts/generator.sh
generator_for "$build"
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" -DDNNCOST_BUILD_BENCH=OFF \
      "-DCMAKE_CXX_COMPILER_LAUNCHER=$PWD/bench/compile_times/launcher.sh" >/dev/null
start=$(date +%s.%N)
cmake --build "$build" -j "$jobs" --target dnncost_cli >/dev/null
cli=$(echo "$(date +%s.%N) - $start" | bc)
all=""
if [ "${2:-}" != "--cli-only" ]; then
  start=$(date +%s.%N)
  cmake --build "$build" -j "$jobs" >/dev/null
  all=$(echo "$(date +%s.%N) - $start" | bc)
fi
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
compiler=$(c++ --version | head -1)
tool=$([ ${#generator[@]} -gt 0 ] && echo Ninja || echo make)
{
  echo "# The project's build from scratch"
  echo
  echo "$cpu, $(nproc) cores, $compiler, -O2, $tool \`-j $jobs\` (\`bench/compile_times/project_build.sh\`, $(date +%F))."
  echo
  printf '| what | wall seconds |\n|---|---|\n'
  printf '| the CLI (\`dnncost_cli\`: the compiled library, then one source per command) | %.0f |\n' "$cli"
  [ -n "$all" ] && printf '| then everything else (examples, tests) | %.0f |\n' "$all"
  echo
  echo "## Every compile, slowest first (seconds, peak compiler memory)"
  echo
  printf '| object | seconds | MiB |\n|---|---|---|\n'
  sort -t$'\t' -k1 -g -r "$DNNCOST_COMPILE_LOG" | while IFS=$'\t' read -r s m o; do
    printf '| `%s` | %s | %s |\n' "${o#*CMakeFiles/}" "$s" "$m"
  done
} >"$out.md.tmp"
mv "$out.md.tmp" "$out.md"
cp "$DNNCOST_COMPILE_LOG" "$out.tsv"
echo "CLI from scratch: ${cli} s; the rest: ${all:-not built} s; peak memory $(sort -t$'\t' -k2 -n -r "$out.tsv" | head -1 | cut -f2,3) MiB" >&2
