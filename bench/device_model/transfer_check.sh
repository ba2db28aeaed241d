#!/usr/bin/env bash
# A committed device model on this host, calibrated the user's way: `device calibrate --runner`
# measures and profiles its default shots here (and, for comparison, measures them once more
# without profiles: family factors from their latencies alone, `--no-profile`). Both are judged
# beside the model as given on networks it was not calibrated on, measured here twice: 16
# networks of deployed sizes (`device networks --kind context --seed 777`), 15 held-out networks
# of each space (seed 4242) and data/onnx. The two measurements give the floor (floor.txt). Run
# on an idle machine.
#   transfer_check.sh LEVEL OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
level=$1 out=$2
cli=${DNNCOST:-build/release/dnncost}
runner="$PWD/runners/onnxruntime/run --optimization $level --threads 1"
device=ort-cpu-$level-1t
model=data/devices/$device.dnnc
# every figure is measured in this run: the stores of an earlier run in OUT_DIR would be resumed
if [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
  echo "$(basename "$0"): $out is not empty; its stores would be taken as this run's measurements: give a new directory" >&2
  exit 2
fi
mkdir -p "$out/first" "$out/second"
stamp() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

"$cli" device networks --kind context --seed 777 --count 16 --out "$out/judged" > /dev/null

source bench/device_model/heldout.sh
measure_judged() {  # DIR
  "$cli" measure --runner "$runner" --device $device --out "$1/context.csv" "$out"/judged/*.onnx > /dev/null
  measure_heldout "$1"
}

stamp "$level: the judged networks, first"
measure_judged "$out/first"
stamp "$level: device calibrate --runner"
"$cli" device calibrate --model "$model" --runner "$runner" --out "$out/calibrated.dnnc" --json \
  > "$out/calibration.json"
stamp "$level: device calibrate --runner --no-profile"
"$cli" device calibrate --model "$model" --runner "$runner" --no-profile --out "$out/calibrated_latencies.dnnc" \
  --json > "$out/calibration_latencies.json"
stamp "$level: the judged networks, second"
measure_judged "$out/second"

for run in first second; do
  python3 bench/device_model/evaluate.py --cli "$cli" --out "$out/evaluation_$run.json" \
    --stores "$out/$run"/context.csv "$out/$run"/heldout_*.csv "$out/$run/onnx.csv" -- \
    "$model=as given" "$out/calibrated_latencies.dnnc=calibrated here, shot latencies" \
    "$out/calibrated.dnnc=calibrated here, profiled shots" | tee "$out/evaluation_$run.md"
done
python3 bench/device_model/floor.py "$out/first" "$out/second" | tee "$out/floor.txt"
stamp "done"
