#!/usr/bin/env bash
# `dnncost compress` end to end with fake runners (tests/compress/fake_runner.sh) on SqueezeNet
# 1.1 (small, with Concat fire modules): the output files, a rerun and a resume after kill -9
# that measure nothing twice, a runner that crashes, hangs and prints garbage, an accuracy
# command (also one that answers garbage), and bad input.
# usage: compress.sh DNNCOST_BINARY DATA_DIR WORK_DIR
fake="bash $(cd "$(dirname "$0")/../compress" && pwd)/fake_runner.sh"
source "$(dirname "$0")/common.sh"
export TMPDIR=$work
model=$data/onnx/squeezenet1_1.onnx
common=(compress --network "$model" --gens 3 --pop 8 --handover 2 --preset additive --seed 3
        --rounds 1 --warmup 0 --repeats 2)

# 1. a search with the handover, re-measuring near the front within the budget
mkdir -p s1
"$bin" "${common[@]}" --runner "$fake good $work/s1" --remeasure-budget 4 --out s1/out >s1/stdout.txt 2>s1/stderr.txt
rc=$?
[ $rc -eq 0 ] || { fail "search: exit $rc"; sed 's/^/  | /' s1/stderr.txt | tail -5; }
for f in results.csv front.csv fronts.svg summary.json candidates.csv; do
  [ -s s1/out/$f ] || fail "search: $f not written"
done
head -1 s1/out/front.csv | grep -q '^genome,latency_ms_estimated,latency_ms_measured,accuracy' ||
  fail "front.csv header: $(head -1 s1/out/front.csv)"
# every front member is measured, and estimated
awk -F, 'NR > 1 && ($2 == "" || $3 == "") { bad = 1 } END { exit bad }' s1/out/front.csv ||
  fail "a front member lacks its estimated or measured latency"
for key in measured estimated front_mape seconds measurements_saved baseline_front_mape remeasured_in_search; do
  grep -q "\"$key\":" s1/out/summary.json || fail "summary.json lacks $key"
done
grep -q '"estimated": 0,' s1/out/summary.json && fail "nothing was estimated after the handover"
grep -q '<svg' s1/out/fronts.svg && grep -q 'Predicted vs measured' s1/out/fronts.svg || fail "fronts.svg is not the plot"
remeasured=$(grep -o '"remeasured_in_search": [0-9]*' s1/out/summary.json | grep -o '[0-9]*$')
[ "${remeasured:-99}" -le 4 ] || fail "re-measured $remeasured > budget 4"
grep -q 'measurements saved' s1/stdout.txt || fail "the summary line is missing"
grep -q 'generation 2/3 \[estimated\]' s1/stderr.txt || fail "no progress line for the estimated generation 2"
grep -q '^0,' s1/out/candidates.csv || fail "candidates.csv does not number the initial population 0"
python3 -c 'import json,sys; d = json.load(sys.stdin); sys.exit(d["generations"] != 3)' < s1/out/summary.json ||
  fail "summary.json: generations is not --gens 3"
# no network measured twice
dups=$(sort s1/requests.log | uniq -d | wc -l)
[ "$dups" -eq 0 ] || fail "$dups networks measured twice"

# 2. the same search again: every measurement comes from the store
before=$(wc -l < s1/requests.log)
"$bin" "${common[@]}" --runner "$fake good $work/s1" --remeasure-budget 4 --out s1/out >s1/stdout2.txt 2>s1/stderr2.txt ||
  fail "rerun: exit $?"
[ "$(wc -l < s1/requests.log)" -eq "$before" ] || fail "rerun measured $(( $(wc -l < s1/requests.log) - before )) networks again"
cmp -s <(cut -d, -f1-4 s1/out/front.csv) <(cut -d, -f1-4 s1/out/front.csv) || fail "front changed"
grep -q 'loaded the estimator' s1/stderr2.txt || fail "rerun: the saved estimator was not reused"

# 2b. the deprecated spellings (--model, --generations N counting the initial population,
# --estimator) still run the same search, each with one warning; --json prints one document
"$bin" compress --model "$model" --generations 4 --pop 8 --handover 2 --estimator additive --seed 3 --rounds 1 \
  --warmup 0 --repeats 2 --runner "$fake good $work/s1" --remeasure-budget 4 --out s1/out --json >s1/old.json 2>s1/old.err ||
  fail "deprecated spellings: exit $?"
for w in 'compress --model' 'compress --generations N' 'compress --estimator'; do
  grep -q "^dnncost: warning: $w.* is deprecated" s1/old.err || fail "no deprecation warning for $w"
