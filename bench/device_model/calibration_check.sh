#!/usr/bin/env bash
# Does `device calibrate` carry to networks of deployed sizes? A committed model calibrated on
# (a) its default shots (`device networks --kind calibration`) and (b) ten small search-space
# networks (the shots it measured before, SMALL_SHOTS: one qualified architecture a line), judged
# beside the model as given on other networks of deployed sizes (`device networks --kind context
# --seed 777`). Shots and judged networks are measured in one run, interleaved, so that the
# host's drift touches both alike. Run on an idle machine.
#   calibration_check.sh LEVEL OUT_DIR SMALL_SHOTS [JUDGED_COUNT]
set -euo pipefail
cd "$(dirname "$0")/../.."
level=$1 out=$2 small=$3 judged=${4:-16}
cli=${DNNCOST:-build/release/dnncost}
runner="$PWD/runners/onnxruntime/run --optimization $level --threads 1"
model=data/devices/ort-cpu-$level-1t.dnnc
mkdir -p "$out"
stamp() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

"$cli" device networks --kind calibration --out "$out/shots" > /dev/null
"$cli" device networks --kind context --seed 777 --count "$judged" --out "$out/judged" > /dev/null

stamp "$level: shots and judged networks, one run"
"$cli" measure --runner "$runner" --device "ort-cpu-$level-1t" --out "$out/measured.csv" \
  "$out"/shots/*.onnx "$out"/judged/*.onnx >> "$out/measure.log" 2>&1
stamp "$level: the small shots"
"$cli" measure --runner "$runner" --device "ort-cpu-$level-1t" --archs "$small" --out "$out/small_shots.csv" \
  >> "$out/measure_small.log" 2>&1

# the shots' store apart from the judged networks' (same measurements)
python3 - "$out" <<'PY'
import csv, os, shutil, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(os.path.join(out, "measured.csv"))))
for part in ("shots", "judged"):
    with open(os.path.join(out, part + ".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=rows[0].keys())
        w.writeheader()
        w.writerows(r for r in rows if f"/{part}/" in r["id"] or r["id"].startswith(part + "/"))
    shutil.copy(os.path.join(out, "measured.device.json"), os.path.join(out, part + ".device.json"))
PY

stamp "$level: calibrating"
"$cli" device calibrate --model "$model" --data "$out/shots.csv" --out "$out/calibrated_deployed.dnnc" --json \
  > "$out/calibration_deployed.json"
"$cli" device calibrate --model "$model" --data "$out/small_shots.csv" --out "$out/calibrated_small.dnnc" --json \
  > "$out/calibration_small.json"

python3 bench/device_model/evaluate.py --cli "$cli" --out "$out/evaluation.json" --stores "$out/judged.csv" -- \
  "$model=as given" "$out/calibrated_deployed.dnnc=calibrated on the default shots" \
  "$out/calibrated_small.dnnc=calibrated on small space networks" | tee "$out/evaluation.md"
# the judged networks apart: deployed sizes, and the spaces as searched (batch 1)
python3 - "$cli" "$out" "$model" <<'PY' | tee "$out/by_size.md"
import csv, json, os, statistics, subprocess, sys
cli, out, model = sys.argv[1:4]
names = dict(l.rstrip("\n").split("\t") for l in open(os.path.join(out, "judged", "networks.tsv")))
rows = [r for r in csv.DictReader(open(os.path.join(out, "judged.csv"))) if r["status"] == "ok"]
small = [names[os.path.basename(r["id"])].startswith("|") or "@batch=1" in names[os.path.basename(r["id"])] for r in rows]
files = [os.path.join(out, r["id"]) for r in rows]
print("| model | networks | n | MAPE | within ±10 % | median pred/meas |")
print("|---|---|---|---|---|---|")
for path, label in [(model, "as given"), (os.path.join(out, "calibrated_deployed.dnnc"), "calibrated on the default shots"),
                    (os.path.join(out, "calibrated_small.dnnc"), "calibrated on small space networks")]:
    doc = json.loads(subprocess.run([cli, "predict", "--model", path, "--json", *files], capture_output=True,
                                    text=True, check=True).stdout)
    for part, want in (("deployed sizes", False), ("spaces as searched", True)):
        r = [p["latency"] / float(x["latency_ms"]) for p, x, s in zip(doc["predictions"], rows, small) if s == want]
        if not r:
            continue
        ape = [abs(v - 1) for v in r]
        print(f"| {label} | {part} | {len(r)} | {100 * statistics.mean(ape):.1f} % | "
              f"{100 * sum(a <= 0.1 for a in ape) / len(ape):.0f} % | {statistics.median(r):.2f} |")
PY
grep -h "reference network" "$out"/measure*.log >&2 || true
