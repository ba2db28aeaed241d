#!/usr/bin/env bash
# experiment: calibration variable intensity | flops | bytes | none, on the stored shots
set -u
cd /work/main
T=bench/results/device_model/transfer_intel_m106_l3_48m
runner_for() { echo "$PWD/runners/onnxruntime/run --optimization $1 --threads 1"; }
for set in all disabled basic intensity/all intensity/disabled; do
  level=$(basename $set); d=$T/$set; tag=$(echo $set | tr / _)
  for var in none intensity flops bytes; do
    w=/tmp/xv/$tag.$var.work; rm -rf $w; cp -r $d/calibrated.dnnc.work $w
    extra=""; envv=""
    [ $var = none ] && extra="--no-intensity-slope"
    [ $var = flops ] && envv=flops
    [ $var = bytes ] && envv=bytes
    DNNCOST_XVAR=$envv ./build/release/dnncost device calibrate --model data/devices/ort-cpu-$level-1t.dnnc --runner "$(runner_for $level)" --work $w --out /tmp/xv/$tag.$var.dnnc $extra --json > /tmp/xv/$tag.$var.json 2>/tmp/xv/$tag.$var.err
    for run in first second; do
      DNNCOST_XVAR=$envv python3 bench/device_model/evaluate.py --cli build/release/dnncost --out /tmp/xv/ev.$tag.$var.$run.json \
        --stores $d/$run/context.csv $d/$run/heldout_*.csv $d/$run/onnx.csv -- /tmp/xv/$tag.$var.dnnc=$var > /dev/null 2>/tmp/xv/ev.$tag.$var.$run.err
    done
    echo "$tag $var done"
  done
done
