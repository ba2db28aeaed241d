#!/usr/bin/env bash
# The experiments behind docs/measure.md "Why measurements varied". Run on an idle machine (no
# compiler, no other measurement): about 4 minutes, plus a build of the CLI if missing.
#   bench/measure_noise/run.sh [OUT_DIR]     (default bench/results/measure_noise)
# 1. sessions.js: six FBNet networks and one NB201 network, 5 rounds each in 8 fresh processes per
#    configuration of the session (options interleaved, so that slow drift hits each alike).
# 2. memory_probe.js: an FBNet and an NB201 session beside memory-streaming and register-only loops.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-bench/results/measure_noise}
cli=build/release/dnncost
[ -x "$cli" ] || { cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build/release --target dnncost_cli -j "$(nproc)"; }
bash scripts/deps.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out/sessions"
i=0
while read -r a; do
  "$cli" space fbnet "$a" --onnx "$tmp/fb$i.onnx" --weights random --weight-seed 1 >/dev/null; i=$((i + 1))
done < <("$cli" space fbnet --sample 6 --seed 4242)
"$cli" space nb201 "$("$cli" space nb201 --sample 1 --seed 4242)" --onnx "$tmp/nb0.onnx" --weights random --weight-seed 1 >/dev/null
"$cli" space nb201 "$("$cli" space nb201 --sample 2 --seed 4242 | tail -1)" --onnx "$tmp/nb1.onnx" --weights random --weight-seed 1 >/dev/null
models=$(printf '"%s",' "$tmp"/fb{0,1,2,3,4,5}.onnx "$tmp/nb0.onnx"); models="[${models%,}]"
js=bench/measure_noise/sessions.js
for p in $(seq 1 8); do
  MALLOC_MMAP_THRESHOLD_=65536 node $js "{\"models\":$models}" > "$out/sessions/c0_$p.jsonl"
  node $js "{\"models\":$models}" > "$out/sessions/c1_$p.jsonl"
  MALLOC_MMAP_THRESHOLD_=65536 node $js "{\"models\":$models,\"spin\":false}" > "$out/sessions/c2_$p.jsonl"
  MALLOC_MMAP_THRESHOLD_=65536 node $js "{\"models\":$models,\"arena\":false,\"pattern\":false}" > "$out/sessions/c3_$p.jsonl"
  MALLOC_MMAP_THRESHOLD_=65536 node $js "{\"models\":$models,\"prepack\":false}" > "$out/sessions/c4_$p.jsonl"
  MALLOC_MMAP_THRESHOLD_=65536 node $js "{\"models\":$models,\"daz\":true}" > "$out/sessions/c5_$p.jsonl"
  MALLOC_MMAP_THRESHOLD_=65536 node $js "{\"models\":$models,\"keep\":true}" > "$out/sessions/c6_$p.jsonl"
  MALLOC_MMAP_THRESHOLD_=65536 taskset -c 1 node $js "{\"models\":$models}" > "$out/sessions/c7_$p.jsonl"
done
node bench/measure_noise/memory_probe.js "$tmp/fb2.onnx" "$tmp/nb1.onnx" 200 > "$out/memory_probe.jsonl"
python3 bench/measure_noise/sessions_table.py "$out/sessions"
python3 bench/measure_noise/memory_table.py "$out/memory_probe.jsonl"
