#!/usr/bin/env bash
# Hostile inputs to the `dnncost` command-line tool, family by family: ONNX structure and
# attributes, shapes, CSV data sets, model files, options, output paths, signals. Every failing
# case must end in the README's clean outcome: an exit code in 1..125 within the time limit (no
# crash, no hang), one stderr line `dnncost: error: ...` that names the file, line, node or
# option (and is the last line: nothing forged after it), nothing on stdout, no output file
# and no temporary file left behind.
# usage: run.sh DNNCOST_BINARY DATA_DIR WORK_DIR
set -uo pipefail
bin=$(realpath "$1") data=$(realpath "$2") work=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
failures=0 cases=0
limit=${HOSTILE_TIMEOUT:-30}

bad() { echo "FAIL [$1]: $2"; sed 's/^/  | /' err.txt | head -5 | cut -c1-300; failures=$((failures + 1)); }
stray_temps() { find . -name '.dnncost-*' -o -name '.*.tmp*' | grep -q .; }

# expect_error NAME PATTERN CMD...: the failing outcome above; with ONE_LINE=1 (the default)
# stderr must be that one line and nothing else (progress lines are allowed before it otherwise).
expect_error() {
  local name=$1 pattern=$2; shift 2
  cases=$((cases + 1))
  timeout "$limit" "$@" >out.txt 2>err.txt
  local rc=$?
  if [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ $rc -ge 126 ]; then bad "$name" "exit code $rc"; return; fi
  local errors last
  errors=$(grep -c '^dnncost: error: ' err.txt)
  last=$(tail -n 1 err.txt)
  if [ "$errors" != 1 ]; then bad "$name" "$errors 'dnncost: error:' lines"; return; fi
  if [[ $last != "dnncost: error: "* ]]; then bad "$name" "the error is not the last line"; return; fi
  if [ "${ONE_LINE:-1}" = 1 ] && [ "$(wc -l < err.txt)" != 1 ]; then bad "$name" "stderr is not one line"; return; fi
  if ! grep -Eq -- "$pattern" <<< "$last"; then bad "$name" "no '$pattern' in the error line"; return; fi
  if [ -s out.txt ]; then bad "$name" "output on stdout"; return; fi
  if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' err.txt || [ "$(tr -d '\000' < err.txt | wc -c)" != "$(wc -c < err.txt)" ]; then
    bad "$name" "control characters in stderr"; return
  fi
  if stray_temps; then bad "$name" "temporary file left behind"; return; fi
  echo "ok   [$name] exit $rc: $(cut -c1-160 <<< "$last")"
}
# expect_ok NAME CMD...: exit 0 within the time limit
expect_ok() {
  local name=$1; shift
  cases=$((cases + 1))
  timeout "$limit" "$@" >out.txt 2>err.txt
  local rc=$?
  if [ $rc -ne 0 ]; then bad "$name" "exit code $rc"; return; fi
  if stray_temps; then bad "$name" "temporary file left behind"; return; fi
  echo "ok   [$name]"
}
check() {  # check NAME CONDITION-COMMAND...
  local name=$1; shift
  cases=$((cases + 1))
  if "$@"; then echo "ok   [$name]"; else echo "FAIL [$name]"; failures=$((failures + 1)); fi
}

