#!/usr/bin/env bash
# One machine-readable convention: every command that prints results, given --json, prints
# exactly one JSON document on stdout (parsed here by Python's json module, which refuses two
# documents back to back); the deprecated spellings of the commands' options still work and
# warn once on stderr. compress, prune, table and map are also checked in their own scripts.
# usage: json_output.sh DNNCOST_BINARY DATA_DIR WORK_DIR
source "$(dirname "$0")/common.sh"
fake="bash $(cd "$(dirname "$0")/../measure" && pwd)/fake_runner.sh"
export TMPDIR=$work
model=$data/onnx/squeezenet1_1.onnx

# one_document NAME PYTHON-CONDITION CMD...: exit 0, stdout one JSON document d with the condition true
one_document() {
  local name=$1 cond=$2; shift 2
  "$@" >doc.json 2>err.txt || { fail "$name: exit $?: $(head -2 err.txt)"; return; }
  python3 -c "import json,sys
d = json.load(sys.stdin)
sys.exit(0 if ($cond) else 1)" <doc.json || fail "$name: not one JSON document with $cond: $(head -c 200 doc.json)"
}

one_document "inspect" 'd["macs"] > 0' "$bin" inspect "$model" --json
one_document "nb201" 'd["nodes"] > 0' "$bin" nb201 5 --json
one_document "space summary" 'd["space"] == "fbnet"' "$bin" space fbnet --json
one_document "space --sample" 'len(d) == 2' "$bin" space fbnet --sample 2 --seed 1 --json
mapfile -t archs < <("$bin" space fbnet --sample 2 --seed 1)
[ "${#archs[@]}" -eq 2 ] || fail "space --sample 2 printed ${#archs[@]} strings"
one_document "space one ARCH" 'd["macs"] > 0' "$bin" space fbnet "${archs[0]}" --json
# SPACE:ARCH, as stores and `predict` write it, is the same network; another space's is refused by name
"$bin" space fbnet "${archs[0]}" --json >bare.json 2>err.txt || fail "space ARCH: exit $?"
"$bin" space fbnet "fbnet:${archs[0]}" --json >qualified.json 2>err.txt || fail "space fbnet:ARCH: exit $? $(head -2 err.txt)"
cmp -s bare.json qualified.json || fail "space fbnet:ARCH reports another network than ARCH"
if "$bin" space ofa "fbnet:${archs[0]}" >/dev/null 2>err.txt; then fail "space ofa fbnet:ARCH accepted"; fi
grep -q "architecture of space 'fbnet', not of 'ofa'" err.txt || fail "space ofa fbnet:ARCH: $(head -2 err.txt)"
# several architectures: one array of reports, not documents back to back
one_document "space two ARCH" 'len(d) == 2 and all(r["macs"] > 0 for r in d)' "$bin" space fbnet "${archs[@]}" --json
"$bin" space fbnet "${archs[@]}" >two.txt 2>err.txt || fail "space two ARCH, text: exit $?"
[ "$(grep -c '^model ' two.txt)" -eq 2 ] || fail "space two ARCH, text: not two reports"
one_document "moo" '"hv" in d and d["generations"] == 3' "$bin" moo --problem zdt1 --pop 8 --gens 3 --json
one_document "measure" 'd["measured"] == 2' "$bin" measure --runner "$fake good $work" --device fake --space nb201 \
  --sample 2 --rounds 1 --warmup 0 --repeats 1 --out m.csv --json
one_document "measure, resumed" 'd["skipped"] == 2' "$bin" measure --runner "$fake good $work" --device fake \
  --space nb201 --sample 2 --rounds 1 --warmup 0 --repeats 1 --out m.csv --json
# the noise check re-exports networks the store already had; the fake runner answers the same
# latency every time, so every pair agrees within 5 %
one_document "measure --noise-check" 'd["noise_check"]["pairs"] == 2 and d["noise_check"]["within_5"] == 1.0' \
  "$bin" measure --runner "$fake good $work" --device fake --space nb201 --sample 2 --rounds 1 --warmup 0 \
  --repeats 1 --noise-check 2 --out m.csv --json
one_document "map" '"best" in d' "$bin" map --vig 2M-2M-2M-2M --pop 10 --gens 2 --json
printf 'op,kernel,stride,groups,spatial,c,k,latency_ms\n' >t.csv
for c in 8 16; do for k in 8 16; do echo "Conv,3x3,1x1,1,8x8,$c,$k,$((c * k / 64))" >>t.csv; done; done
one_document "table query" 'd["latency_ms"] > 0' "$bin" table query --table t.csv --op Conv --kernel 3x3 --stride 1x1 \
  --spatial 8x8 --c 8 --k 8 --json

# help: the same words for the same things in every command. says CMD OPTION PATTERN: the
# option's help (on its line or the next, where CLI11 puts long ones) matches PATTERN.
says() {
  # shellcheck disable=SC2086
  "$bin" $1 --help 2>&1 | grep -A1 -- "^ *$2[ ,]" | grep -q -- "$3"
}
for cmd in compress prune "table build" "table price"; do
  says "$cmd" --network 'ONNX network' || fail "$cmd --help does not offer --network FILE"
  # shellcheck disable=SC2086
  "$bin" $cmd --help | grep -q -- '^ *--model' && fail "$cmd --help still offers --model (deprecated: kept, not shown)"
done
says compress --preset 'hifisage' || fail "compress --help: --preset does not list the registry's presets"
for cmd in moo map compress; do
  says $cmd --gens 'after the initial one' || fail "$cmd --help: --gens not counted after the initial one"
done
says cosearch --ooe-gens 'after the initial one' || fail "cosearch --help: --ooe-gens worded otherwise"
for cmd in inspect nb201 space map cosearch moo measure compress prune "table build" "table query" "table price"; do
  says "$cmd" --json 'one JSON document' || fail "$cmd --help: --json not worded as one JSON document"
done
says measure --space-options 'prune=1 for nb201' || fail "measure: --space-options worded otherwise"
"$bin" --help | grep -q -- '--model is a saved estimator.*--network FILE' || fail "dnncost --help does not state the words"
finish json_output
