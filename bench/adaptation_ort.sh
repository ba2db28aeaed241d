#!/usr/bin/env bash
# Adaptation between the two ONNX Runtime configurations measured on this CPU (graph
# optimisations all vs disabled, 1 thread): the networks with status ok in both results files;
# the pool is the six NB201 devices plus the other configuration, the new device's measurements
# come from its results file. SEEDS seeds of SHOTS shots each, reports in OUT.
# Usage: bench/adaptation_ort.sh MEASURED_DIR OUT_DIR [dnncost adapt options...]   (env: DNNCOST, SEEDS, SHOTS)
set -euo pipefail
measured="$1"; out="$2"; shift 2  # any further options go to dnncost adapt
bin="${DNNCOST:-build/dnncost}"; seeds="${SEEDS:-10}"; shots="${SHOTS:-10}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
# pool table: arch, the six NB201 devices, ort_all, ort_disabled (networks ok in both files)
python3 - "$here/../data/nb201/latency_ms.csv" "$measured" "$out/pool.csv" <<'PY'
import csv, sys
table, measured, dest = sys.argv[1:4]
def ok(path):
    rows = {}
    for r in csv.DictReader(open(path)):
        if r["status"] == "ok":
            rows[r["id"].removeprefix("nb201:")] = r["latency_ms"]
    return rows
a, d = ok(f"{measured}/ort_cpu_all_1t.csv"), ok(f"{measured}/ort_cpu_disabled_1t.csv")
reader = csv.reader(open(table))
header = next(reader)
with open(dest, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(header + ["ort_all", "ort_disabled"])
    n = 0
    for row in reader:
        if row[0] in a and row[0] in d:
            w.writerow(row + [a[row[0]], d[row[0]]])
            n += 1
print(f"adaptation_ort: {len(a)} ok in all, {len(d)} ok in disabled, {n} in both", file=sys.stderr)
PY
n=$(($(wc -l < "$out/pool.csv") - 1))
if [ "$n" -le "$shots" ]; then
    echo "adaptation_ort: only $n networks measured in both configurations; nothing to adapt" >&2
    exit 0
fi
nb=gold_6240,1080ti_1,titan_rtx_32,silver_4114,pixel3,titanx_256
for target in ort_disabled ort_all; do
    other=$([ $target = ort_all ] && echo ort_disabled || echo ort_all)
    for ((seed = 0; seed < seeds; ++seed)); do
        "$bin" adapt --pool "$out/pool.csv" --pool-targets "$other,$nb" --target "$target" --shots "$shots" \
            --seed "$seed" --baseline ridge --report "$out/$target.$seed.json" "$@" > /dev/null 2>> "$out/log.txt"
    done
done
python3 "$here/adaptation_table.py" "$out"