# ------------------------------------------------------------ ONNX structure and attributes
mkdir onnx && (cd onnx && python3 "$here/make_onnx.py") || { echo "cannot generate the ONNX inputs"; exit 2; }
o=onnx
expect_ok    "onnx: valid control model"      "$bin" inspect $o/valid.onnx
expect_error "onnx: empty file"               "empty\.onnx.*empty file"            "$bin" inspect $o/empty.onnx
expect_error "onnx: garbage bytes"            "garbage\.onnx.*not a valid ONNX"    "$bin" inspect $o/garbage.onnx
expect_error "onnx: truncated"                "truncated\.onnx"                    "$bin" inspect $o/truncated.onnx
expect_error "onnx: no graph"                 "no_graph\.onnx.*no graph"           "$bin" inspect $o/no_graph.onnx
expect_error "onnx: ir_version 0"             "ir0\.onnx.*ir_version"              "$bin" inspect $o/ir0.onnx
expect_error "onnx: opset 9999"               "opset 9999"                         "$bin" inspect $o/opset9999.onnx
expect_error "onnx: cycle"                    "node 'add'.*cycle"                  "$bin" inspect $o/cycle.onnx
expect_error "onnx: undefined input"          "node 'relu'.*'nowhere'"             "$bin" inspect $o/undefined_input.onnx
expect_error "onnx: two writers of a value"   "node 'r2'.*more than one node"      "$bin" inspect $o/two_writers.onnx
expect_error "onnx: empty operator type"      "node 'nameless'.*no operator type"  "$bin" inspect $o/empty_op_type.onnx
expect_error "onnx: input without shape"      "input 'x' has no shape"             "$bin" inspect $o/input_no_shape.onnx
expect_error "onnx: input not a tensor"       "input 'x' is not a tensor"          "$bin" inspect $o/input_not_tensor.onnx
expect_error "onnx: negative batch"           "input 'x'.*-3.*not positive"        "$bin" inspect $o/batch_negative.onnx
expect_error "onnx: zero batch"               "input 'x'.*size 0"                  "$bin" inspect $o/batch_zero.onnx
expect_error "onnx: negative dimension"       "input 'x'.*-4"                      "$bin" inspect $o/dim_negative.onnx
expect_error "onnx: symbolic dimension"       "input 'x'.*symbolic"                "$bin" inspect $o/dim_symbolic.onnx
expect_error "onnx: huge dimensions"          "input 'x'.*implausible"             "$bin" inspect $o/dims_huge.onnx
expect_error "onnx: node name with newline"   "node 'evil\\\\x0adnncost: error: forged'" "$bin" inspect $o/node_name_newline.onnx
expect_error "onnx: node name with NUL/ESC"   "node 'cut\\\\x00here\\\\x1b\[31m'"  "$bin" inspect $o/node_name_nul.onnx
expect_error "onnx: 1 MB node name"           "bytes left out"                     "$bin" inspect $o/node_name_huge.onnx
expect_error "onnx: value name with BEL/CR"   "'gh\\\\x07ost\\\\x0d'"              "$bin" inspect $o/value_name_control.onnx
expect_ok    "onnx: invalid UTF-8 name, table" "$bin" inspect $o/node_name_bad_utf8.onnx
check        "onnx: invalid UTF-8 name, table escaped" grep -q 'bad\\xff\\xfe\\xc3name' out.txt
expect_ok    "onnx: invalid UTF-8 name, --json" "$bin" inspect --json $o/node_name_bad_utf8.onnx
check        "onnx: invalid UTF-8 name, --json is JSON" python3 -c 'import json,sys; json.load(open("out.txt"))'
expect_ok    "onnx: unknown operator, declared shape (kept as unknown)" "$bin" inspect $o/unknown_op.onnx
expect_error "attr: strides 0"                "node 'conv'.*'strides'"             "$bin" inspect $o/conv_stride0.onnx
expect_error "attr: group 0"                  "node 'conv'.*'group'"               "$bin" inspect $o/conv_group0.onnx
expect_error "attr: negative pads"            "node 'conv'.*'pads'"                "$bin" inspect $o/conv_pads_negative.onnx
expect_error "attr: auto_pad=GARBAGE"         "node 'conv'.*'auto_pad'.*'GARBAGE'" "$bin" inspect $o/conv_auto_pad_garbage.onnx
expect_error "attr: dilation 2^40"            "node 'conv'"                        "$bin" inspect $o/conv_dilation_huge.onnx
expect_error "attr: ceil_mode 7"              "node 'pool'.*'ceil_mode'"           "$bin" inspect $o/pool_ceil_mode7.onnx
expect_error "attr: transB 5"                 "node 'gemm'.*'transB'"              "$bin" inspect $o/gemm_transB_5.onnx
expect_error "attr: float strides"            "node 'conv'.*strides"               "$bin" inspect $o/attr_wrong_type.onnx

