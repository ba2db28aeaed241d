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
common=(compress --model "$model" --generations 4 --pop 8 --handover 2 --estimator additive --seed 3
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
grep -q 'generation 3/4 \[estimated\]' s1/stderr.txt || fail "no progress line for the estimated generation 3"
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
"$bin" compress --model "$model" --runner "$fake good $work" --estimator nosuch --out bad >o.txt 2>e.txt
[ $? -eq 1 ] && grep -q '^dnncost: error: .*unknown preset' e.txt || fail "unknown estimator: $(cat e.txt)"
"$bin" "${common[@]}" --runner "$fake good $work" --steps 0:1:0.1 --out bad >o.txt 2>e.txt
[ $? -eq 1 ] && grep -q '^dnncost: error: .*keep-ratio' e.txt || fail "bad steps: $(cat e.txt)"
echo "not onnx" > broken.onnx
"$bin" compress --model broken.onnx --runner "$fake good $work" --out bad >o.txt 2>e.txt
[ $? -eq 1 ] && grep -q '^dnncost: error: .*broken.onnx' e.txt || fail "broken model: $(cat e.txt)"
"$bin" "${common[@]}" --runner "/nonexistent/runner" --out bad2 >o.txt 2>e.txt
[ $? -eq 1 ] && grep -q '^dnncost: error: .*cannot be started' e.txt || fail "missing runner: $(cat e.txt)"
# 5. `dnncost prune`: the front's members as ONNX files, one per key, each smaller than the model
"$bin" prune --model "$model" --front s1/out/front.csv --out pruned > prune.out 2> prune.err ||
  { fail "prune --front"; tail -3 prune.err; }
members=$(($(wc -l < s1/out/front.csv) - 1))
[ "$(ls pruned/*.onnx 2>/dev/null | wc -l)" -eq "$members" ] || fail "prune: not one ONNX file per front member"
full=$("$bin" inspect "$model" --json 2>/dev/null | grep -m1 '"macs"' | tr -dc 0-9)
for f in pruned/*.onnx; do
  m=$("$bin" inspect "$f" --json 2>/dev/null | grep -m1 '"macs"' | tr -dc 0-9)
  [ -n "$m" ] && [ "$m" -le "$full" ] || fail "prune: $f does not import or has more MACs ($m) than the model ($full)"
done
groups=$(head -2 s1/out/front.csv | tail -1 | cut -d, -f1 | wc -w)
"$bin" prune --model "$model" --keep-ratios "$(yes 0.5 | head -n "$groups" | tr '\n' ' ')" --out half.onnx > /dev/null 2>&1 ||
  fail "prune --keep-ratios"
"$bin" inspect half.onnx > /dev/null 2>&1 || fail "prune: half.onnx does not import"
"$bin" prune --model "$model" --keep-ratios "0.5 2" --out bad.onnx > /dev/null 2> bad.err && fail "prune: ratio 2 accepted"
grep -q "^dnncost: error: .*keep ratio '2'" bad.err || fail "prune: unclear error for ratio 2: $(cat bad.err)"
"$bin" prune --model "$model" --keep-ratios "0.5" --out bad.onnx > /dev/null 2> bad.err && fail "prune: 1 ratio accepted"
grep -q "^dnncost: error: .*keep ratios for" bad.err || fail "prune: unclear error for a wrong count: $(cat bad.err)"

finish compress
