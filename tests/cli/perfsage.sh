#!/usr/bin/env bash
# The perfsage preset from the command line: several targets in one model (train, eval,
# predict), the computed target ir_peak_memory_bytes, a one-target preset refusing two, the
# additive preset's --coefficients, and a mixed-space training split upsampled.
# usage: perfsage.sh DNNCOST_BINARY DATA_DIR WORK_DIR
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"

head -n 41 "$data/fbnet/latency_ms.csv" > small.csv
arch="$(sed -n 50p "$data/fbnet/latency_ms.csv" | cut -d, -f1)"
"$bin" train --data small.csv --space fbnet --target gold_6240,silver_4114 --preset perfsage --train 20 --val 10 \
  --epochs 3 --threads 1 --seed 1 --out m.dnnc > train.out 2> train.err || { fail "training two targets"; tail -3 train.err; }
grep -q "^test gold_6240 (n=10)" train.out || fail "train does not report gold_6240: $(cat train.out)"
grep -q "^test silver_4114 (n=10)" train.out || fail "train does not report silver_4114: $(cat train.out)"
[ -s m.dnnc ] || fail "no model file"

"$bin" eval --model m.dnnc --data small.csv --space fbnet --target gold_6240,silver_4114 --json > eval.json 2> eval.err \
  || fail "eval of two targets: $(cat eval.err)"
grep -q '"silver_4114"' eval.json || fail "eval --json lacks the second target: $(cat eval.json)"
"$bin" eval --model m.dnnc --data small.csv --space fbnet --target gold_6240 > /dev/null 2> one.err \
  || fail "eval of the first target alone: $(cat one.err)"
"$bin" eval --model m.dnnc --data small.csv --space fbnet --target gold_6240,silver_4114,titanx_64 > /dev/null 2> three.err \
  && fail "eval with three targets for a two-target model succeeds"
grep -q "^dnncost: error: .*predicts 2" three.err || fail "eval with three targets: $(cat three.err)"

"$bin" predict --model m.dnnc --space fbnet "$arch" > predict.out 2> predict.err || fail "predict: $(cat predict.err)"
[ "$(head -1 predict.out)" = "$(printf 'input\tgold_6240\tsilver_4114')" ] || fail "predict header: $(head -1 predict.out)"
[ "$(wc -l < predict.out)" -eq 2 ] || fail "predict: expected a header and one line, got: $(cat predict.out)"
awk -F'\t' 'NR == 2 && !($2 > 0 && $3 > 0) { exit 1 }' predict.out || fail "predictions not positive: $(cat predict.out)"

"$bin" train --data small.csv --space fbnet --target gold_6240,silver_4114 --preset additive --train 20 --val 10 \
  --out a.dnnc > /dev/null 2> additive.err && fail "additive accepts two targets"
grep -q "^dnncost: error: .*preset 'additive' learn one" additive.err || fail "additive, two targets: $(cat additive.err)"
[ -e a.dnnc ] && fail "a failed training wrote a model file"

# the computed target: the exact IR peak memory, no column in the file, learnt with latency
"$bin" train --data small.csv --space fbnet --target gold_6240,ir_peak_memory_bytes --preset perfsage --train 20 \
  --val 10 --epochs 2 --threads 1 --seed 1 --out ir.dnnc > ir.out 2> ir.err || { fail "training with ir_peak_memory_bytes"; tail -3 ir.err; }
grep -q "^test ir_peak_memory_bytes (n=10)" ir.out || fail "train does not report ir_peak_memory_bytes: $(cat ir.out)"
"$bin" eval --model ir.dnnc --data small.csv --space fbnet --target gold_6240,ir_peak_memory_bytes > /dev/null 2> ire.err \
  || fail "eval with ir_peak_memory_bytes: $(cat ire.err)"

# the additive preset's coefficient signs; other presets refuse the option
"$bin" train --data small.csv --space fbnet --target gold_6240 --preset additive --train 20 --val 10 \
  --coefficients nonnegative --out nn.dnnc > nn.out 2> nn.err || fail "additive --coefficients nonnegative: $(cat nn.err)"
grep -q "non-negative coefficients" nn.err nn.out || fail "additive --coefficients nonnegative: not reported: $(cat nn.err)"
"$bin" train --data small.csv --space fbnet --target gold_6240 --preset perfsage --train 20 --val 10 \
  --coefficients free --out x.dnnc > /dev/null 2> c.err && fail "perfsage accepts --coefficients"
grep -q "^dnncost: error: preset 'perfsage' has no option 'coefficients'" c.err || fail "perfsage --coefficients: $(cat c.err)"

# 36 FBNet and 6 KWS networks: the KWS ones are repeated to >= 10 % of the training split
"$bin" space kws --sample 6 --seed 3 > kws.txt 2> space.err || fail "dnncost space kws --sample: $(cat space.err)"
{
  echo "arch,latency"
  sed -n 2,37p small.csv | awk -F, '{ print "fbnet:" $1 "," $2 }'
  awk '{ print "kws:" $1 "," 0.5 + NR / 10 }' kws.txt
} > mixed.csv
"$bin" train --data mixed.csv --target latency --preset perfsage --train 40 --val 1 --epochs 2 --threads 1 \
  --out mixed.dnnc > mixed.out 2> mixed.err || { fail "training on two spaces"; tail -3 mixed.err; }
grep -q "2 search spaces in the training split; upsampled to" mixed.err || fail "no upsampling: $(cat mixed.err)"

finish perfsage
