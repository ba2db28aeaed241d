#!/usr/bin/env bash
# `dnncost measure` through fake runners (tests/measure/fake_runner.sh): every misbehaviour
# ends as failed networks with their reason in the store and the summary, the run completes
# with exit status 3; bad options and unusable runners are one-line errors with exit status 1;
# the store loads as a training data set.
# usage: measure.sh DNNCOST_BINARY DATA_DIR WORK_DIR
source "$(dirname "$0")/common.sh"
fake="bash $(cd "$(dirname "$0")/../measure" && pwd)/fake_runner.sh"
export TMPDIR=$work
base_hang=(measure --device fake --space nb201 --sample 3 --seed 4 --warmup 0 --repeats 2)
base=("${base_hang[@]}" --rounds 2 --timeout 5)

# a well-behaved runner: all measured, JSON summary, sidecar with the runner's device line
"$bin" "${base[@]}" --runner "$fake good $work" --out good.csv --json >out.json 2>err.txt
rc=$?
[ $rc -eq 0 ] || fail "good runner: exit $rc"
grep -q '"measured": 3' out.json || fail "good runner: measured != 3"
grep -q '"skipped": 0' out.json || fail "good runner: skipped != 0"
grep -q '"failed": 0' out.json || fail "good runner: failed != 0"
grep -q '"mode":"good"' good.device.json || fail "sidecar lacks the runner's device line"
[ "$(grep -c ',ok,' good.csv)" -eq 3 ] || fail "good.csv: not 3 ok rows"
[ "$(grep -c ',round,' good.csv)" -eq 0 ] || fail "good.csv: round rows left after compaction"
grep -q '^ok ' err.txt || fail "plain progress lines missing on a non-terminal"

# --profile: one profiled request per measured network after its rounds, kernels beside the store;
# a runner that does not profile leaves them out with a warning, and the run still succeeds
"$bin" "${base[@]}" --runner "$fake profile $work" --out prof.csv --profile --json >prof.json 2>prof.err
rc=$?
[ $rc -eq 0 ] || fail "--profile: exit $rc"
grep -q '"profiled"' prof.json && grep -A2 '"profiled"' prof.json | grep -q '"networks": 3' ||
  fail "--profile: the summary lacks 3 profiled networks"
[ "$(grep -c '"kernels":\[{"name":"c1","op":"Conv","ms":1.25}' prof.kernels.jsonl 2>/dev/null)" -eq 3 ] ||
  fail "--profile: prof.kernels.jsonl lacks the 3 networks' kernels"
awk -F, 'NR > 1 && $6 == "ok" && $3 + 0 != 1 { bad = 1 } END { exit bad }' prof.csv || fail "--profile: a profiled latency was stored"
"$bin" "${base[@]}" --runner "$fake good $work" --out prof_plain.csv --profile >/dev/null 2>prof_plain.err
rc=$?
[ $rc -eq 0 ] || fail "--profile with a runner that does not profile: exit $rc"
grep -q 'no kernels for .*the runner does not profile' prof_plain.err || fail "--profile: no warning for a runner that does not profile"
[ -e prof_plain.kernels.jsonl ] && fail "--profile: a kernel file without kernels"
echo 'not json' > broken.kernels.jsonl
"$bin" "${base[@]}" --runner "$fake profile $work" --out broken.csv --profile >/dev/null 2>broken.err
[ $? -eq 1 ] && grep -q 'broken.kernels.jsonl:1: not a JSON line' broken.err || fail "--profile: a malformed kernel file is no clear error"
grep -q ",ok," broken.csv 2>/dev/null && fail "--profile: measured before finding the kernel file malformed"

# again: everything is already present, nothing is sent
before=$(wc -l < requests.log)
"$bin" "${base[@]}" --runner "$fake good $work" --out good.csv >out.txt 2>err.txt || fail "resume: exit $?"
grep -q 'measured 0, already present 3, failed 0' out.txt || fail "resume: summary is '$(head -1 out.txt)'"
[ "$(wc -l < requests.log)" -eq "$before" ] || fail "resume sent requests"
# --force measures again
"$bin" "${base[@]}" --runner "$fake good $work" --out good.csv --force >out.txt 2>err.txt || fail "--force: exit $?"
grep -q 'measured 3, already present 0' out.txt || fail "--force: summary is '$(head -1 out.txt)'"