# ------------------------------------------------------------ shapes declared against the operator
expect_error "shape: MatMul [3,2,8]x[5,8,4]"  "node 'matmul'"                      "$bin" inspect $o/matmul_broadcast.onnx
expect_error "shape: MatMul declared [2,5]"   "node 'matmul'"                      "$bin" inspect $o/matmul_declared_wrong.onnx
expect_error "shape: MatMul declared rank 3"  "node 'matmul'"                      "$bin" inspect $o/matmul_rank_wrong.onnx
expect_error "shape: Reshape two -1"          "node 'reshape'"                     "$bin" inspect $o/reshape_two_minus1.onnx
expect_error "shape: Reshape to -5"           "node 'reshape'"                     "$bin" inspect $o/reshape_minus5.onnx
expect_error "shape: Reshape 24 to 25"        "node 'reshape'"                     "$bin" inspect $o/reshape_wrong_size.onnx
expect_error "shape: Reshape 0-copy declared wrong" "node 'reshape'"               "$bin" inspect $o/reshape_zero_copy_wrong.onnx
expect_error "shape: Flatten axis 100"        "node 'flatten'"                     "$bin" inspect $o/flatten_axis100.onnx
expect_error "shape: Add [2,3]+[4,3]"         "node 'add'"                         "$bin" inspect $o/add_broadcast.onnx
expect_error "shape: Concat off-axis mismatch" "node 'concat'"                     "$bin" inspect $o/concat_mismatch.onnx
expect_error "shape: Gemm inner mismatch"     "node 'gemm'"                        "$bin" inspect $o/gemm_k_mismatch.onnx
expect_error "shape: Conv channel mismatch"   "node 'conv'"                        "$bin" inspect $o/conv_channels.onnx
expect_error "shape: Conv declared wrong"     "node 'conv'"                        "$bin" inspect $o/conv_declared_wrong.onnx
expect_error "shape: Transpose perm [0,0]"    "node 'transpose'"                   "$bin" inspect $o/transpose_perm.onnx
expect_error "shape: Relu declared [1,5]"     "node 'relu'"                        "$bin" inspect $o/relu_declared_wrong.onnx
expect_error "shape: Softmax axis 7"          "node 'softmax'"                     "$bin" inspect $o/softmax_axis.onnx
expect_error "shape: value_info [9,9]"        "node 'r1'"                          "$bin" inspect $o/value_info_wrong.onnx
expect_ok    "shape: Reshape 0-copy right"    "$bin" inspect $o/reshape_zero_copy.onnx
check        "shape: Reshape 0-copy gives [2,12]" grep -q '\[2,12\]' out.txt
expect_ok    "shape: MatMul broadcast right"  "$bin" inspect $o/matmul_broadcast_ok.onnx
check        "shape: MatMul gives [3,2,4]"    grep -q '\[3,2,4\]' out.txt