done
grep -q 'use --gens 3 ' s1/old.err || fail "--generations 4 not converted to --gens 3"
[ "$(wc -l < s1/requests.log)" -eq "$before" ] || fail "the deprecated spellings ran another search"
python3 -c 'import json,sys; d = json.load(sys.stdin); sys.exit(d["generations"] != 3 or d["estimator"] != "additive")' \
  < s1/old.json || fail "--json: not one JSON document of the same search: $(head -c 200 s1/old.json)"
"$bin" "${common[@]}" --generations 4 --runner "$fake good $work/s1" --out s1/out >o.txt 2>e.txt &&
  fail "--gens and --generations together accepted"

# 3. kill -9 while measuring, then resume: nothing measured twice
mkdir -p s2
args=("${common[@]}" --runner "$fake slow $work/s2" --out s2/out)
"$bin" "${args[@]}" >s2/run1.txt 2>&1 &
pid=$!
for ((i = 0; i < 400; ++i)); do
  [ -f s2/requests.log ] && [ "$(wc -l < s2/requests.log)" -ge 11 ] && break
  sleep 0.05
done
kill -9 $pid
wait $pid 2>/dev/null
killed_after=$(wc -l < s2/requests.log)
"$bin" "${args[@]}" >s2/run2.txt 2>s2/err2.txt || { fail "resume: exit $?"; tail -3 s2/err2.txt; }
dups=$(sort s2/requests.log | uniq -d | wc -l)
echo "killed after $killed_after requests; $(wc -l < s2/requests.log) in all, $dups repeated"
[ "$dups" -le 1 ] || fail "resume measured $dups networks again (only one in flight at the kill may repeat)"
[ -s s2/out/front.csv ] || fail "resume: no front.csv"

# 4. a runner that crashes, hangs and prints garbage: the search goes on
mkdir -p s3
"$bin" "${common[@]}" --runner "$fake flaky $work/s3" --timeout 2 --retries 0 --out s3/out >s3/out.txt 2>s3/err.txt
rc=$?
[ $rc -eq 0 ] || { fail "flaky runner: exit $rc"; tail -3 s3/err.txt; }
grep -q 'FAILED' s3/err.txt || fail "flaky runner: no failure reported"
failed=$(grep -o '"failed": [0-9]*' s3/out/summary.json | grep -o '[0-9]*$')
[ "${failed:-0}" -ge 1 ] || fail "flaky runner: no failed candidate in summary.json"
grep -q ',timeout,\|,crash,\|,garbage,' s3/out/results.csv || fail "flaky runner: failures not in the store"

# 5. an accuracy command answers the accuracy figure; one that answers garbage makes candidates infeasible
mkdir -p s4 s5
"$bin" "${common[@]}" --runner "$fake good $work/s4" --accuracy "$fake accuracy $work/s4acc" --out s4/out \
  >s4/out.txt 2>s4/err.txt || { fail "accuracy command: exit $?"; tail -3 s4/err.txt; }
mkdir -p s4acc
[ -s s4/out/accuracy.csv ] || fail "accuracy answers not kept"
grep -q '"accuracy": "bash' s4/out/summary.json || fail "summary.json does not name the accuracy command"
awk -F, 'NR > 1 && ($4 <= 0 || $4 >= 1) { bad = 1 } END { exit bad }' s4/out/front.csv || fail "accuracy out of (0,1)"
mkdir -p s5acc
"$bin" "${common[@]}" --runner "$fake good $work/s5" --accuracy "$fake bad_accuracy $work/s5acc" --retries 0 \
  --out s5/out >s5/out.txt 2>s5/err.txt || { fail "bad accuracy command: exit $?"; tail -3 s5/err.txt; }
grep -q 'accuracy FAILED' s5/err.txt || fail "bad accuracy answers not reported"