# misbehaving runners: the run completes, exit status 3, each network failed with the reason
for mode in garbage:garbage partial:partial_line nan:bad_latency negative:bad_latency huge:bad_latency missing:bad_latency \
            wrong_id:bad_answer error:runner_error hang:timeout; do
  m=${mode%%:*} reason=${mode#*:}
  args=("${base[@]}")
  [ "$m" = hang ] && args=("${base_hang[@]}" --timeout 1 --retries 0 --rounds 1)
  timeout 120 "$bin" "${args[@]}" --runner "$fake $m $work" --out "$m.csv" --json >out.json 2>err.txt
  rc=$?
  [ $rc -eq 3 ] || { fail "$m: exit $rc (expected 3)"; sed 's/^/  | /' err.txt | head -3; }
  grep -q "\"$reason\": 3" out.json || fail "$m: failed_by_reason lacks $reason: 3"
  [ "$(grep -c ",$reason," "$m.csv")" -eq 3 ] || fail "$m: the store lacks 3 rows with status $reason"
  echo "ok   [$m] exit $rc, $(grep -m1 -o "FAILED .*" err.txt | cut -c1-140)"
done

# crashes and one-shot runners are survived: restarted and retried, all measured
for m in crash oneshot exit_mid; do
  "$bin" "${base[@]}" --runner "$fake $m $work" --out "$m.csv" >out.txt 2>err.txt
  rc=$?
  [ $rc -eq 0 ] || fail "$m: exit $rc"
  grep -q 'measured 3, already present 0, failed 0' out.txt || fail "$m: summary is '$(head -1 out.txt)'"
done
# a device line that comes late is still stored
"$bin" "${base[@]}" --runner "$fake slow_device $work" --startup-timeout 0.3 --out slow.csv >out.txt 2>err.txt ||
  fail "slow device line: exit $?"
grep -q '"mode":"slow_device"' slow.device.json || fail "slow device line not stored"
# a pool of two runners
"$bin" "${base[@]}" --runner "$fake good $work" --runner "$fake good $work" --out pool.csv --json >out.json 2>err.txt ||
  fail "pool: exit $?"
grep -q '"measured": 3' out.json || fail "pool: measured != 3"

# errors: one line, exit status 1
expect_error() {  # NAME PATTERN ARGS...
  local name=$1 pattern=$2; shift 2
  timeout 60 "$bin" "$@" >out.txt 2>err.txt
  local rc=$?
  if [ $rc -ne 1 ] && [ $rc -lt 100 ]; then fail "$name: exit $rc"; return; fi
  grep -Eq -- "$pattern" err.txt || { fail "$name: no message matching '$pattern'"; sed 's/^/  | /' err.txt | head -3; return; }
  echo "ok   [$name] exit $rc: $(grep -Eh -m1 -- "$pattern" err.txt | cut -c1-140)"
}
expect_error "runner not found" "^dnncost: error: runner .* cannot be started" "${base[@]}" --runner "/nonexistent/runner" --out nf.csv
expect_error "two sources" "name the networks one way" "${base[@]}" --archs x.txt --runner "$fake good $work" --out x.csv
expect_error "sample without space" "--sample needs --space" measure --device d --sample 3 --runner "$fake good $work" --out x.csv
expect_error "no networks" "name the networks one way" measure --device d --runner "$fake good $work" --out x.csv
expect_error "other device" "holds measurements of device 'fake'" measure --device other --space nb201 --sample 1 --runner "$fake good $work" --out good.csv
printf '|nor_conv_3x3~0|+|bogus~0|none~1|+|none~0|none~1|none~2|\n' > bad_archs.txt
expect_error "bad arch file" "bad_archs.txt:1" measure --device d --archs bad_archs.txt --runner "$fake good $work" --out x.csv
head -n 5 "$data/nb201/latency_ms.csv" > table.csv
expect_error "not a store" "not a dnncost results store" "${base[@]}" --runner "$fake good $work" --out table.csv
cmp -s table.csv <(head -n 5 "$data/nb201/latency_ms.csv") || fail "a foreign file was changed"
expect_error "rounds 0" "round count" "${base[@]}" --rounds 0 --runner "$fake good $work" --out x.csv
expect_error "out dir missing" "does not exist" "${base[@]}" --runner "$fake good $work" --out nodir/x.csv

# the store is a training data set (status ok rows only)
printf '%s\n' '|nor_conv_3x3~0|+|nor_conv_3x3~0|none~1|+|skip_connect~0|none~1|nor_conv_1x1~2|' \
  '|skip_connect~0|+|nor_conv_1x1~0|none~1|+|none~0|avg_pool_3x3~1|nor_conv_3x3~2|' > archs.txt
"$bin" measure --device fake --archs archs.txt --rounds 1 --repeats 1 --runner "$fake good $work" --out good.csv >/dev/null 2>&1 ||
  fail "measure --archs: exit $?"
"$bin" train --data good.csv --target latency_ms --preset additive --train 3 --val 0 --out m.dnnc >out.txt 2>err.txt
grep -q 'dnncost: 5 rows (5 distinct graphs) from good.csv' err.txt || fail "train --data store: '$(grep rows err.txt)'"
# network names: a line's own build options over --space-options, a synthesised network; the ids
# carry the options measured with, so the store reads back as those networks without any
printf '%s\n' '|nor_conv_3x3~0|+|none~0|skip_connect~1|+|avg_pool_3x3~0|none~1|nor_conv_1x1~2|@batch=4' \
  '|skip_connect~0|+|nor_conv_1x1~0|none~1|+|none~0|avg_pool_3x3~1|nor_conv_3x3~2|' 'cnn:r64-s16-basic-Relu-w16d1s2k3' \
  > named.txt
"$bin" measure --device fake --archs named.txt --space-options batch=2 --rounds 1 --repeats 1 \
  --runner "$fake good $work" --out named.csv >/dev/null 2>&1 || fail "measure --archs with network names: exit $?"
cut -d, -f2 named.csv | grep -qx '|nor_conv_3x3~0|+|none~0|skip_connect~1|+|avg_pool_3x3~0|none~1|nor_conv_1x1~2|@batch=4' &&
  cut -d, -f2 named.csv | grep -qx '|skip_connect~0|+|nor_conv_1x1~0|none~1|+|none~0|avg_pool_3x3~1|nor_conv_3x3~2|@batch=2' &&
  cut -d, -f2 named.csv | grep -qx 'cnn:r64-s16-basic-Relu-w16d1s2k3' || fail "measure: ids without their options: $(cut -d, -f2 named.csv)"
"$bin" train --data named.csv --target latency_ms --preset additive --train 2 --val 0 --out m.dnnc >out.txt 2>err.txt
grep -q 'dnncost: 3 rows (3 distinct graphs) from named.csv' err.txt || fail "train --data named store: '$(cat err.txt)'"
# measured again by id (--noise-check builds each network again from its id): the same networks
"$bin" measure --device fake --archs named.txt --space-options batch=2 --rounds 1 --repeats 1 --noise-check 3 \
  --runner "$fake good $work" --out named.csv --json > named.json 2>/dev/null || fail "measure --noise-check on named networks: exit $?"
grep -q '"skipped": 3' named.json || fail "measure named networks again: not all found in the store: $(cat named.json)"
# a damaged line of the store is named, file and line, not left out unsaid
cp good.csv damaged.csv && printf 'key-only,row\n' >> damaged.csv
"$bin" train --data damaged.csv --target latency_ms --preset additive --train 3 --val 0 --out m.dnnc >out.txt 2>err.txt
grep -q "dnncost: skipped damaged.csv:$(wc -l < damaged.csv):" err.txt || fail "train --data, a damaged store line: '$(cat err.txt)'"
grep -q 'from damaged.csv.*, 1 skipped' err.txt || fail "train --data, the damaged line not counted: '$(grep rows err.txt)'"
# an ok row the data set leaves out (a bad architecture) is named by its line in the store, which
# a failed row before it puts one below its place among the ok rows
{ head -n 1 good.csv; sed -n 2p garbage.csv | sed 's/^[0-9a-f]*,/00000000000000000000000000000001,/'; sed -n '2,$p' good.csv
  echo '00000000000000000000000000000002,|bogus~0|+|none~0|none~1|+|none~0|none~1|none~2|,1,0,1,ok,2026-01-01T00:00:00Z,,,'
} > bad_arch_row.csv
"$bin" train --data bad_arch_row.csv --target latency_ms --preset additive --train 3 --val 0 --out m.dnnc >out.txt 2>err.txt
grep -q "dnncost: skipped bad_arch_row.csv:$(wc -l < bad_arch_row.csv): bad architecture" err.txt ||
  fail "train --data, an ok row with a bad architecture: not named by its store line: '$(grep skipped err.txt)'"
"$bin" train --data garbage.csv --target latency_ms --preset additive --train 1 --out m.dnnc >out.txt 2>err.txt
grep -q 'no network with status ok' err.txt || fail "train on a store without ok rows: '$(tail -1 err.txt)'"
finish measure