# ------------------------------------------------------------ further models: huge shapes, malformed tensors
expect_error "more: ConstantOfShape 2^60"     "node 'cos'.*implausible"            "$bin" inspect $o/const_huge.onnx
expect_error "more: Expand 2^62"              "node 'expand'.*implausible"         "$bin" inspect $o/expand_huge.onnx
expect_error "more: Tile 2^80"                "node 'tile'"                        "$bin" inspect $o/tile_huge.onnx
expect_error "more: Resize scales 1e9"        "node 'resize'.*implausible"         "$bin" inspect $o/resize_huge.onnx
expect_error "more: Pad 2^40"                 "node 'pad'"                         "$bin" inspect $o/pad_huge.onnx
expect_error "more: Pad -20 on 8"             "node 'pad'"                         "$bin" inspect $o/pad_negative.onnx
expect_error "more: Range 2^50"               "range"                              "$bin" inspect $o/range_huge.onnx
expect_error "more: Range delta 0"            "range|node 'r'"                     "$bin" inspect $o/range_zero_delta.onnx
expect_error "more: initializer 2^124 elements" "init_dims_overflow\.onnx.*tensor 'w'" "$bin" inspect $o/init_dims_overflow.onnx
expect_error "more: initializer dimension -1" "init_negative_dim\.onnx.*tensor 'w'" "$bin" inspect $o/init_negative_dim.onnx
expect_error "more: raw data too short"       "tensor 'w'.*bytes of raw data"      "$bin" inspect $o/init_raw_short.onnx
expect_ok    "more: external data (shape only)" "$bin" inspect $o/external_data.onnx
expect_ok    "more: external data ../dev/zero (not read)" "$bin" inspect $o/external_zero.onnx
expect_error "more: If without branches"      "node 'if'"                          "$bin" inspect $o/if_node.onnx
expect_error "more: Loop without body"        "node 'loop'"                        "$bin" inspect $o/loop_no_body.onnx
expect_error "more: Split of 1 into 2"        "node 'split'"                       "$bin" inspect $o/split_zero.onnx
expect_error "more: Gather index 7 of a shape" "Gather"                            "$bin" inspect $o/shape_chain_bad.onnx
expect_error "more: Gather index 10 of extent 10" "node 'embed'.*index 10 is out of range" "$bin" inspect $o/gather_index_out_of_range.onnx
expect_ok    "more: Gather indices -10 and 9 of extent 10" "$bin" inspect $o/gather_index_negative_ok.onnx
expect_error "more: space --sample, unknown option" "unknown option 'colour'"      "$bin" space ofa --sample 2 --space-options colour=red
expect_error "more: space --sample, bad value" "option resolution"                 "$bin" space ofa --sample 2 --space-options resolution=abc
expect_error "more: ofa resolution 100000"   "resolution override must be in"   "$bin" space ofa --sample 1 --space-options resolution=100000
expect_error "more: space info, unknown option" "unknown option 'colour'"          "$bin" space kws --space-options colour=red
expect_error "more: Conv kernel 5 on 2x2"     "node 'conv'"                        "$bin" inspect $o/conv_kernel_bigger.onnx
expect_error "more: MaxPool kernel 9 on 2x2"  "node 'pool'"                        "$bin" inspect $o/maxpool_kernel_bigger.onnx
expect_error "more: MatMul of scalars"        "node 'mm'"                          "$bin" inspect $o/matmul_scalar.onnx
expect_error "more: Cast to 999"              "node 'cast'"                        "$bin" inspect $o/cast_bad_to.onnx
expect_error "more: element type 999"         "relu"                               "$bin" inspect $o/elem_type_bad.onnx
expect_error "more: input declared twice"     "input 'x' is declared twice"        "$bin" inspect $o/dup_input.onnx
expect_ok    "more: output that is the input" "$bin" inspect $o/output_is_input.onnx
expect_error "more: no graph outputs"         "no outputs"                         "$bin" inspect $o/no_outputs.onnx
expect_error "more: node without outputs"     "no outputs|node 'relu'"             "$bin" inspect $o/node_no_outputs.onnx
expect_ok    "more: Sum of 100,000 inputs"    "$bin" inspect $o/many_inputs.onnx
expect_error "more: custom domain without opset" "foo"                             "$bin" inspect $o/deep_custom_domain.onnx
expect_error "more: custom domain, huge shape" "foo"                               "$bin" inspect $o/custom_domain_huge.onnx
expect_error "more: two default opsets"       "two opsets"                         "$bin" inspect $o/opset_dup.onnx
expect_error "more: negative ir_version"      "ir_version"                         "$bin" inspect $o/ir_negative.onnx
expect_error "more: BatchNorm 5 channels on 3" "node 'bn'"                         "$bin" inspect $o/batchnorm_mismatch.onnx
expect_error "more: LSTM hidden_size -4"      "node 'lstm'"                        "$bin" inspect $o/lstm_bad.onnx
expect_error "more: Einsum ij->kk"            "node 'einsum'"                      "$bin" inspect $o/einsum_bad.onnx
expect_error "more: TopK k 99 of 3"           "node 'topk'"                        "$bin" inspect $o/topk_k_huge.onnx

