#!/usr/bin/env bash
# A device model for a runtime level that has none yet, built on this machine and judged on
# networks it was not fitted to, measured here twice in the same hour. Run on an idle machine.
#   new_level.sh LEVEL OUT_DIR RULES [BUDGET_MINUTES] [SEED]
# RULES is a rule file, or `write`: the rules written by `device check --write-rules` from none
# (bench/kernel_check/write_rules.sh, into OUT_DIR/rules; about twenty seconds of profiling).
# Steps: (1) whole networks: 10 per space (seed 7) for the sample-boundary fit, 15 per space
# (seed 4242) and data/onnx for judging; (2) `device build` with RULES and in-context samples
# within BUDGET minutes; (3) its sample boundary fitted to the first networks and the build's own
# profiled networks; (4) both models
# judged by evaluate.py; (5) the judged networks measured again and both models judged on them, with
# the floor (the same networks measured twice) in floor.txt. Everything lands in OUT_DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
level=$1 out=$2 rules=$3
budget=${4:-15} seed=${5:-1}
networks=40  # whole networks the build profiles
cli=${DNNCOST:-build/release/dnncost}
runner="$PWD/runners/onnxruntime/run --optimization $level --threads 1"
device=ort-cpu-$level-1t
# every figure is measured in this run: the stores of an earlier run in OUT_DIR would be resumed
if [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
  echo "$(basename "$0"): $out is not empty; its stores would be taken as this run's measurements: give a new directory" >&2
  exit 2
fi
mkdir -p "$out/networks" "$out/networks_remeasured"
stamp() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

if [ "$rules" = write ]; then
  stamp "rules: written by device check from none"
  printf 'dnncost-fusion-rules 1\ndevice %s\n' "$device" > "$out/no.rules"
  any_model=$(ls data/devices/*.dnnc | head -1)  # device check reads only the rules it is given
  bash bench/kernel_check/write_rules.sh "$level" "$out/no.rules" "$any_model" "$out/rules"
  rules=$out/rules/written.rules
fi

source bench/device_model/heldout.sh

stamp "networks: 10 + 15 per space, data/onnx"
for space in nb201 fbnet ofa vit kws; do
  "$cli" measure --runner "$runner" --device $device --space $space --sample 10 --seed 7 \
    --out "$out/networks/train_$space.csv" > /dev/null
done
measure_heldout "$out/networks"

stamp "device build: rules $rules, in context, $budget minutes, seed $seed"
"$cli" device build --runner "$runner" --device $device --rules "$rules" --in-context on --budget "$budget" \
  --networks "$networks" --seed "$seed" --out "$out/built.dnnc" --json > "$out/build.json"

# a build the harness judged disturbed is to be built again, not judged
python3 -c 'import json, sys; [print("new_level.sh: warning: device build:", w, file=sys.stderr) for w in json.load(open(sys.argv[1]))["warnings"]]' "$out/build.json"

stamp "sample boundary"
# fitted to every whole network measured here: the small space networks and the build's own
# profiled networks of real sizes (its store names them, and the names build them again), so
# that rates that suit small networks alone cannot take time off large ones
"$cli" device residual --model "$out/built.dnnc" --no-residual --data "$out"/networks/train_*.csv \
  --data "$out/built.dnnc.work/networks.csv" --out "$out/built.b.dnnc" --json > "$out/boundary.json"

stamp "judging"
python3 bench/device_model/evaluate.py --cli "$cli" --out "$out/evaluation.json" \
  --stores "$out"/networks/heldout_*.csv "$out/networks/onnx.csv" -- \
  "$out/built.dnnc=kernel sum" "$out/built.b.dnnc=boundary" | tee "$out/evaluation.md"

stamp "the judged networks again"
measure_heldout "$out/networks_remeasured"
python3 bench/device_model/evaluate.py --cli "$cli" --out "$out/evaluation_remeasured.json" \
  --stores "$out"/networks_remeasured/heldout_*.csv "$out/networks_remeasured/onnx.csv" -- \
  "$out/built.dnnc=kernel sum" "$out/built.b.dnnc=boundary" | tee "$out/evaluation_remeasured.md"
python3 bench/device_model/floor.py "$out/networks" "$out/networks_remeasured" | tee "$out/floor.txt"
stamp "done"
