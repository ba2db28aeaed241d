#!/usr/bin/env bash
# Model selection through the `dnncost` command-line tool: HiFi-SAGE trained with --keep untrained
# ends with its untrained network, whose prediction is its additive path, i.e. exactly what the
# additive baseline trained on the same split predicts; --keep trained ends with the best epoch.
# usage: selection.sh DNNCOST_BINARY DATA_DIR WORK_DIR
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"

head -n 81 "$data/nb201/latency_ms.csv" > small.csv
archs=()
for line in 90 91 92 93; do archs+=("$(sed -n ${line}p "$data/nb201/latency_ms.csv" | cut -d, -f1)"); done
common=(--data small.csv --target gold_6240 --train 40 --val 30 --seed 3 --threads 2)

"$bin" train "${common[@]}" --preset additive --out add.dnnc > /dev/null 2> add.err || { fail "additive training"; tail -3 add.err; }
for keep in untrained trained; do
  if ! "$bin" train "${common[@]}" --preset hifisage --epochs 3 --keep $keep --out $keep.dnnc --report $keep.json \
         > /dev/null 2> $keep.err; then
    fail "hifisage --keep $keep"; tail -3 $keep.err; continue
  fi
  grep -q -- "-> $keep network kept (keep = $keep)" $keep.err || fail "--keep $keep: stderr does not say which network was kept"
  grep -q "(keep = $keep)" $keep.json || fail "--keep $keep: the report's selection does not record it"
  # the comparison below needs the plain additive baseline as the additive path (the other
  # candidate adds compiler-view aggregates); with this split the warm start chooses it
  grep -E -q "additive path: additive baseline( \(unpaid share [^)]*\))?;" $keep.err || fail "--keep $keep: warm start did not choose the additive baseline"
done
"$bin" predict --model add.dnnc --space nb201 "${archs[@]}" > add.txt 2> /dev/null || fail "predict, additive"
"$bin" predict --model untrained.dnnc --space nb201 "${archs[@]}" > untrained.txt 2> /dev/null || fail "predict, untrained"
"$bin" predict --model trained.dnnc --space nb201 "${archs[@]}" > trained.txt 2> /dev/null || fail "predict, trained"
[ "$(wc -l < add.txt)" -eq 4 ] || fail "expected 4 predictions, got: $(cat add.txt)"

maxrel() { paste "$1" "$2" | awk -F'\t' '{ d = ($2 - $4) / $2; if (d < 0) d = -d; if (d > m) m = d } END { printf "%.3g", m + 0 }'; }
same=$(maxrel add.txt untrained.txt) moved=$(maxrel add.txt trained.txt)
echo "--keep untrained vs additive baseline: largest relative difference $same; --keep trained: $moved"
awk -v e="$same" 'BEGIN { exit !(e < 1e-5) }' || fail "--keep untrained differs from the additive baseline by $same"
awk -v e="$moved" 'BEGIN { exit !(e > 1e-4) }' || fail "--keep trained predicts the additive baseline ($moved)"

if "$bin" train "${common[@]}" --preset hifisage --keep best --out x.dnnc > /dev/null 2> bad.err; then
  fail "--keep best accepted"
else
  grep -q -- "--keep" bad.err || fail "--keep best: message does not name the option"
fi

finish selection