# ------------------------------------------------------------ CSV data sets
head -n 41 "$data/nb201/latency_ms.csv" > small.csv
hdr=$(head -n 1 small.csv)
train=(train --target pixel3 --preset additive --train 10 --val 10)
: > empty.csv
head -n 1 small.csv > header_only.csv
{ echo "$hdr"; sed -n 2,41p small.csv | sed -E 's/,[^,]*,([^,]*)$/,1e300,\1/'; } > huge_targets.csv
{ echo "$hdr"; sed -n 2,41p small.csv | sed -E 's/,[^,]*,([^,]*)$/,1e-300,\1/'; } > tiny_targets.csv
{ echo "$hdr"; sed -n 2,3p small.csv; printf '"unterminated,1,2,3,4,5,6\n'; } > quote.csv
{ echo "$hdr"; sed -n 2,40p small.csv; printf 'bad\x00key\x1b[2J\xff,1,2,3,4,5,6\n'; } > control.csv
{ echo "$hdr"; sed -n 2,41p small.csv; printf '"line\nbreak",1,2,3,4,5,6\n'; } > newline_key.csv
{ echo "$hdr"; sed -n 2,5p small.csv; head -c 2000000 /dev/zero | tr '\0' 'a'; echo ",1,2,3,4,5,6"; } > long_line.csv
{ echo "$hdr"; sed -n 2,41p small.csv; echo "|x~0|,1,2"; } > short_row.csv
{ printf '\xef\xbb\xbf'; cat small.csv; } > bom.csv
ONE_LINE=1 expect_error "csv: empty file"     "empty\.csv"                         "$bin" "${train[@]}" --data empty.csv --out m.dnnc
ONE_LINE=0 expect_error "csv: header only"    "header_only\.csv"                   "$bin" "${train[@]}" --data header_only.csv --out m.dnnc
ONE_LINE=0 expect_error "csv: missing target column" "nosuch"                      "$bin" train --target nosuch --preset additive --data small.csv --out m.dnnc
ONE_LINE=0 expect_error "csv: targets 1e300"  "huge_targets\.csv"                  "$bin" "${train[@]}" --data huge_targets.csv --out m.dnnc
check        "csv: targets 1e300 said out of range" grep -q "outside the plausible range" err.txt
ONE_LINE=0 expect_error "csv: targets 1e-300" "tiny_targets\.csv"                  "$bin" "${train[@]}" --data tiny_targets.csv --out m.dnnc
ONE_LINE=0 expect_error "csv: unterminated quote" "quote\.csv"                     "$bin" "${train[@]}" --data quote.csv --out m.dnnc
ONE_LINE=0 expect_error "csv: control bytes, strict" "control\.csv:41"             "$bin" "${train[@]}" --strict --data control.csv --out m.dnnc
expect_ok    "csv: control bytes skipped"     "$bin" "${train[@]}" --data control.csv --out m.dnnc
check        "csv: skipped key printed escaped" grep -q 'bad\\x00key\\x1b\[2J\\xff' err.txt
ONE_LINE=0 expect_error "csv: newline in key, strict" "newline_key\.csv:42"        "$bin" "${train[@]}" --strict --data newline_key.csv --out m.dnnc
ONE_LINE=0 expect_error "csv: 2 MB field, strict" "long_line\.csv:6"               "$bin" "${train[@]}" --strict --data long_line.csv --out m.dnnc
ONE_LINE=0 expect_error "csv: short row, strict" "short_row\.csv:42"               "$bin" "${train[@]}" --strict --data short_row.csv --out m.dnnc
expect_ok    "csv: UTF-8 byte-order mark"     "$bin" "${train[@]}" --data bom.csv --out m.dnnc
expect_error "csv: a directory"               "is a directory"                     "$bin" "${train[@]}" --data . --out m.dnnc
expect_error "csv: /dev/zero"                 "not a regular file"                 "$bin" "${train[@]}" --data /dev/zero --out m.dnnc
rm -f m.dnnc

