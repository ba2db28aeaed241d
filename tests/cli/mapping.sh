#!/usr/bin/env bash
# `dnncost map` and `dnncost cosearch` end to end: the bundled block-cost file with --exact,
# export and re-import, the SVG plot, and bad block files as errors naming the line.
# usage: mapping.sh DNNCOST_BINARY DATA_DIR WORK_DIR
source "$(dirname "$0")/common.sh"

file=$data/mapping/vig_small_xavier_dvfs.csv

# the bundled instance: search, exact front, hypervolume ratio, JSON
"$bin" map --blocks "$file" --exact --json >run.json 2>err.txt || fail "map --exact exited $?: $(head -3 err.txt)"
python3 -c 'import json,sys; json.load(sys.stdin)' < run.json || fail "map --json: not one JSON document"
grep -q '"hypervolume_ratio"' run.json || fail "no hypervolume_ratio in the JSON"
ratio=$(grep -o '"hypervolume_ratio": [0-9.e-]*' run.json | awk '{print $2}')
awk -v r="$ratio" 'BEGIN { exit !(r >= 0.99 && r <= 1.0000001) }' || fail "hypervolume ratio $ratio not in [0.99, 1]"
grep -q '"mapping": \[' run.json || fail "no mapping as CU names in the JSON"

# text: standalone mappings, Pareto set, best P; CSV rows
"$bin" map --blocks "$file" >run.txt 2>err.txt || fail "map exited $?"
grep -q '^standalone mappings:' run.txt || fail "no standalone section"
grep -Eq '^ +GPU  T 12\.283 ms' run.txt || fail "GPU standalone latency differs from the exported model"
grep -q '^best P:' run.txt || fail "no best P"
"$bin" map --blocks "$file" --csv >run.csv 2>err.txt || fail "map --csv exited $?"
head -1 run.csv | grep -q '^kind,t_ms,e_mj,p,dvfs,feasible,mapping$' || fail "CSV header"
grep -q '^best,' run.csv || fail "no best row in the CSV"
# the deprecated --format still works, with a warning, and prints the same
"$bin" map --blocks "$file" --format csv >old.csv 2>err.txt || fail "map --format csv exited $?"
grep -q '^dnncost: warning: map --format csv is deprecated; use --csv' err.txt || fail "map --format: no warning"
diff <(cut -d, -f1-2 run.csv) <(cut -d, -f1-2 old.csv) >/dev/null || fail "--format csv differs from --csv"
"$bin" map --blocks "$file" --format json --seed 2 >old.json 2>err.txt || fail "map --format json exited $?"
grep -q 'use --json' err.txt || fail "map --format json: no warning naming --json"
python3 -c 'import json,sys; json.load(sys.stdin)' < old.json || fail "map --format json: not one JSON document"
"$bin" map --blocks "$file" --json --csv >/dev/null 2>err.txt && fail "map --json --csv accepted"

# targets nobody meets: the best standalone mapping, and a note saying so
"$bin" map --blocks "$file" --t-target 0.5 >fb.txt 2>err.txt || fail "map --t-target exited $?"
grep -q 'returning the best standalone mapping' fb.txt || fail "no fallback note"

# plot
"$bin" map --blocks "$file" --dvfs all --plot front.svg >/dev/null 2>err.txt || fail "map --plot exited $?"
head -c 4 front.svg | grep -q '<svg' || fail "front.svg is not an SVG"
grep -q 'standalone' front.svg || fail "the plot does not mark the standalone mappings"

# export a ViG subnet on the roofline platform and read it back
"$bin" map --vig 2Gpf96-2M-2S-2Ef192 --platform roofline --export-blocks roof.csv >a.txt 2>err.txt || fail "export exited $?"
"$bin" map --blocks roof.csv --cus DSA-k,DSA-y,DSA-d >b.txt 2>err.txt || fail "re-import exited $?: $(head -2 err.txt)"
diff <(grep -A3 '^standalone' a.txt) <(grep -A3 '^standalone' b.txt) >/dev/null || fail "standalone mappings differ after export and re-import"

