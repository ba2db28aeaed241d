#!/usr/bin/env bash
# Resuming after `kill -9`: dnncost measure is killed while it measures, the store it leaves
# loads, and a second run completes it without losing a finished round and without measuring
# one again (only a request in flight at the kill may be repeated).
# usage: measure_resume.sh DNNCOST_BINARY DATA_DIR WORK_DIR
source "$(dirname "$0")/common.sh"
fake="bash $(cd "$(dirname "$0")/../measure" && pwd)/fake_runner.sh"
export TMPDIR=$work
networks=8 rounds=3
args=(measure --device fake --space nb201 --sample $networks --seed 9 --rounds $rounds --max-rounds $rounds --warmup 0
      --repeats 2 --runner "$fake slow $work" --out r.csv)

"$bin" "${args[@]}" >run1.txt 2>&1 &
pid=$!
for ((i = 0; i < 300; ++i)); do  # until 11 requests were answered, mid-way through round 2
  [ -f requests.log ] && [ "$(wc -l < requests.log)" -ge 11 ] && break
  sleep 0.05
done
kill -9 $pid
wait $pid 2>/dev/null
killed_after=$(wc -l < requests.log)
[ "$killed_after" -lt $((networks * rounds)) ] || fail "the run finished before it was killed ($killed_after requests)"
cp r.csv before.csv
recorded=$(grep -c ',round,\|,ok,' before.csv)
echo "killed after $killed_after requests; $recorded rounds recorded in the store"
[ "$recorded" -ge $((killed_after - 1)) ] || fail "rounds lost: $killed_after answered, $recorded recorded"

"$bin" "${args[@]}" --json >run2.json 2>run2.txt
rc=$?
[ $rc -eq 0 ] || { fail "resume: exit $rc"; sed 's/^/  | /' run2.txt | head -5; }
grep -q "\"measured\": $networks" run2.json || fail "resume: not all $networks networks measured"
total=$(wc -l < requests.log)
echo "requests in total: $total (minimum $((networks * rounds)))"
[ "$total" -le $((networks * rounds + 1)) ] || fail "re-measured rounds: $total requests for $((networks * rounds)) rounds"
[ "$(grep -c ',ok,' r.csv)" -eq $networks ] || fail "not $networks ok rows"
[ "$(awk -F, 'NR > 1 && $6 == "ok" && $5 != 3' r.csv | wc -l)" -eq 0 ] || fail "a network without exactly $rounds rounds"
# a network finished before the kill keeps its row as it was
while IFS= read -r row; do
  grep -qxF -- "$row" r.csv || fail "row changed by the resume: $row"
done < <(grep ',ok,' before.csv)
# the killed run's store loads, truncated anywhere
for cut in 37 100 250 $(( $(wc -c < before.csv) - 3 )); do
  head -c "$cut" before.csv > cut.csv
  "$bin" measure --device fake --space nb201 --sample $networks --seed 9 --rounds 1 --repeats 1 \
    --runner "$fake good $work" --out cut.csv >out.txt 2>err.txt || fail "a store cut at byte $cut: exit $?"
  grep -q "error" err.txt && fail "a store cut at byte $cut does not load: $(head -1 err.txt)"
done
finish measure_resume
