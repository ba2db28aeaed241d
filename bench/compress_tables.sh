#!/usr/bin/env bash
# The operator-table side of the compression figures: the networks of each estimator-guided
# final front (bench/compress_ort.sh) written as ONNX (`dnncost prune --front`), a table of
# every operator configuration they contain measured on the same runtime (`dnncost table build
# --grid proportional:1`: each network's own channel counts, so no reading between grid points),
# and each network priced as the sum of its operators (`dnncost table price`), against the
# latency measured end to end. Appends a section to bench/results/compression_ort.md.
# usage: [MODELS="resnet50 inception_v3"] [LEVEL=all] bench/compress_tables.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${DNNCOST_BIN:-build/release/dnncost}
level=${LEVEL:-all}
out=bench/results/compression_ort
runner="runners/onnxruntime/run --optimization $level --threads 1"
rows=()
for m in ${MODELS:-resnet50 inception_v3}; do
  front="$out/$m-guided/front.csv"
  [ -s "$front" ] || { echo "compress_tables: $front missing (run bench/compress_ort.sh first)" >&2; continue; }
  dir=$(mktemp -d)
  "$bin" prune --network "data/onnx/$m.onnx" --front "$front" --out "$dir" > /dev/null
  "$bin" table build --network "$dir"/*.onnx --grid proportional:1 --runner "$runner" --rounds 1 --max-rounds 3 \
    --device "onnxruntime $level, 1 thread" --out "$out/$m.table_$level.csv" 2> "$out/$m.table_$level.log"
  # operators no single-operator model describes (e.g. a Concat) fall back to a roofline of one
  # core of this CPU class: 100 GFLOP/s, 20 GB/s
  "$bin" table price --table "$out/$m.table_$level.csv" --network "$dir"/*.onnx --fallback roofline --peak-gflops 100 \
    --bandwidth-gbs 20 --json > "$out/$m.table_price_$level.json"
  rm -rf "$dir"
  rows+=("$m")
done
python3 - "$out" "$level" "${rows[@]}" >> bench/results/compression_ort.md <<'PY'
import csv, json, os, sys
out, level, *models = sys.argv[1:]
print(f"\n## Operator tables on the same pruned networks (ONNX Runtime optimisation \"{level}\")\n")
print("`bench/compress_tables.sh`: each final-front network priced as the sum of its operators' single-operator latencies "
      "(sequential execution assumed), against its end-to-end latency; GNN and additive errors from the search's summary.\n")
print("| model | networks | table-sum MAPE | table sum / measured (median) | additive baseline MAPE | GNN (HiFi-SAGE preset) MAPE |")
print("|---|---|---|---|---|---|")
for m in models:
    measured = {}
    with open(f"{out}/{m}-guided/front.csv") as f:
        for r in csv.DictReader(f):
            if r["latency_ms_measured"]:
                measured[r["key"]] = float(r["latency_ms_measured"])
    priced = json.load(open(f"{out}/{m}.table_price_{level}.json"))
    items = priced if isinstance(priced, list) else [priced]
    ratios = []
    for it in items:
        key = os.path.splitext(os.path.basename(it["model"]))[0]
        if key in measured:
            ratios.append(float(it["latency_ms"]) / measured[key])
    s = json.load(open(f"{out}/{m}-guided/summary.json"))
    if not ratios:
        print(f"| {m} | 0 | — | — | — | — |"); continue
    mape = sum(abs(r - 1) for r in ratios) / len(ratios)
    med = sorted(ratios)[len(ratios) // 2]
    print(f"| {m} | {len(ratios)} | {100*mape:.1f} % | {med:.2f} | {100*s['baseline_front_mape']:.2f} % | {100*s['front_mape']:.2f} % |")
PY
tail -n 6 bench/results/compression_ort.md
