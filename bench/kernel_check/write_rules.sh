#!/usr/bin/env bash
# The rules of a runtime level written by `device check --write-rules`, starting from a rule file
# (the prober's discovered rules, say), then checked on networks they were not written from.
#   write_rules.sh LEVEL START_RULES MODEL OUT_DIR
# Rounds: data/onnx, then three networks of each space (seed 11), each round starting from the
# last one's file; then every round's file is checked on data/onnx and three other networks of
# each space (seed 7). MODEL is any device model (only its rules would be read; --rules wins).
set -euo pipefail
cd "$(dirname "$0")/../.."
level=$1 start=$2 model=$3 out=$4
cli=${DNNCOST:-build/release/dnncost}
runner="$PWD/runners/onnxruntime/run --optimization $level --threads 1"
mkdir -p "$out"
stamp() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
check() {  # RULES OUT.json NETWORKS...
  local rules=$1 json=$2
  shift 2
  "$cli" device check --model "$model" --rules "$rules" --runner "$runner" --warmup 1 --repeats 2 --json "$@" \
    > "$json"
}

cp "$start" "$out/round0.rules"
round=0
for what in onnx nb201 fbnet ofa vit kws; do
  next=$((round + 1))
  stamp "round $next: $what"
  if [ "$what" = onnx ]; then set -- data/onnx/*.onnx; else set -- --space "$what" --sample 3 --seed 11; fi
  "$cli" device check --model "$model" --rules "$out/round$round.rules" --runner "$runner" --warmup 1 --repeats 2 \
    --write-rules "$out/round$next.rules" "$@" > "$out/round${next}_$what.txt"
  round=$next
done
cp "$out/round$round.rules" "$out/written.rules"

stamp "checking the first and the last rules on other networks"
for rules in round0 written; do
  check "$out/$rules.rules" "$out/check_${rules}_onnx.json" data/onnx/*.onnx
  for space in nb201 fbnet ofa vit kws; do
    check "$out/$rules.rules" "$out/check_${rules}_$space.json" --space $space --sample 3 --seed 7
  done
done
python3 - "$out" <<'PY' | tee "$out/agreement.md"
import json, os, sys
out = sys.argv[1]
print("| networks | starting rules | rules written |")
print("|---|---|---|")
for what in ["onnx", "nb201", "fbnet", "ofa", "vit", "kws"]:
    a = [json.load(open(os.path.join(out, f"check_{r}_{what}.json")))["agreement"] for r in ("round0", "written")]
    print(f"| {what} | {a[0]:.3f} | {a[1]:.3f} |")
PY
