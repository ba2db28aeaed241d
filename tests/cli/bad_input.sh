#!/usr/bin/env bash
# Bad input to the `dnncost` command-line tool: every case must end with a non-zero exit and a
# message that names the problem, within a time limit (no crash, no hang, nothing half-written).
# usage: bad_input.sh DNNCOST_BINARY DATA_DIR WORK_DIR
set -uo pipefail
bin=$1 data=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
failures=0 cases=0

# expect_fail NAME PATTERN CMD...: exit code 1..125 (not a signal, not timeout's 124), stderr
# or stdout matching PATTERN (extended regex), within 60 s
expect_fail() {
  local name=$1 pattern=$2; shift 2
  cases=$((cases + 1))
  timeout 60 "$@" >out.txt 2>err.txt
  local rc=$?
  if [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ $rc -ge 126 ]; then
    echo "FAIL [$name]: exit code $rc"; sed 's/^/  | /' err.txt | head -5; failures=$((failures + 1)); return
  fi
  if ! grep -Eq -- "$pattern" out.txt err.txt; then
    echo "FAIL [$name]: no message matching '$pattern'"; sed 's/^/  | /' err.txt | head -5; failures=$((failures + 1)); return
  fi
  echo "ok   [$name] exit $rc: $(grep -Eh -m1 -- "$pattern" err.txt out.txt | head -1 | cut -c1-150)"
}
check() {  # check NAME CONDITION-COMMAND...
  local name=$1; shift
  cases=$((cases + 1))
  if "$@"; then echo "ok   [$name]"; else echo "FAIL [$name]"; failures=$((failures + 1)); fi
}

head -n 41 "$data/nb201/latency_ms.csv" > small.csv
base=(train --data small.csv --target pixel3 --preset additive)
common=("${base[@]}" --train 10 --val 10)

# --- counts, seeds and thread numbers that would wrap or explode
expect_fail "threads -1"       "thread count"        "$bin" "${common[@]}" --threads -1 --out m.dnnc
expect_fail "threads 100000"   "thread count"        "$bin" "${common[@]}" --threads 100000 --out m.dnnc
expect_fail "val -1"           "--val"               "$bin" "${base[@]}" --train 10 --val -1 --out m.dnnc
expect_fail "train huge"       "--train"             "$bin" "${base[@]}" --train 18446744073709551615 --out m.dnnc
expect_fail "seed overflow"    "not a seed"          "$bin" "${common[@]}" --seed 99999999999999999999 --out m.dnnc
expect_fail "epochs 0"         "--epochs"            "$bin" "${common[@]}" --epochs 0 --out m.dnnc
expect_fail "patience -9"      "--patience"          "$bin" "${common[@]}" --patience -9 --out m.dnnc
expect_fail "ensemble huge"    "ensemble size"       "$bin" "${common[@]}" --ensemble 100000000 --out m.dnnc
expect_fail "proxy w/o uniform" "--proxy"            "$bin" "${common[@]}" --proxy gold_6240 --out m.dnnc
expect_fail "unknown preset"   "--preset"            "$bin" train --data small.csv --target pixel3 --train 10 --val 10 --preset foo --out m.dnnc
check "unknown preset: data not loaded first" bash -c '! grep -q "rows (" err.txt'
expect_fail "test larger than data" "only 40"       "$bin" "${common[@]}" --test 1000 --out m.dnnc
mkdir -p data_dir
expect_fail "data is a directory" "cannot read 'data_dir'.*is a directory" "$bin" train --data data_dir --target pixel3 --preset additive --out m.dnnc
expect_fail "moo threads -1"   "thread count"        "$bin" moo --problem zdt1 --threads -1
expect_fail "moo pop -5"       "population size"     "$bin" moo --problem zdt1 --pop -5
expect_fail "moo igd-points huge" "point count"       "$bin" moo --problem zdt1 --igd-points 100000000000
expect_fail "moo ref inf"      "finite"              "$bin" moo --problem zdt1 --ref inf
expect_fail "moo gens -1"      "generation count"    "$bin" moo --problem zdt1 --gens -1
expect_fail "moo pc nan"       "finite"              "$bin" moo --problem zdt1 --pc nan
"$bin" train --data small.csv --target pixel3 --train 010 --val 10 --preset additive --out octal.dnnc > out.txt 2> err.txt
check "leading zero is decimal (010 = 10, not octal 8)" grep -q "10 train," err.txt
expect_fail "nb201 batch huge" "batch size"          "$bin" nb201 5 --batch 9223372036854775807
expect_fail "nb201 overhead nan" "finite"            "$bin" nb201 5 --overhead-us nan --peak-gflops 1 --bandwidth-gbs 1

# --- output paths: checked before training, nothing half-written, special files respected
expect_fail "out dir missing"  "does not exist"      "$bin" "${common[@]}" --out nodir/m.dnnc
check "out dir missing: failed before training" bash -c '! grep -q "split" err.txt'
expect_fail "report dir missing" "does not exist"    "$bin" "${common[@]}" --out m.dnnc --report nodir/r.json
check "report dir missing: no model left behind" test ! -e m.dnnc
expect_fail "out is a directory" "is a directory"    "$bin" "${common[@]}" --out .
mkfifo fifo
expect_fail "out is a FIFO"    "FIFO"                "$bin" "${common[@]}" --out fifo
check "FIFO still a FIFO" test -p fifo
echo old > target.dnnc && ln -s target.dnnc link.dnnc
"$bin" "${common[@]}" --out link.dnnc >/dev/null 2>&1
check "output through a symlink: link kept, target written" bash -c 'test -L link.dnnc && test "$(head -c 4 target.dnnc)" != "old"'

# --- input files: special files and bad contents
expect_fail "inspect /dev/zero" "not a regular file" "$bin" inspect /dev/zero
expect_fail "inspect a FIFO"   "not a regular file"  "$bin" inspect fifo
expect_fail "inspect a directory" "is a directory"   "$bin" inspect .
head -c 3000 "$data/onnx/squeezenet1_1.onnx" > cut.onnx
expect_fail "truncated onnx"   "cut.onnx"            "$bin" inspect cut.onnx
{ head -n 1 "$data/nb201/latency_ms.csv"; sed -n 2,41p "$data/nb201/latency_ms.csv" | sed '3s/,[^,]*$/,1e-320/'; } > sub.csv
"$bin" train --data sub.csv --target titanx_256 --train 10 --val 10 --preset additive --out s.dnnc > /dev/null 2> err.txt
check "subnormal value skipped with line and reason" grep -q "sub.csv:4: column 'titanx_256': subnormal" err.txt
expect_fail "predict: corrupt model file" "m.dnnc|model" bash -c "head -c 100 link.dnnc > m.dnnc; \"$bin\" predict --model m.dnnc --space nb201 0"

echo "$((cases - failures)) of $cases bad-input cases behaved"
[ $failures -eq 0 ]
