#!/usr/bin/env bash
# `dnncost nb201 ARCH --onnx OUT --weights none|random`: the weight-free file keeps weights as
# marked graph inputs; the weighted one holds them as initializers, the same seed writes the same
# bytes, and a bad choice or a weight option without --onnx is refused.
# usage: onnx_export.sh DNNCOST_BINARY DATA_DIR WORK_DIR
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"

arch=5
"$bin" nb201 $arch --onnx bare.onnx > /dev/null 2> bare.err || fail "export without weights: $(cat bare.err)"
"$bin" nb201 $arch --onnx w1.onnx --weights random --weight-seed 1 > /dev/null 2> w1.err || fail "export with weights: $(cat w1.err)"
"$bin" nb201 $arch --onnx w1b.onnx --weights random --weight-seed 1 > /dev/null 2>&1 || fail "export with weights, again"
"$bin" nb201 $arch --onnx w2.onnx --weights random --weight-seed 2 > /dev/null 2>&1 || fail "export with weights, seed 2"
grep -q "dnncost:weight" bare.onnx || fail "the weight-free file has no marked weight inputs"
grep -q "dnncost:weight" w1.onnx && fail "the weighted file still has marked weight inputs"
[ "$(stat -c %s w1.onnx)" -gt $((10 * $(stat -c %s bare.onnx))) ] || fail "the weighted file is not much larger than the bare one"
cmp -s w1.onnx w1b.onnx || fail "the same seed wrote different files"
cmp -s w1.onnx w2.onnx && fail "different seeds wrote the same file"
# the written file imports again: inspect it
"$bin" inspect w1.onnx --json > inspect.json 2> inspect.err || fail "inspect of the weighted file: $(cat inspect.err)"
"$bin" nb201 $arch --onnx x.onnx --weights gaussian > /dev/null 2> bad.err && fail "an unknown --weights value is accepted"
grep -q "gaussian" bad.err || fail "the error does not name the bad value: $(cat bad.err)"
"$bin" nb201 $arch --weights random > /dev/null 2> needs.err && fail "--weights without --onnx is accepted"
grep -q -- "--onnx" needs.err || fail "the error does not name --onnx: $(cat needs.err)"

finish onnx_export
