#!/usr/bin/env bash
# The compression figures of the README: channel-pruning searches of ResNet-50 and Inception-V3
# measured on this CPU through the bundled ONNX Runtime runner (optimisation "all", 1 thread).
# For each model, with one seed:
#   1. the estimator-guided search: GENERATIONS generations of POP, the first HANDOVER measured,
#      then HiFi-SAGE (trained on those measurements, 2/3 train, 1/3 validation), with
#      uncertainty-guided re-measuring within BUDGET; the final front re-measured;
#   2. the same search measured all the way (--handover = GENERATIONS), sharing the results
#      store, so the generations both searches have in common are measured once;
#   3. the hypervolume of both fronts (measured latencies; reference point: 1.05 x the largest
#      latency of both fronts, accuracy 0), as `dnncost compress --reference` computes it.
# Every measurement: ROUNDS round(s) x WARMUP warm-up + REPEATS timed runs, median.
#
# REPORT_ONLY=1 rewrites the report from existing outputs; NOTE="..." adds a line on how they were run.
# usage: [GENERATIONS=10 POP=50 HANDOVER=3 BUDGET=10 ROUNDS=1 WARMUP=3 REPEATS=10 SEED=1 EPOCHS=-1
#         MODELS="resnet50 inception_v3"] [chrt -f 1] bench/compress_ort.sh   (as root, chrt keeps other
#         processes from time-sharing the measuring core; measure nothing else at the same time)
# Writes bench/results/compression_ort/ and bench/results/compression_ort.md.
set -euo pipefail
cd "$(dirname "$0")/.."
G=${GENERATIONS:-10} P=${POP:-50} H=${HANDOVER:-3} K=${BUDGET:-10} SEED=${SEED:-1} EPOCHS=${EPOCHS:--1}
R=${ROUNDS:-1} W=${WARMUP:-3} N=${REPEATS:-10}
MODELS=${MODELS:-resnet50 inception_v3}
bin=${DNNCOST_BIN:-build/release/dnncost}
if [ -z "${DNNCOST_BIN:-}" ] && [ -z "${REPORT_ONLY:-}" ]; then
  bash scripts/deps.sh
  cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build/release -j "$(nproc)" --target dnncost_cli >/dev/null
fi
out=bench/results/compression_ort
mkdir -p "$out"
runner="runners/onnxruntime/run --optimization all --threads 1"
for m in $MODELS; do
  [ -n "${REPORT_ONLY:-}" ] && break  # only rewrite the report from the searches' outputs
  common=(compress --network "data/onnx/$m.onnx" --runner "$runner" --gens "$((G - 1))" --pop "$P" --seed "$SEED"
          --rounds "$R" --warmup "$W" --repeats "$N" --epochs "$EPOCHS" --store "$out/$m.results.csv")
  echo "== $m: estimator-guided search ($G x $P, handover after $H, re-measure budget $K)"
  "$bin" "${common[@]}" --handover "$H" --remeasure-budget "$K" --out "$out/$m-guided" 2>"$out/$m-guided.log"
  echo "== $m: the same search measured all the way"
  "$bin" "${common[@]}" --handover "$G" --out "$out/$m-measured" 2>"$out/$m-measured.log"
done
python3 - "$out" "$G" "$P" "$H" "$K" "$R" "$W" "$N" "$SEED" "${NOTE:-}" $MODELS > bench/results/compression_ort.md <<'PY'
import json, sys
out, G, P, H, K, R, W, N, SEED, NOTE, *models = sys.argv[1:]
def load(p):
    with open(p) as f: return json.load(f)
def pct(x): return "—" if x is None else f"{100 * x:.2f} %"
def front(p):
    pts = []
    with open(p) as f:
        next(f)
        for line in f:
            c = line.rstrip("\n").split(",")
            if c[2]: pts.append((float(c[2]), float(c[3])))
    return pts
def hv(pts, ref_lat):
    total, best = 0.0, 0.0
    for lat, acc in sorted(pts):
        if lat < ref_lat and acc > best:
            total += (ref_lat - lat) * (acc - best)
            best = acc
    return total
print("# Compression search on ONNX Runtime: estimator-guided vs measured all the way\n")
print(f"CPU: AMD EPYC (Zen 5), 2 vCPU VM; ONNX Runtime 1.30.0 via onnxruntime-node, "
      f"1 thread, optimisation \"all\". Produced by `bench/compress_ort.sh` with GENERATIONS={G} POP={P} "
      f"HANDOVER={H} BUDGET={K} SEED={SEED}; every measurement {R} round x {W} warm-up + {N} timed runs (median).\n")
if NOTE: print(NOTE + "\n")
print("| model | estimator MAPE on the re-measured final front | same, members not trained on | additive baseline on the same front | validation MAPE | HV guided / HV measured | measurements (guided) | measurements (measured all the way) | saved | wall time guided | wall time measured search |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for m in models:
    g = load(f"{out}/{m}-guided/summary.json")
    fg = front(f"{out}/{m}-guided/front.csv")
    try:
        ms = load(f"{out}/{m}-measured/summary.json")
        fm = front(f"{out}/{m}-measured/front.csv")
        ref = 1.05 * max(p[0] for p in fg + fm)
        ratio = hv(fg, ref) / hv(fm, ref)
    except (OSError, ValueError, ZeroDivisionError):
        ms, ratio = {"measured": "not run", "evaluations": "—", "seconds": float("nan")}, None
    print(f"| {m} | {pct(g['front_mape'])} | {pct(g['front_mape_unseen'])} | {pct(g['baseline_front_mape'])} | "
          f"{pct(g['validation_mape'])} | {'—' if ratio is None else f'{ratio:.3f}'} | {g['measured']} of {g['evaluations']} | "
          f"{ms['measured']} of {ms['evaluations']} | {g['measurements_saved']} | {g['seconds']:.0f} s | {ms['seconds']:.0f} s (generations 1-{H} from the shared store) |")
print("\nHiFi-SAGE (paper) reports 4.16 % (ResNet-50) and 2.54 % (Inception-V3) on its devices.")
print("Accuracy figure: the built-in proxy (parameter-weighted mean of sqrt(keep ratio)), not a trained accuracy.")
PY
cat bench/results/compression_ort.md
