#!/usr/bin/env bash
# Accuracy tables beyond NB201: additive, BRP-NAS, HiFi-SAGE and PerfSAGE on the FBNet and OFA
# latency tables and on the networks measured here with ONNX Runtime (dnncost_reproduce_spaces).
#
#   bench/reproduce_spaces.sh fbnet|ofa|measured|generalised|multi|onnx [any dnncost_reproduce_spaces option]
#
# fbnet, ofa: every column of data/{fbnet,ofa}/latency_ms.csv. measured, generalised, multi, onnx:
# the results stores given by STORES (default: data/measured/ort_cpu_all_1t.csv and
# ort_cpu_disabled_1t.csv), read as they are at the time. Tables go to bench/results/ (OUT_DIR),
# the per-fit lines beside them as .log. Environment: BUILD_DIR (default build), JOBS (2), NICE (10),
# SUFFIX (appended to the table's name, e.g. _gnn for a run of the GNN presets alone), TARGETS (the
# targets of multi, default latency_ms,peak_memory_bytes; ir_peak_memory_bytes is computed from the graph).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
out="${OUT_DIR:-$root/bench/results}"
what="${1:?usage: reproduce_spaces.sh fbnet|ofa|measured|generalised|multi|onnx [options]}"
shift
cmake --build "$build" -j"${JOBS:-2}" --target dnncost_reproduce_spaces >&2
bin="$build/bench/dnncost_reproduce_spaces"
run() {  # NAME ARGS...: table NAME.md, log NAME.log
  local name=$1${SUFFIX:-}
  shift
  nice -n "${NICE:-10}" "$bin" "$@" --out "$out/$name.md" 2> "$out/$name.log" > /dev/null
}
mkdir -p "$out"
stores="${STORES:-$root/data/measured/ort_cpu_all_1t.csv $root/data/measured/ort_cpu_disabled_1t.csv}"
case "$what" in
  fbnet) run spaces_fbnet --data "${FBNET_CSV:-$root/data/fbnet/latency_ms.csv}" --space fbnet "$@" ;;
  ofa) run spaces_ofa --data "${OFA_CSV:-$root/data/ofa/latency_ms.csv}" --space ofa "$@" ;;
  measured | generalised | multi | onnx)
    for s in $stores; do
      level="$(basename "$s" .csv)"
      args=(--data "$s")
      case "$what" in
        measured) run "spaces_${level}" "${args[@]}" "$@" ;;
        generalised) run "spaces_${level}_generalised" "${args[@]}" --mode generalised "$@" ;;
        multi) run "spaces_${level}_multi" "${args[@]}" --mode multi --targets "${TARGETS:-latency_ms,peak_memory_bytes}" "$@" ;;
        onnx) run "spaces_${level}_onnx" "${args[@]}" --mode onnx "$@" ;;
      esac
    done
    ;;
  *) echo "unknown table '$what'" >&2; exit 2 ;;
esac
