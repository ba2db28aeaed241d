#!/usr/bin/env bash
# A device model built on this machine from profiled networks in context, against the committed
# model of the same level, both judged on networks neither was fitted to, measured here in the same
# hour. Run on an idle machine (nothing else compiling or measuring).
#   rebuild_compare.sh LEVEL OUT_DIR [RULES] [BUDGET_MINUTES] [TRAIN_PER_SPACE] [HELDOUT_PER_SPACE]
# Steps: (1) whole networks: TRAIN_PER_SPACE per space (seed 7) for the sample-boundary fit,
# HELDOUT_PER_SPACE per space (seed 4242) and data/onnx for judging; (2) `device build` with RULES
# (default data/devices/rules/ort-cpu-LEVEL.rules) and in-context samples within BUDGET minutes;
# (3) its boundary fit on the training networks and its own profiled networks; (4) both models calibrated on the same ten shots
# (the committed one's calibration is replaced: it was fitted on another machine); (5) both judged
# by evaluate.py, with the new model's graph-level residual beside them. Everything lands in
# OUT_DIR; evaluation.json is the table.
set -euo pipefail
cd "$(dirname "$0")/../.."
level=$1 out=$2
rules=${3:-data/devices/rules/ort-cpu-$level.rules}
budget=${4:-15} train=${5:-20} heldout=${6:-15}
cli=${DNNCOST:-build/release/dnncost}
runner="$PWD/runners/onnxruntime/run --optimization $level --threads 1"
device=ort-cpu-$level-1t
# every figure is measured in this run: the stores of an earlier run in OUT_DIR would be resumed
if [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
  echo "$(basename "$0"): $out is not empty; its stores would be taken as this run's measurements: give a new directory" >&2
  exit 2
fi
mkdir -p "$out/networks"
stamp() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

stamp "networks: $train + $heldout per space, data/onnx"
for space in nb201 fbnet ofa vit kws; do
  "$cli" measure --runner "$runner" --device $device --space $space --sample "$train" --seed 7 \
    --out "$out/networks/train_$space.csv" > /dev/null
  "$cli" measure --runner "$runner" --device $device --space $space --sample "$heldout" --seed 4242 \
    --out "$out/networks/heldout_$space.csv" > /dev/null
done
"$cli" measure --runner "$runner" --device $device --out "$out/networks/onnx.csv" data/onnx/*.onnx > /dev/null

stamp "device build: rules $rules, in context, $budget minutes"
"$cli" device build --runner "$runner" --device $device --rules "$rules" --in-context on --budget "$budget" \
  --out "$out/built.dnnc" --json > "$out/build.json"

stamp "sample boundary of the new model"
# fitted to the training networks and the build's own profiled networks, as new_level.sh does
"$cli" device residual --model "$out/built.dnnc" --no-residual --data "$out"/networks/train_*.csv \
  --data "$out/built.dnnc.work/networks.csv" --out "$out/built.b.dnnc" --json > "$out/boundary.json"
stamp "sample boundary of the committed model, refitted to this machine's networks"
"$cli" device residual --model "data/devices/$device.dnnc" --no-residual --data "$out"/networks/train_*.csv \
  --data "$out/built.dnnc.work/networks.csv" --out "$out/committed.b.dnnc" --json > "$out/committed_boundary.json"

stamp "calibration: ten shots, measured once"
"$cli" device calibrate --model "$out/built.b.dnnc" --runner "$runner" --out "$out/built.b.cal.dnnc" \
  --json > "$out/calibration.json"
for m in committed committed.b; do
  src=data/devices/$device.dnnc
  [ "$m" = committed.b ] && src=$out/committed.b.dnnc
  "$cli" device calibrate --model "$src" --data "$out/built.b.cal.dnnc.work/shots.csv" \
    --out "$out/$m.cal.dnnc" --json > "$out/${m}_calibration.json"
done

stamp "the graph-level residual over the new model's kernel graph (trained on the same networks)"
"$cli" device residual --model "$out/built.dnnc" --data "$out"/networks/train_*.csv \
  --out "$out/built.r.dnnc" --json > "$out/residual.json"
"$cli" device calibrate --model "$out/built.r.dnnc" --data "$out/built.b.cal.dnnc.work/shots.csv" \
  --out "$out/built.r.cal.dnnc" --json > "$out/residual_calibration.json"

stamp "judging"
python3 bench/device_model/evaluate.py --cli "$cli" --out "$out/evaluation.json" \
  --stores "$out"/networks/heldout_*.csv "$out/networks/onnx.csv" -- \
  "data/devices/$device.dnnc=committed as shipped" "$out/committed.cal.dnnc=committed+cal" \
  "$out/committed.b.cal.dnnc=committed, boundary here+cal" \
  "$out/built.dnnc=new sum" "$out/built.b.dnnc=new boundary" "$out/built.b.cal.dnnc=new boundary+cal" \
  "$out/built.r.cal.dnnc=new boundary+residual+cal" \
  | tee "$out/evaluation.md"
stamp "done"
