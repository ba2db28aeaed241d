#!/usr/bin/env bash
# `dnncost table build|query|price` through the fake runner (tests/measure/fake_runner.sh, which
# answers 1 ms for every model): a tiny table of SqueezeNet's operators, resumed without
# re-measuring, queried in every mode, used to price the network; bad input is one error line.
# usage: table.sh DNNCOST_BINARY DATA_DIR WORK_DIR
source "$(dirname "$0")/common.sh"
fake="bash $(cd "$(dirname "$0")/../measure" && pwd)/fake_runner.sh"
export TMPDIR=$work
model=$data/onnx/squeezenet1_1.onnx
build=(table build --network "$model" --grid proportional:0.5 --warmup 0 --repeats 2 --timeout 20)

"$bin" "${build[@]}" --dry-run >dry.txt 2>err.txt || fail "dry run: exit $?"
grep -q 'configurations' err.txt || fail "dry run: no summary"
grep -q 'not tabled: .*Concat' err.txt || fail "dry run: Concat not reported as not tabled"
"$bin" "${build[@]}" --dry-run --json >dry.json 2>/dev/null || fail "dry run --json: exit $?"
python3 -c 'import json,sys; d = json.load(sys.stdin); sys.exit(not d["configurations"] or d["models"] < 10)' < dry.json ||
  fail "dry run --json: not one JSON document with the configurations"
models=$(sed -n 's/.*configurations, \([0-9]*\) single-operator models.*/\1/p' err.txt)
sinks=$(sed -n 's/.* single-operator models and \([0-9]*\) sinks.*/\1/p' err.txt)
[ -n "$models" ] && [ "$models" -gt 10 ] || fail "dry run: implausible model count '$models'"
[ -n "$sinks" ] && [ "$sinks" -gt 0 ] && [ "$sinks" -le "$models" ] || fail "dry run: implausible sink count '$sinks'"

"$bin" "${build[@]}" --runner "$fake good $work" --out t.csv >out.txt 2>err.txt || fail "build: exit $?"
grep -q "measured $((models + sinks)), already present 0, failed 0" out.txt || fail "build: '$(head -1 out.txt)'"
[ "$(grep -vc '^#' t.csv)" -eq $((models + 1)) ] || fail "t.csv: not $models rows"
grep -q '^Conv,3x3,1x1,1,' t.csv || fail "t.csv lacks a 3x3 Conv row"
[ -f t.results.csv ] || fail "no results store beside the table"
# resume: nothing is measured again
before=$(wc -l < requests.log)
"$bin" "${build[@]}" --runner "$fake good $work" --out t.csv >out.txt 2>err.txt || fail "resume: exit $?"
grep -q "measured 0, already present $((models + sinks))" out.txt || fail "resume: '$(head -1 out.txt)'"
# the deprecated --model still builds, with a warning; --json prints the summary as one document
"$bin" table build --model "$model" --grid proportional:0.5 --warmup 0 --repeats 2 --timeout 20 --runner "$fake good $work" \
  --out t.csv --json >out.json 2>err.txt || fail "build --model: exit $?"
grep -q '^dnncost: warning: table build --model is deprecated; use --network' err.txt || fail "build --model: no warning"
python3 -c 'import json,sys; d = json.load(sys.stdin); sys.exit(d["measured"] != 0 or d["skipped"] != '"$((models + sinks))"')' \
  < out.json || fail "build --json: $(head -c 300 out.json)"
[ "$(wc -l < requests.log)" -eq "$before" ] || fail "resume sent requests"

# query: every model takes 1 ms, the sink alone too, so every point is 0 ms; --no-sink keeps the 1 ms
"$bin" "${build[@]}" --runner "$fake good $work" --out n.csv --no-sink >out.txt 2>err.txt || fail "--no-sink: exit $?"
grep -q "measured $models, already present 0" out.txt || fail "--no-sink: '$(head -1 out.txt)'"
awk -F, '!/^#/ && NR > 2 && $8 != 0 { bad = 1 } END { exit bad }' t.csv || fail "t.csv: a point is not 1 - 1 = 0 ms"
awk -F, '!/^#/ && NR > 2 && $8 != 1 { bad = 1 } END { exit bad }' n.csv || fail "n.csv: a point is not 1 ms"
row=$(grep -m1 '^Conv,1x1,1x1,1,' t.csv)
IFS=, read -r op kernel stride groups spatial c k lat <<<"$row"
for m in plane step multilinear; do
  v=$("$bin" table query --table n.csv --op Conv --kernel 1x1 --stride 1x1 --spatial "$spatial" --c "$c" --k "$k" \
       --mode $m --json | grep latency_ms | tr -dc '0-9.')
  [ "$v" = "1.0" ] || fail "query $m: '$v'"
done
"$bin" table query --table n.csv --op Conv --kernel 1x1 --stride 1x1 --spatial "$spatial" --c 100000 --k "$k" \
  >out.txt 2>err.txt && fail "query out of range: exit 0"
grep -q '^dnncost: error: .*outside the table' err.txt || fail "out of range: '$(cat err.txt)'"
"$bin" table query --table t.csv --op Conv --kernel 1x1 --stride 1x1 --spatial "$spatial" --c 100000 --k "$k" \
  --extrapolate >out.txt 2>err.txt || fail "query --extrapolate: exit $?"