# ------------------------------------------------------------ model files (.dnnc)
"$bin" "${train[@]}" --data small.csv --out good.dnnc >/dev/null 2>&1 || echo "cannot train the model-file fixture"
size=$(wc -c < good.dnnc)
: > empty.dnnc
head -c $((size / 2)) good.dnnc > half.dnnc
cp good.dnnc flipped.dnnc && printf '\x5a' | dd of=flipped.dnnc bs=1 seek=$((size / 2)) conv=notrunc status=none
LC_ALL=C awk 'BEGIN { srand(7); for (i = 0; i < 4096; i++) printf "%c", int(rand() * 256) }' > random.dnnc  # seeded: the same bytes every run
{ cat good.dnnc; echo trailing; } > trailing.dnnc
predict=(predict --space nb201 "$(sed -n 2p small.csv | cut -d, -f1)")
expect_ok    "model: good file predicts"      "$bin" "${predict[@]}" --model good.dnnc
expect_error "model: empty"                   "empty\.dnnc"                        "$bin" "${predict[@]}" --model empty.dnnc
expect_error "model: truncated"               "half\.dnnc"                         "$bin" "${predict[@]}" --model half.dnnc
expect_error "model: one byte changed"        "flipped\.dnnc"                      "$bin" "${predict[@]}" --model flipped.dnnc
expect_error "model: random bytes"            "random\.dnnc"                       "$bin" "${predict[@]}" --model random.dnnc
expect_error "model: trailing bytes"          "trailing\.dnnc"                     "$bin" "${predict[@]}" --model trailing.dnnc
expect_error "model: a directory"             "is a directory"                     "$bin" "${predict[@]}" --model .
expect_error "model: missing"                 "nosuch\.dnnc"                       "$bin" "${predict[@]}" --model nosuch.dnnc

# ------------------------------------------------------------ options
expect_error "option: no subcommand"          "subcommand"                         "$bin"
expect_error "option: unknown command"        "unknown command 'frobnicate'"        "$bin" frobnicate
expect_error "option: unknown option"         "--frobnicate"                       "$bin" nb201 5 --frobnicate
expect_error "option: repeated option"        "--batch"                            "$bin" nb201 5 --batch 1 --batch 2
expect_error "option: --pop 1"                "--pop.*population size"             "$bin" moo --problem zdt1 --pop 1
expect_error "option: --seed -5"              "--seed.*not a seed"                 "$bin" moo --problem zdt1 --seed -5
expect_error "option: --threads 10000"        "--threads.*thread count"            "$bin" moo --problem zdt1 --threads 10000
expect_error "option: --overhead-us 1e308"    "--overhead-us.*outside"             "$bin" nb201 5 --peak-gflops 1 --bandwidth-gbs 1 --overhead-us 1e308
expect_error "option: --peak-gflops 1e300"    "--peak-gflops.*outside"             "$bin" nb201 5 --peak-gflops 1e300 --bandwidth-gbs 1
expect_error "option: --bandwidth-gbs nan"    "--bandwidth-gbs.*finite"            "$bin" nb201 5 --peak-gflops 1 --bandwidth-gbs nan
expect_error "option: --batch 0"              "--batch.*batch size"                "$bin" nb201 5 --batch 0
expect_error "option: --pc 2"                 "--pc.*outside"                      "$bin" moo --problem zdt1 --pc 2
expect_error "option: value with newline"     "--batch"                            "$bin" nb201 5 --batch $'1\n2'
expect_error "option: nb201 index 99999"      "99999"                              "$bin" nb201 99999
expect_error "option: ARCH with control bytes" "nb201"                             "$bin" nb201 $'|x\x1b[2J~0|'
expect_ok    "option: --help still works"     "$bin" --help
check        "option: --help prints usage"    grep -qi "usage\|subcommands" out.txt
expect_ok    "option: train --help"           "$bin" train --help
expect_ok    "option: --threads 1024 capped"  "$bin" moo --problem zdt1 --threads 1024 --gens 2 --pop 8
check        "option: --threads cap announced" grep -q "warning: --threads 1024 capped" err.txt

