#!/usr/bin/env bash
# Kernels four times the FLOPs of every sample of a device model's build, measured with the
# build's runner inside a network (each judged by its own profiled time, beside the sample it was
# grown from), against the prices of the model as built and of its samples refitted with the
# roofline base and without it (the regressors alone). docs/device_model.md, "Beyond the samples".
#   run.sh MODEL RUNNER [WORK_DIR] [NAME]
#     MODEL     a model of `dnncost device build` (.dnnc)
#     RUNNER    the runner command the build measured with, e.g.
#               "runners/onnxruntime/run --optimization all --threads 1"
#     WORK_DIR  the build's work directory, holding kernel_samples.json (default MODEL.work)
#     NAME      of the results file (default: MODEL's file name without .dnnc)
# Then profiles NETWORKS (default 18) whole networks beyond the build's and judges their kernels
# larger than every sample (`device extrapolate --networks`).
# Writes bench/results/kernel_extrapolation/NAME.json and NAME_networks.json; the refitted models
# and the measurements' stores go to WORK_DIR/extrapolation (a rerun measures only what is
# missing). FACTOR (default 4) and PER_KIND (default 2) set the growth and the kernels per kind.
# Needs a built dnncost (DNNCOST, default build/release/dnncost) and the runner's packages.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
model=$1 runner=$2
work=${3:-$model.work}
name=${4:-$(basename "$model" .dnnc)}
bin=${DNNCOST:-$root/build/release/dnncost}
here=$work/extrapolation
out=$root/bench/results/kernel_extrapolation
mkdir -p "$here" "$out"
"$bin" device build --refit --work "$work" --out "$here/roofline.dnnc" > /dev/null
"$bin" device build --refit --no-roofline-base --work "$work" --out "$here/regressors.dnnc" > /dev/null
status=0  # 3: some kernel failed to measure; the others are still written
"$bin" device extrapolate --model "$model" --model "$here/roofline.dnnc" --model "$here/regressors.dnnc" \
  --samples "$work/kernel_samples.json" --runner "$runner" --work "$here" \
  --factor "${FACTOR:-4}" --per-kind "${PER_KIND:-2}" --json > "$out/$name.json.part" || status=$?
mv "$out/$name.json.part" "$out/$name.json"
echo "wrote $out/$name.json"
"$bin" device extrapolate --model "$model" --model "$here/roofline.dnnc" --model "$here/regressors.dnnc" \
  --samples "$work/kernel_samples.json" --runner "$runner" --work "$here" --networks "${NETWORKS:-18}" --json \
  > "$out/${name}_networks.json.part" || status=$?
mv "$out/${name}_networks.json.part" "$out/${name}_networks.json"
echo "wrote $out/${name}_networks.json"
exit $status