# bad block files: exit 1 and the file and line in the message
printf 'block,cu,dvfs,t_comp,e_comp,t_in,t_out,e_in\n0,GPU,x,1,1,0,0,0\n' >missing.csv
printf 'block,cu,dvfs,t_comp,e_comp,t_in,t_out,e_in,e_out\n0,GPU,x,1,1,0,0,0,0\n1,GPU,x,-1,1,0,0,0,0\n' >negative.csv
printf 'block,cu,dvfs,t_comp,e_comp,t_in,t_out,e_in,e_out\n0,GPU,x,1,1,0,0,0,0\n0,TPU,x,1,1,0,0,0,0\n' >unknown.csv
printf 'block,cu,dvfs,t_comp,e_comp,t_in,t_out,e_in,e_out\n0,GPU,x,1,1,0,0,0,0\n2,GPU,x,1,1,0,0,0,0\n' >gap.csv
printf 'block,cu,dvfs,t_comp,e_comp,t_in,t_out,e_in,e_out\n0,GPU,x,nan,1,0,0,0,0\n' >nan.csv
# finite values whose sums overflow (1e308 + 1e308) would make an infinite T and a NaN P
printf 'block,cu,dvfs,t_comp,e_comp,t_in,t_out,e_in,e_out\n0,GPU,x,1,1,0,0,0,0\n1,GPU,x,1e308,1e308,1e308,1e308,1e308,1e308\n' >huge.csv
expect_error() {  # expect_error NAME PATTERN ARGS...
  local name=$1 pattern=$2; shift 2
  timeout 60 "$bin" "$@" >out.txt 2>err.txt
  local rc=$?
  [ $rc -eq 1 ] || { fail "$name: exit code $rc"; return; }
  grep -Eq -- "$pattern" err.txt || fail "$name: no message matching '$pattern': $(head -2 err.txt)"
}
expect_error "missing column" 'missing\.csv:1: missing column\(s\) e_out' map --blocks missing.csv
expect_error "negative cost" 'negative\.csv:3: negative t_comp' map --blocks negative.csv
expect_error "unknown CU" "unknown\.csv:3: unknown compute unit 'TPU'" map --blocks unknown.csv --cus GPU,DLA
expect_error "no CU supports" 'gap\.csv:3: block 1 has no row, so no compute unit supports it' map --blocks gap.csv
expect_error "NaN" 'nan\.csv:2: t_comp is NaN' map --blocks nan.csv
expect_error "huge cost" 'huge\.csv:3: t_comp 1e308 is beyond the limit' map --blocks huge.csv
expect_error "no file" "cannot open 'none\.csv'" map --blocks none.csv
# a directory given as the input is named as one that cannot be read, not written
mkdir -p adir
expect_error "directory" "cannot read .adir." map --blocks adir
grep -q "cannot write" err.txt && fail "directory: named as an output: $(head -1 err.txt)"
expect_error "too many to enumerate" 'enumerates up to 2\^20' map --vig 4Mpf320-4Mpf320-4Mpf320-4Mpf320 --exact
expect_error "bad architecture" "superblock 2 '9M'" map --vig 4M-9M-2M-2M
expect_error "unknown DVFS" "no DVFS setting 'turbo'" map --blocks "$file" --dvfs turbo
expect_error "both inputs" 'either --blocks' map --blocks "$file" --vig 2M-2M-2M-2M

# a short co-search prints the front and the Table 3 comparison
"$bin" cosearch --ooe-pop 12 --ooe-gens 2 --ioe-pop 20 --ioe-gens 2 --threads 2 >co.txt 2>err.txt || fail "cosearch exited $?"
grep -q 'accuracy: PROXY' co.txt || fail "cosearch does not say the accuracy is a proxy"
grep -q 'constr-transit2' co.txt || fail "no Table 3 comparison"
grep -Eq '^  GPU-only ' co.txt || fail "no GPU-only row"
"$bin" cosearch --ooe-pop 12 --ooe-gens 2 --ioe-pop 20 --ioe-gens 2 --threads 2 --json >co.json 2>err.txt ||
  fail "cosearch --json exited $?"
python3 -c 'import json,sys; d = json.load(sys.stdin); sys.exit("table3" not in d or not d["front"])' < co.json ||
  fail "cosearch --json: not one JSON document with the front and Table 3"

finish mapping
