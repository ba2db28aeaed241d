#!/usr/bin/env bash
# Calibration to another host: the committed device model of a level prices the networks of
# data/measured/earlier_host/ (measured on another VM of this kind), first as calibrated here, then
# calibrated with 1, 3 or 10 of those networks as shots (`device calibrate --data`; the shots
# are the networks at evenly spaced quantiles of measured latency). Measures nothing.
#
# usage: bench/device_model/other_host.sh LEVEL      (all | disabled)
# Writes bench/results/device_model/LEVEL/other_host_calibration.json and prints its table.
set -euo pipefail
cd "$(dirname "$0")/../.."
level=${1:?usage: other_host.sh all|disabled}
bin=build/release/dnncost
model=data/devices/ort-cpu-$level-1t.dnnc
store=data/measured/earlier_host/ort_cpu_${level}_1t.csv
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp "$model" "$tmp/calibrated here"
for k in 1 3 10; do
  # the header, then K ok rows at evenly spaced latency quantiles (the store's columns:
  # key,id,latency_ms,spread,rounds,status,...)
  { head -1 "$store"
    awk -F, 'NR > 1 && $6 == "ok"' "$store" | sort -t, -k3,3g |
      awk -v k="$k" '{ row[NR] = $0 } END { for (i = 0; i < k; ++i) print row[int((i + 0.5) * NR / k) + 1] }'
  } > "$tmp/shots$k.csv"
  "$bin" device calibrate --model "$model" --data "$tmp/shots$k.csv" --out "$tmp/$k shot(s) there" >/dev/null
done
python3 bench/device_model/evaluate.py --cli "$bin" --out "bench/results/device_model/$level/other_host_calibration.json" \
  --stores "$store" -- "$tmp/calibrated here" "$tmp/1 shot(s) there" "$tmp/3 shot(s) there" "$tmp/10 shot(s) there"