# 6. bad input: one clean error line
"$bin" compress --network "$model" --runner "$fake good $work" --preset nosuch --out bad >o.txt 2>e.txt
[ $? -eq 1 ] && grep -q '^dnncost: error: .*unknown preset' e.txt || fail "unknown preset: $(cat e.txt)"
"$bin" "${common[@]}" --runner "$fake good $work" --steps 0:1:0.1 --out bad >o.txt 2>e.txt
[ $? -eq 1 ] && grep -q '^dnncost: error: .*keep-ratio' e.txt || fail "bad steps: $(cat e.txt)"
echo "not onnx" > broken.onnx
"$bin" compress --network broken.onnx --runner "$fake good $work" --out bad >o.txt 2>e.txt
[ $? -eq 1 ] && grep -q '^dnncost: error: .*broken.onnx' e.txt || fail "broken model: $(cat e.txt)"
"$bin" "${common[@]}" --runner "/nonexistent/runner" --out bad2 >o.txt 2>e.txt
[ $? -eq 1 ] && grep -q '^dnncost: error: .*cannot be started' e.txt || fail "missing runner: $(cat e.txt)"
# 5. `dnncost prune`: the front's members as ONNX files, one per key, each smaller than the model
"$bin" prune --network "$model" --front s1/out/front.csv --out pruned > prune.out 2> prune.err ||
  { fail "prune --front"; tail -3 prune.err; }
members=$(($(wc -l < s1/out/front.csv) - 1))
[ "$(ls pruned/*.onnx 2>/dev/null | wc -l)" -eq "$members" ] || fail "prune: not one ONNX file per front member"
full=$("$bin" inspect "$model" --json 2>/dev/null | grep -m1 '"macs"' | tr -dc 0-9)
for f in pruned/*.onnx; do
  m=$("$bin" inspect "$f" --json 2>/dev/null | grep -m1 '"macs"' | tr -dc 0-9)
  [ -n "$m" ] && [ "$m" -le "$full" ] || fail "prune: $f does not import or has more MACs ($m) than the model ($full)"
done
groups=$(head -2 s1/out/front.csv | tail -1 | cut -d, -f1 | wc -w)
"$bin" prune --network "$model" --keep-ratios "$(yes 0.5 | head -n "$groups" | tr '\n' ' ')" --out half.onnx > /dev/null 2>&1 ||
  fail "prune --keep-ratios"
# the deprecated --model still works, with a warning; --json lists the files written in one document
"$bin" prune --model "$model" --keep-ratios "$(yes 0.5 | head -n "$groups" | tr '\n' ' ')" --out half2.onnx --json \
  > prune.json 2> prune.err || fail "prune --model: exit $?"
grep -q '^dnncost: warning: prune --model is deprecated; use --network' prune.err || fail "prune --model: no warning"
python3 -c 'import json,sys; d = json.load(sys.stdin); sys.exit(d["written"] != ["half2.onnx"])' < prune.json ||
  fail "prune --json: $(cat prune.json)"
cmp -s half.onnx half2.onnx || fail "prune --model wrote another network than --network"
"$bin" inspect half.onnx > /dev/null 2>&1 || fail "prune: half.onnx does not import"
"$bin" prune --network "$model" --keep-ratios "0.5 2" --out bad.onnx > /dev/null 2> bad.err && fail "prune: ratio 2 accepted"
grep -q "^dnncost: error: .*keep ratio '2'" bad.err || fail "prune: unclear error for ratio 2: $(cat bad.err)"
"$bin" prune --network "$model" --keep-ratios "0.5" --out bad.onnx > /dev/null 2> bad.err && fail "prune: 1 ratio accepted"
grep -q "^dnncost: error: .*keep ratios for" bad.err || fail "prune: unclear error for a wrong count: $(cat bad.err)"
# a front.csv row whose key is no plain file name, repeats a key, or has a wrong ratio count: an
# error naming the file and line, before anything is written (nothing outside --out, nothing overwritten)
member=$(sed -n 2p s1/out/front.csv)
mkdir -p deep/in
for bad in "escape:not a plain file name" "empty:not a plain file name" "dup:also the key of line 2" "count:keep ratios for"; do
  kind=${bad%%:*} pattern=${bad#*:}
  case $kind in
    escape) row2=${member%,*},../../escaped ;;
    empty) row2=${member%,*}, ;;
    dup) row2=$member ;;
    count) row2="0.5 0.5,,1,0.5,short" ;;
  esac
  { head -1 s1/out/front.csv; echo "$member"; echo "$row2"; } > deep/in/front_$kind.csv
  "$bin" prune --network "$model" --front deep/in/front_$kind.csv --out deep/in/out_$kind > /dev/null 2> bad.err &&
    fail "prune --front, key $kind: exit 0"
  grep -q "^dnncost: error: deep/in/front_$kind.csv:3: .*$pattern" bad.err || fail "prune --front, key $kind: $(cat bad.err)"
  [ -z "$(ls deep/in/out_$kind 2>/dev/null)" ] || fail "prune --front, key $kind: wrote $(ls deep/in/out_$kind)"
done
[ -e deep/escaped.onnx ] && fail "prune --front: a key wrote outside --out"

finish compress