# ------------------------------------------------------------ output paths
long254=$(printf 'a%.0s' $(seq 1 250)).csv
long256=$(printf 'a%.0s' $(seq 1 252)).csv
ONE_LINE=0 expect_error "out: --out X --report X" "--out and --report"            "$bin" "${train[@]}" --data small.csv --out same.x --report same.x
check        "out: --out X --report X: nothing written" test ! -e same.x
check        "out: --out X --report X: before any work" bash -c '! grep -q "rows (" err.txt'
ONE_LINE=0 expect_error "out: --out is the data" "--data and --out"                "$bin" "${train[@]}" --data small.csv --out ./small.csv
expect_ok    "out: 254-byte file name"        "$bin" moo --problem zdt1 --gens 2 --pop 8 --front "$long254"
check        "out: 254-byte file name written" test -s "$long254"
ONE_LINE=0 expect_error "out: 256-byte file name, before training" "limit of 255"  "$bin" "${train[@]}" --data small.csv --out "$long256"
check        "out: 256-byte name: failed before training" bash -c '! grep -q "rows (" err.txt'
expect_error "out: directory missing"         "does not exist"                     "$bin" nb201 5 --onnx nodir/x.onnx
expect_error "out: empty path"                "--onnx.*empty output path"          "$bin" nb201 5 --onnx ""
expect_error "out: a directory"               "is a directory"                     "$bin" nb201 5 --onnx .
cases=$((cases + 1))
if "$bin" nb201 5 --onnx /dev/fd/3 3>&1 >/dev/null 2>err.txt | cat > piped.onnx && [ -s piped.onnx ] && "$bin" inspect piped.onnx >/dev/null 2>&1; then
  echo "ok   [out: --onnx /dev/fd/3 into a pipe]"
else bad "out: --onnx /dev/fd/3 into a pipe" "no importable model through the pipe"; fi
cases=$((cases + 1))
if "$bin" moo --problem zdt1 --gens 2 --pop 8 --front /dev/stdout 2>err.txt | cat > piped.csv && grep -q '^f1,f2' piped.csv; then
  echo "ok   [out: --front /dev/stdout into a pipe]"
else bad "out: --front /dev/stdout into a pipe" "no CSV through the pipe"; fi
mkfifo fifo
expect_error "out: FIFO without a reader"     "FIFO with no reader"                "$bin" nb201 5 --onnx fifo
check        "out: FIFO still a FIFO"         test -p fifo
if [ -w /dev/full ]; then
  expect_error "out: /dev/full"               "/dev/full"                          "$bin" nb201 5 --onnx /dev/full
fi
ln -s nowhere/x.onnx dangling.onnx
expect_error "out: dangling link into a missing directory" "does not exist"        "$bin" nb201 5 --onnx dangling.onnx
expect_ok    "out: /dev/null"                 "$bin" nb201 5 --onnx /dev/null
check        "out: /dev/null still a device"  test -c /dev/null

# ------------------------------------------------------------ signals
set -m  # background jobs of a script would otherwise ignore SIGINT
for sig in INT TERM; do
  cases=$((cases + 1))
  timeout -s KILL 20 "$bin" moo --problem zdt1 --gens 100000000 --pop 100 --front sig.csv >/dev/null 2>&1 &
  pid=$!
  sleep 0.3
  kill -s $sig $pid
  wait $pid
  rc=$?
  if [ $rc -ge 128 ] && [ ! -e sig.csv ] && ! stray_temps; then echo "ok   [signal: SIG$sig mid-run: exit $rc, nothing left]"
  else bad "signal: SIG$sig mid-run" "exit $rc, sig.csv $( [ -e sig.csv ] && echo present || echo absent)"; fi
done
set +m

echo "$((cases - failures)) of $cases hostile-input cases behaved"
[ $failures -eq 0 ]