# price: Concat has no entry -> an error naming the node, or the roofline fallback
"$bin" table price --table t.csv --network "$model" >out.txt 2>err.txt && fail "price without fallback: exit 0"
grep -q "^dnncost: error: .*squeezenet1_1.onnx: table cost: node '.*' (Concat)" err.txt || fail "price: '$(cat err.txt)'"
"$bin" table price --table t.csv --network "$model" --fallback roofline --peak-gflops 100 --bandwidth-gbs 10 --json \
  >out.json 2>err.txt || fail "price with fallback: exit $?"
python3 -c 'import json,sys; json.load(sys.stdin)' < out.json || fail "price --json: not one JSON document"
"$bin" table price --table t.csv --network "$model" --network "$model" --fallback roofline --peak-gflops 100 \
  --bandwidth-gbs 10 --json >two.json 2>err.txt || fail "price of two networks: exit $?"
python3 -c 'import json,sys; d = json.load(sys.stdin); sys.exit(len(d) != 2)' < two.json ||
  fail "price --json of two networks: not one array of two"
"$bin" table price --table t.csv --model "$model" --fallback roofline --peak-gflops 100 --bandwidth-gbs 10 \
  >old.txt 2>err.txt || fail "price --model: exit $?"
grep -q '^dnncost: warning: table price --model is deprecated; use --network' err.txt || fail "price --model: no warning"
"$bin" table price --table t.csv --network "$model" --model "$model" >out.txt 2>err.txt && fail "--network and --model together accepted"
grep -q '"latency_ms"' out.json || fail "price: no latency"
grep -q 'Concat' out.json || fail "price: the fallbacks are not listed"

# bad input: one error line each
printf 'op,kernel,stride,groups,spatial,c,k,latency_ms\nConv,3x3,1x1,1,8x8,8,8,1\nConv,3x3,1x1,1,8x8,16,8,slow\n' >bad.csv
"$bin" table price --table bad.csv --network "$model" >out.txt 2>err.txt && fail "bad table: exit 0"
grep -q '^dnncost: error: bad.csv:3: ' err.txt || fail "bad table: '$(cat err.txt)'"
[ "$(wc -l < err.txt)" -eq 1 ] || fail "bad table: more than one error line"
# a reading is never a negative or non-finite latency: the plane of a cell whose latencies fall,
# or a line extrapolated below the table, reads 0; one extrapolated to infinity is an error
q=(--op Conv --kernel 3x3 --stride 1x1 --spatial 8x8)
printf 'op,kernel,stride,groups,spatial,c,k,latency_ms\nConv,3x3,1x1,1,8x8,8,8,2\nConv,3x3,1x1,1,8x8,16,8,0.5\nConv,3x3,1x1,1,8x8,8,16,0.5\nConv,3x3,1x1,1,8x8,16,16,1\n' >fall.csv
printf 'op,kernel,stride,groups,spatial,c,k,latency_ms\nConv,3x3,1x1,1,8x8,8,8,1\nConv,3x3,1x1,1,8x8,16,8,2\nConv,3x3,1x1,1,8x8,8,16,2\nConv,3x3,1x1,1,8x8,16,16,0\n' >rise.csv
for query in "fall.csv --c 15 --k 15 --mode plane" "rise.csv --c 1 --k 1 --mode plane --extrapolate" "rise.csv --c 1 --k 1 --extrapolate"; do
  # shellcheck disable=SC2086
  "$bin" table query "${q[@]}" --table $query --json >out.json 2>err.txt
  python3 -c 'import json,sys; sys.exit(not json.load(sys.stdin)["latency_ms"] >= 0)' < out.json ||
    fail "query $query: '$(tr -d '\n' < out.json)' $(cat err.txt)"
done
"$bin" table query "${q[@]}" --table rise.csv --c 1e200 --k 1e200 --extrapolate >out.txt 2>err.txt && fail "query extrapolated to infinity: exit 0, '$(cat out.txt)'"
grep -q '^dnncost: error: table query Conv .* k=1e+200: .*not finite' err.txt || fail "query extrapolated to infinity: '$(cat err.txt)'"
"$bin" table build --network "$model" --grid steps:3 --out x.csv --dry-run >out.txt 2>err.txt && fail "bad grid: exit 0"
grep -q "^dnncost: error: grid 'steps:3'" err.txt || fail "bad grid: '$(cat err.txt)'"
"$bin" table build --network "$model" --grid proportional:0 --out x.csv --dry-run >out.txt 2>err.txt &&
  fail "zero grid step: exit 0"
# a grid too fine to measure is an error before any model is built, not a hang or exhausted memory
(ulimit -v 4000000; timeout 60 "$bin" table build --network "$model" --grid proportional:1e-9 --out x.csv --dry-run) \
  >out.txt 2>err.txt
rc=$?
[ $rc -eq 1 ] && grep -q "^dnncost: error: table build: grid 'proportional:1e-09' makes [0-9]* single-operator models, more than the limit" err.txt ||
  fail "grid proportional:1e-9: exit $rc, '$(tail -1 err.txt)'"
finish table
