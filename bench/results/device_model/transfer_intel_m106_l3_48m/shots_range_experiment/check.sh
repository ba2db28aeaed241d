#!/usr/bin/env bash
# shots experiment: the default ten shots against eight of them + a KWS network + a large bottleneck CNN,
# calibrated in the same hour, judged on the same two measurements of the judged networks
set -euo pipefail
cd /work/main
level=$1 out=$2
cli=build/release/dnncost
runner="$PWD/runners/onnxruntime/run --optimization $level --threads 1"
device=ort-cpu-$level-1t
model=data/devices/$device.dnnc
mkdir -p "$out/first" "$out/second"
stamp() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
"$cli" device networks --kind context --seed 777 --count 16 --out "$out/judged" > /dev/null
source bench/device_model/heldout.sh
measure_judged() {
  "$cli" measure --runner "$runner" --device $device --out "$1/context.csv" "$out"/judged/*.onnx > /dev/null
  measure_heldout "$1"
}
stamp "$level: judged, first"
measure_judged "$out/first"
for s in old new; do
  stamp "$level: calibrate, $s shots"
  "$cli" device calibrate --model "$model" --runner "$runner" --shots /tmp/sx/$s/*.onnx --out "$out/$s.dnnc" --json > "$out/calibration_$s.json"
done
stamp "$level: judged, second"
measure_judged "$out/second"
for run in first second; do
  python3 bench/device_model/evaluate.py --cli "$cli" --out "$out/evaluation_$run.json" \
    --stores "$out/$run"/context.csv "$out/$run"/heldout_*.csv "$out/$run/onnx.csv" -- \
    "$model=as given" "$out/old.dnnc=default shots" "$out/new.dnnc=with KWS and large CNN" > "$out/evaluation_$run.md"
done
python3 bench/device_model/floor.py "$out/first" "$out/second" > "$out/floor.txt"
stamp done
