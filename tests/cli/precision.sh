#!/usr/bin/env bash
# GEMM precision through the `dnncost` command-line tool: a model trained in bf16 records it, and
# predicts the same numbers with the AMX tile unit forbidden (DNNCOST_NO_AMX=1: AVX512-BF16 where
# the CPU has it) and with both bf16 units forbidden (plus DNNCOST_NO_AVX512BF16=1: the emulated
# bf16 arithmetic of a CPU without either) up to float rounding, and visibly different ones in fp32.
# usage: precision.sh DNNCOST_BINARY DATA_DIR WORK_DIR
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"

head -n 61 "$data/nb201/latency_ms.csv" > small.csv
archs=("$(sed -n 62p "$data/nb201/latency_ms.csv" | cut -d, -f1)" "$(sed -n 63p "$data/nb201/latency_ms.csv" | cut -d, -f1)" \
       "$(sed -n 64p "$data/nb201/latency_ms.csv" | cut -d, -f1)")
archs=("${archs[@]//\"/}")

# BRP-NAS has no additive path, so its predictions are the network's own GEMMs
if ! "$bin" train --data small.csv --target pixel3 --preset brpnas --train 30 --val 10 --epochs 2 --threads 2 \
       --precision bf16 --out m.dnnc --report r.json > train.out 2> train.err; then
  fail "training"; sed 's/^/  | /' train.err | tail -5; exit 1
fi
grep -q '"precision": "bf16"' r.json || fail "report does not record precision bf16"
grep -q "trained in bf16" train.err || fail "training does not say it ran in bf16"

"$bin" predict --model m.dnnc --space nb201 "${archs[@]}" > here.txt 2> here.err || fail "predict"
DNNCOST_NO_AMX=1 "$bin" predict --model m.dnnc --space nb201 "${archs[@]}" > noamx.txt 2> noamx.err || fail "predict, no AMX"
DNNCOST_NO_AMX=1 DNNCOST_NO_AVX512BF16=1 "$bin" predict --model m.dnnc --space nb201 "${archs[@]}" > emu.txt 2> emu.err \
  || fail "predict, no bf16 unit"
grep -q "emulated" emu.err || fail "no note that bf16 is emulated without a bf16 unit"
"$bin" predict --model m.dnnc --space nb201 --precision fp32 "${archs[@]}" > fp32.txt 2> /dev/null || fail "predict --precision fp32"
[ "$(wc -l < here.txt)" -eq 3 ] || fail "expected 3 predictions, got: $(cat here.txt)"

# largest relative difference between two prediction files (column 2)
maxrel() { paste "$1" "$2" | awk -F'\t' '{ d = ($2 - $4) / $2; if (d < 0) d = -d; if (d > m) m = d } END { printf "%.3g", m + 0 }'; }
emu=$(maxrel here.txt emu.txt) noamx=$(maxrel here.txt noamx.txt) fp=$(maxrel here.txt fp32.txt)
echo "bf16 here vs emulated: largest relative difference $emu; vs without AMX: $noamx; bf16 vs fp32: $fp"
# (a model trained 2 epochs on 30 graphs: its outputs are small next to its activations, so the
# last-bit differences of the fp32 sums show more than for a trained model, ~1e-5 at most)
awk -v e="$emu" 'BEGIN { exit !(e < 1e-3) }' || fail "emulated bf16 differs from this machine's by $emu (relative)"
awk -v e="$noamx" 'BEGIN { exit !(e < 1e-3) }' || fail "bf16 without AMX differs from this machine's by $noamx (relative)"
awk -v e="$emu" -v f="$fp" 'BEGIN { exit !(f > 1e-4 && f > 10 * e) }' || fail "fp32 is not distinguishable from bf16 ($fp vs $emu)"

if "$bin" predict --model m.dnnc --space nb201 --precision fp16 "${archs[0]}" > /dev/null 2> bad.err; then
  fail "--precision fp16 accepted"
else
  grep -q -- "--precision" bad.err || fail "--precision fp16: message does not name the option"
fi

finish precision
