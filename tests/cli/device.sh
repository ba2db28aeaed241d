#!/usr/bin/env bash
# `dnncost device build|calibrate|residual|info|extrapolate` and `predict --per-kernel` end to end with a
# fake runner whose latency is planted (0.02 ms a run plus 1 ms per 4 MB of model file): a small build,
# a resumed build that measures nothing again, a refit from its saved samples (with the roofline base
# and without it), in-context samples given up for single kernels (this runner does not profile) or
# required and missing (a clear error, no model), kernels beyond the samples measured and priced,
# kernels measured inside a network and alone, a listing measured again, kernels that add up
# to the network's latency, a calibration whose factor scales every prediction, a fit to measured
# networks, and damaged model files as clear errors.
# usage: device.sh DNNCOST_BINARY DATA_DIR WORK_DIR
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"
runner="bash $(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/measure/fake_runner.sh size $PWD"
fast=(--rounds 1 --max-rounds 1 --warmup 0 --repeats 1 --round-ms 0)
small=(--budget 0 --per-kind 26 --prior-networks 1 --adaptive-rounds 1 --adaptive-samples 20 --probe-measurements 120
       --prior "$data/onnx/squeezenet1_1.onnx")
net=$data/onnx/mobilenet_v2.onnx

"$bin" device build --runner "$runner" --out dev.dnnc "${small[@]}" "${fast[@]}" --json > build.json 2> build.err ||
  { fail "device build"; tail -3 build.err; }
[ -s dev.dnnc ] || fail "device build wrote no model"
for key in kinds rules_text run_overhead_ms samples build_seconds host single_kernel_chunks measured_again; do
  grep -q "\"$key\"" build.json || fail "device build --json lacks $key"
done
grep -q '"regressor"' build.json || fail "device build: no kind got a regressor"
# this runner does not profile: in-context samples (--in-context auto) give way to single kernels
grep -q '"in_context": false' build.json && grep -q 'does not profile' build.json ||
  fail "device build with a runner that does not profile: no fallback to single kernels said"
"$bin" device build --runner "$runner" --out dev2.dnnc --work dev.dnnc.work "${small[@]}" "${fast[@]}" --json \
  > again.json 2> /dev/null || fail "device build, resumed"
grep -q '"measured": 0' again.json || fail "a resumed build measured again what its store holds"
[ "$("$bin" predict --model dev.dnnc "$net" 2>/dev/null)" = "$("$bin" predict --model dev2.dnnc "$net" 2>/dev/null)" ] ||
  fail "a resumed build gave another model from the same measurements"

# refit: the same model from the build's saved samples, measuring nothing; per-kind regressors too
[ -s dev.dnnc.work/kernel_samples.json ] || fail "device build saved no kernel_samples.json"
"$bin" device build --refit --work dev.dnnc.work --out refit.dnnc > /dev/null 2> refit.err ||
  { fail "device build --refit"; tail -3 refit.err; }
[ "$("$bin" predict --model dev.dnnc "$net" 2>/dev/null)" = "$("$bin" predict --model refit.dnnc "$net" 2>/dev/null)" ] ||
  fail "device build --refit gave another model from the same samples"
"$bin" device build --refit --per-kind-regressors --work dev.dnnc.work --out kind.dnnc --json > kind.json 2> kind.err ||
  { fail "device build --refit --per-kind-regressors"; tail -3 kind.err; }
grep -q '"family_regressors": false' kind.json || fail "device build --refit --per-kind-regressors: not recorded"
"$bin" predict --model kind.dnnc "$net" > /dev/null 2> kind_p.err || fail "predict with per-kind regressors"
# the candidate regressors named: every kind fitted chose the one candidate; an unknown one is an error
"$bin" device build --refit --regressors mlp --work dev.dnnc.work --out mlp.dnnc --json > mlp.json 2> mlp.err ||
  { fail "device build --refit --regressors mlp"; tail -3 mlp.err; }
python3 - mlp.json <<'PY' || fail "device build --regressors mlp: a kind chose another regressor"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["regressors"] == ["mlp"], j["regressors"]
chosen = [k["regressor"] for k in j["kinds"] if "regressor" in k]
assert chosen and all(c == "roofline-mlp" for c in chosen), chosen
PY
"$bin" device build --refit --regressors mlp forest --work dev.dnnc.work --out bad.dnnc > /dev/null 2> forest.err &&
  fail "device build --regressors forest accepted"
grep -q "regressor 'forest' is not a candidate here" forest.err || fail "device build --regressors forest: unclear error"
[ -e bad.dnnc ] && fail "device build with an unknown regressor wrote a model"
# profiles required: a runner that cannot profile, and one whose profiles give no sample, stop the
# build with a clear error and no model
tiny=(--networks 2 --network-params 0.05 --rules dev.dnnc.work/fusion.rules --per-kind 2 --adaptive-rounds 0 --budget 0)
"$bin" device build --runner "$runner" --in-context on --out ctx.dnnc "${tiny[@]}" "${fast[@]}" > /dev/null 2> ctx.err &&
  fail "device build --in-context on with a runner that cannot profile succeeded"
grep -q "cannot profile" ctx.err || fail "device build --in-context on, no profiles: unclear error: $(cat ctx.err)"
profiling="bash $(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/measure/fake_runner.sh profile $PWD"
"$bin" device build --runner "$profiling" --in-context on --out ctx2.dnnc "${tiny[@]}" "${fast[@]}" > /dev/null 2> ctx2.err &&
  fail "device build whose profiles gave no sample succeeded"
grep -q "none of the 2 networks gave an in-context sample" ctx2.err && grep -q "networks.kernels.jsonl" ctx2.err ||
  fail "device build without in-context samples: unclear error: $(cat ctx2.err)"
[ -e ctx.dnnc ] || [ -e ctx2.dnnc ] && fail "a device build without the samples it needs wrote a model"
"$bin" device build --runner "$runner" --in-context maybe --out ctx.dnnc > /dev/null 2> ctx3.err &&
  fail "device build --in-context maybe accepted"
"$bin" device build --help > build_help.txt
grep -q -- "--in-context" build_help.txt && grep -q -- "--networks" build_help.txt ||
  fail "device build --help does not list --in-context and --networks"
# kernels four times the FLOPs of every sample, priced with the roofline base and without it:
# --plan measures nothing, then the fake runner measures them as the build measured its samples
"$bin" device build --refit --no-roofline-base --work dev.dnnc.work --out trees.dnnc --json > trees.json 2> trees.err ||
  { fail "device build --refit --no-roofline-base"; tail -3 trees.err; }
grep -q '"roofline_base": false' trees.json || fail "device build --refit --no-roofline-base: not recorded"
# whole networks beyond the build's: listed and priced without measuring; this runner cannot
# profile them, which their kernels' times need
"$bin" device extrapolate --model dev.dnnc --networks 2 --plan --json > nets_plan.json 2> nets_plan.err ||
  { fail "device extrapolate --networks --plan"; tail -3 nets_plan.err; }
python3 -c '
import json, sys
d = json.load(open("nets_plan.json"))
sys.exit(0 if len(d["networks"]) == 2 and all(n["predicted_ms"]["dev.dnnc"] > 0 and n["measured_ms"] is None
                                               for n in d["networks"]) and d["kernels"] == [] else 1)' ||
  fail "device extrapolate --networks --plan: not two priced networks"
"$bin" device extrapolate --model dev.dnnc --networks 1 --runner "$runner" "${fast[@]}" --work nets > /dev/null \
  2> nets.err && fail "device extrapolate --networks with a runner that cannot profile"
grep -q "without kernels" nets.err || fail "device extrapolate --networks, no profile: unclear error $(cat nets.err)"
"$bin" device extrapolate --model dev.dnnc --networks 1 --isolated --plan > /dev/null 2> nets_iso.err &&
  fail "device extrapolate --networks --isolated"
grep -q "takes no" nets_iso.err || fail "device extrapolate --networks --isolated: unclear error $(cat nets_iso.err)"
"$bin" device extrapolate --model dev.dnnc --model trees.dnnc --plan --json > plan.json 2> plan.err ||
  { fail "device extrapolate --plan"; tail -3 plan.err; }
grep -q '"flops_ratio"' plan.json || fail "device extrapolate --plan listed no kernel"
[ -e dev.dnnc.extrapolation ] && fail "device extrapolate --plan measured"
"$bin" device extrapolate --model dev.dnnc --model trees.dnnc --runner "$runner" "${fast[@]}" --json > extra.json \
  2> extra.err || { fail "device extrapolate"; tail -3 extra.err; }
grep -q '"measured_ms": [0-9]' extra.json || fail "device extrapolate measured no kernel"
grep -q '"within_20"' extra.json || fail "device extrapolate: no summary per model"
grep -q '"in_network": true' extra.json || fail "device extrapolate: kernels not measured inside a network by default"
# this runner does not profile: each kernel is judged by its network's latency, and says so; each
# is measured beside the sample it was grown from
grep -q '"judged": "network"' extra.json && grep -q "does not profile" extra.err ||
  fail "device extrapolate with a runner that does not profile: not judged by the networks, or not said"
python3 -c "
import json, sys
d = json.load(open('extra.json'))
sys.exit(0 if all(k['edge']['measured_ms'] > 0 and k['edge']['config']['h'] <= k['config']['h'] for k in d['kernels'])
         and d['from_edge_summary'] else 1)" || fail "device extrapolate: the kernels' edges not measured"
"$bin" device extrapolate --model dev.dnnc --runner "$runner" "${fast[@]}" --isolated --work iso --json > iso.json \
  2> iso.err || { fail "device extrapolate --isolated"; tail -3 iso.err; }
grep -q '"in_network": false' iso.json || fail "device extrapolate --isolated: not said in its output"
grep -q '"measured_ms": [0-9]' iso.json || fail "device extrapolate --isolated measured no kernel"
# the kernels of a listing, again: their configurations rebuilt and checked against their keys
"$bin" device extrapolate --model dev.dnnc --kernels iso.json --isolated --plan --json > again.json 2> again.err ||
  { fail "device extrapolate --kernels"; tail -3 again.err; }
python3 -c "
import json, sys
a = json.load(open('iso.json'))['kernels']; b = json.load(open('again.json'))['kernels']
sys.exit(0 if [k['key'] for k in a] == [k['key'] for k in b] and a else 1)" ||
  fail "device extrapolate --kernels: not the listed kernels"
# a listing measured inside networks (the default) reads back too
"$bin" device extrapolate --model dev.dnnc --kernels extra.json --plan --json > again_net.json 2> again_net.err ||
  { fail "device extrapolate --kernels of an in-network listing"; tail -3 again_net.err; }
python3 -c "
import json, sys
a = json.load(open('extra.json'))['kernels']; b = json.load(open('again_net.json'))['kernels']
sys.exit(0 if [k['key'] for k in a] == [k['key'] for k in b] and a else 1)" ||
  fail "device extrapolate --kernels: not the kernels of the in-network listing"
python3 -c "
import json
d = json.load(open('extra.json')); d['kernels'][0]['edge']['key'] = '00'
json.dump(d, open('bad_edge.json', 'w'))"
"$bin" device extrapolate --model dev.dnnc --kernels bad_edge.json --plan > /dev/null 2> bad_edge.err &&
  fail "device extrapolate --kernels with an edge that does not rebuild"
grep -q "bad_edge.json: kernel 0 .*edge" bad_edge.err || fail "device extrapolate --kernels, bad edge: unclear error $(cat bad_edge.err)"
echo '{"kernels": [{"kind": "Gemm", "key": "00", "config": {"n": 1}}]}' > bad_kernels.json
"$bin" device extrapolate --model dev.dnnc --kernels bad_kernels.json --plan > /dev/null 2> bad_kernels.err &&
  fail "device extrapolate --kernels with a damaged listing"
grep -q "bad_kernels.json: kernel 0" bad_kernels.err || fail "device extrapolate --kernels: unclear error $(cat bad_kernels.err)"
echo '{"kernels": [{"kind": "Gemm", "key": "00", "grown_from": 7, "config": {"n": 1, "c": 8, "h": 1, "w": 1, "k": 8, "kh": 1, "kw": 1, "sh": 1, "sw": 1, "groups": 1}}]}' > bad_kernels2.json
"$bin" device extrapolate --model dev.dnnc --kernels bad_kernels2.json --plan > /dev/null 2> bad_kernels2.err &&
  fail "device extrapolate --kernels with a mistyped field"
grep -q "bad_kernels2.json: kernel 0" bad_kernels2.err || fail "device extrapolate --kernels: unclear error $(cat bad_kernels2.err)"
# a listing cut short is malformed JSON, said with where it breaks, not "no listing"
head -c $(($(wc -c < iso.json) / 2)) iso.json > cut_kernels.json
"$bin" device extrapolate --model dev.dnnc --kernels cut_kernels.json --plan > /dev/null 2> cut_kernels.err &&
  fail "device extrapolate --kernels with a truncated listing"
grep -q "cut_kernels.json: not JSON: parse error at line [0-9]*, column [0-9]*" cut_kernels.err ||
  fail "device extrapolate --kernels, a truncated listing: unclear error $(cat cut_kernels.err)"
# samples none of which rebuilds: the error names the file
python3 -c "
import json
d = json.load(open('dev.dnnc.work/kernel_samples.json'))
for s in d['samples']: s['features'] = [0.0] * len(s['features'])
json.dump(d, open('zeroed_samples.json', 'w'))"
"$bin" device extrapolate --model dev.dnnc --samples zeroed_samples.json --plan > /dev/null 2> zeroed.err &&
  fail "device extrapolate --samples with no sample that rebuilds"
grep -q "no sample of zeroed_samples.json could be grown: [0-9]* could not be rebuilt" zeroed.err ||
  fail "device extrapolate --samples, no sample rebuilds: unclear error $(cat zeroed.err)"
# sizes that divide by zero when the kernel's graph is built (a crash once), and a mistyped flag
for field in sh groups; do
  python3 -c "
import json, sys
d = json.load(open('iso.json')); d['kernels'][0]['config'][sys.argv[1]] = 0
json.dump(d, open('zero_' + sys.argv[1] + '.json', 'w'))" "$field"
  "$bin" device extrapolate --model dev.dnnc --kernels "zero_$field.json" --plan > /dev/null 2> "zero_$field.err"
  rc=$?
  [ $rc -ge 1 ] && [ $rc -le 100 ] && grep -q "zero_$field.json: kernel 0" "zero_$field.err" ||
    fail "device extrapolate --kernels with $field = 0: exit $rc, $(tail -1 "zero_$field.err")"
done
python3 -c "
import json
d = json.load(open('iso.json')); d['in_network'] = 'yes'
json.dump(d, open('bad_flag.json', 'w'))"
"$bin" device extrapolate --model dev.dnnc --kernels bad_flag.json --plan > /dev/null 2> bad_flag.err &&
  fail "device extrapolate --kernels with a mistyped in_network"
grep -q 'bad_flag.json: "in_network"' bad_flag.err || fail "device extrapolate --kernels, bad in_network: unclear error $(cat bad_flag.err)"
"$bin" device extrapolate --model dev.dnnc > /dev/null 2> extra_none.err && fail "device extrapolate without --runner"
grep -q -- "--plan" extra_none.err || fail "device extrapolate without --runner: unclear error $(cat extra_none.err)"
touch work_file
"$bin" device extrapolate --model dev.dnnc --runner "$runner" "${fast[@]}" --work work_file > /dev/null 2> work_file.err &&
  fail "device extrapolate with a file as --work"
grep -q "device extrapolate: cannot create the work directory 'work_file'" work_file.err ||
  fail "device extrapolate with a file as --work: unclear error $(cat work_file.err)"
mkdir -p damaged.work
python3 -c "
import json
d = json.load(open('dev.dnnc.work/kernel_samples.json')); d['samples'][3]['latency_ms'] = -1
json.dump(d, open('damaged.work/kernel_samples.json', 'w'))"
"$bin" device build --refit --work damaged.work --out x.dnnc > /dev/null 2> refit_damaged.err && fail "--refit on a negative latency"
grep -q "damaged.work/kernel_samples.json: sample 4: latency_ms -1" refit_damaged.err ||
  fail "--refit on a negative latency: the error does not name the file and sample: $(cat refit_damaged.err)"
"$bin" device build --refit --work nowhere --out x.dnnc > /dev/null 2> refit_none.err && fail "--refit without samples"
grep -q "kernel_samples.json" refit_none.err || fail "--refit without samples: the error does not name the file"
"$bin" device build --out x.dnnc > /dev/null 2> norunner.err && fail "device build without --runner"
grep -q -- "--runner" norunner.err || fail "device build without --runner: unclear error"
# counts and seeds that an unsigned option would wrap to 2^64 - 1 (--per-kind -1 drew without end)
for bad in "build --runner false --out x.dnnc --per-kind -1" "build --runner false --out x.dnnc --adaptive-samples -1" \
           "build --runner false --out x.dnnc --seed -1" "residual --model dev.dnnc --data x.csv --out x.dnnc --seed -1" \
           "networks --out nets_wrap --seed 99999999999999999999"; do
  timeout 20 "$bin" device $bad > /dev/null 2> wrap.err
  rc=$?
  [ $rc -ge 1 ] && [ $rc -lt 124 ] && grep -Eq "is not a (sample count|seed)" wrap.err ||
    fail "device $bad: exit $rc, $(tail -1 wrap.err)"
done

# predict: one FILE<TAB>ms line; --per-kernel lines that add up (with the run overhead) to it
"$bin" predict --model dev.dnnc "$net" > p.out 2> p.err || { fail "predict with a device model"; tail -3 p.err; }
[ "$(wc -l < p.out)" -eq 1 ] && [ "$(cut -f1 p.out)" = "$net" ] || fail "predict: not one FILE<TAB>ms line"
total=$(cut -f2 p.out)
"$bin" predict --model dev.dnnc --per-kernel "$net" > k.out 2> /dev/null || fail "predict --per-kernel"
sum=$(awk -F'\t' 'NF == 4 { s += $3 } END { printf "%.9g", s }' k.out)
awk -v a="$sum" -v b="$total" 'BEGIN { exit !(a > 0 && (a - b) ^ 2 <= (1e-4 * b) ^ 2) }' ||
  fail "predict --per-kernel: kernels and overhead add up to $sum ms, the total is $total ms"
"$bin" predict --model dev.dnnc --per-kernel --json "$net" > k.json 2> /dev/null || fail "predict --per-kernel --json"
grep -q '"breakdown"' k.json || fail "predict --per-kernel --json has no breakdown"
# a file name with a line break: escaped, so that every line is still one input's
cp "$net" "$(printf 'two\nlines.onnx')"
"$bin" predict --model dev.dnnc --per-kernel "$(printf 'two\nlines.onnx')" > odd.out 2> odd.err || fail "predict on an odd file name"
[ "$(grep -c '^two\\x0alines.onnx	' odd.out)" -eq "$(wc -l < odd.out)" ] ||
  fail "predict --per-kernel: a line break in a file name forged a line: $(head -3 odd.out)"
grep -q '"fallbacks"' k.json || fail "predict --per-kernel --json has no fallbacks"
grep -q '"beyond_samples"' k.json || fail "predict --per-kernel --json has no beyond_samples"
# a network of 4,096 times the work of every sample: its kernels are noted, on stderr and in the JSON
"$bin" nb201 5000 --batch 4096 --onnx big.onnx --weights random > /dev/null || fail "nb201 --batch 4096 --onnx"
"$bin" predict --model dev.dnnc --per-kernel --json big.onnx > big.json 2> big.err || fail "predict a batch of 4096"
python3 -c "import json,sys
b = json.load(open('big.json'))['breakdown'][0]['beyond_samples']
sys.exit(0 if b and all('x the work of the largest sample' in l for l in b) else 1)" ||
  fail "predict --per-kernel --json: no beyond_samples for a batch of 4096: $(head -c 300 big.json)"
grep -q "note: big.onnx: priced beyond the samples: kernel" big.err || fail "no note of the kernels beyond: $(head -3 big.err)"

# calibrate: four networks measured here, one global factor; applied, it multiplies every
# prediction, and when leave-one-out says it does not help, the model is written unchanged
"$bin" device calibrate --model dev.dnnc --runner "$runner" --out cal.dnnc --shots 4 --global-only "${fast[@]}" --json \
  > cal.json 2> cal.err || { fail "device calibrate"; tail -3 cal.err; }
factor=$(grep -o '"factor": [0-9.e+-]*' cal.json | awk '{ print $2 }')
[ "$(grep -c '"measured_ms"' cal.json)" -eq 4 ] || fail "device calibrate: not 4 shots"
for key in given_mape loo_mape candidates family_factors family_factors_from intensity_factor profiled_kernels shrinkage \
  measured_again; do
  grep -q "\"$key\"" cal.json || fail "device calibrate --json lacks $key"
done
grep -q '"intensity_factor": null' cal.json && ! grep -q 'intensity slope' cal.json ||
  fail "device calibrate --global-only tried an intensity slope"
# one factor needs no profiles: none asked for
grep -q '"profiled_kernels": 0' cal.json && ! grep -q "profil" cal.err ||
  fail "device calibrate --global-only profiled its shots"
after=$("$bin" predict --model cal.dnnc "$net" 2> /dev/null | cut -f2)
if grep -q '"applied": true' cal.json; then
  awk -v a="$after" -v b="$total" -v f="$factor" 'BEGIN { exit !(f > 0 && (a - f * b) ^ 2 <= (1e-4 * a) ^ 2) }' ||
    fail "calibrated prediction $after is not factor $factor times $total"
else
  [ "$after" = "$total" ] || fail "a calibration that was not applied changed the prediction ($total -> $after)"
fi
# the user's own networks as shots, a factor per kernel family where leave-one-out says it helps
"$bin" device calibrate --model dev.dnnc --runner "$runner" --out own.dnnc "${fast[@]}" --json \
  --shots "$data/onnx/squeezenet1_1.onnx" "$data/onnx/mobilenet_v2.onnx" "$data/onnx/resnet18-v1-7-no-weight.onnx" \
  > own.json 2> own.err || { fail "device calibrate --shots FILE..."; tail -3 own.err; }
[ "$(grep -c '"measured_ms"' own.json)" -eq 3 ] || fail "device calibrate --shots FILE...: not 3 shots"
[ "$(grep -c '"loo_mape"' own.json)" -ge 6 ] || fail "device calibrate --shots FILE...: not every penalty cross-validated"
grep -q '"fit": "intensity slope from shot latencies"' own.json ||
  fail "device calibrate --shots FILE...: no intensity slope fitted to the latencies among the candidates"
# this runner does not profile: found on the first shot, said, and the shots timed without
grep -q '"profiled_kernels": 0' own.json && grep -q "without kernels" own.err ||
  fail "device calibrate with a runner that does not profile: no fallback said"
"$bin" device calibrate --model dev.dnnc --runner "$runner" --out x.dnnc --shots 0 > /dev/null 2> zero.err &&
  fail "device calibrate --shots 0 accepted"
grep -q "count in \[1, 100\]" zero.err || fail "device calibrate --shots 0: unclear error: $(cat zero.err)"
# a count gone wrong is no file name; a file that is not there is named with its option
"$bin" device calibrate --model dev.dnnc --runner "$runner" --out x.dnnc --shots -1 > /dev/null 2> neg.err &&
  fail "device calibrate --shots -1 accepted"
grep -q -- "--shots -1 is not a count in \[1, 100\]" neg.err || fail "device calibrate --shots -1: unclear error: $(cat neg.err)"
"$bin" device calibrate --model dev.dnnc --runner "$runner" --out x.dnnc --shots missing.onnx > /dev/null 2> nofile.err &&
  fail "device calibrate --shots with a missing file accepted"
grep -q -- "--shots: cannot open 'missing.onnx'" nofile.err ||
  fail "device calibrate --shots with a missing file: unclear error: $(cat nofile.err)"
# the same shots from their results store: the same factor (to the store's six digits), without measuring
"$bin" device calibrate --model dev.dnnc --data cal.dnnc.work/shots.csv --shots 4 --global-only --out cal2.dnnc --json \
  > cal2.json 2> cal2.err || { fail "device calibrate --data"; tail -3 cal2.err; }
factor2=$(grep -o '"factor": [0-9.e+-]*' cal2.json | awk '{ print $2 }')
awk -v a="$factor" -v b="$factor2" 'BEGIN { exit !((a - b) ^ 2 <= (1e-5 * a) ^ 2) }' ||
  fail "device calibrate --data on the shots' own store: factor $factor2, not $factor"
# --no-intensity-slope: family factors may be tried, an intensity slope not
"$bin" device calibrate --model dev.dnnc --data cal.dnnc.work/shots.csv --shots 4 --no-intensity-slope --out cal4.dnnc \
  --json > cal4.json 2> cal4.err || { fail "device calibrate --no-intensity-slope"; tail -3 cal4.err; }
grep -q '"fit": "shot latencies"' cal4.json && ! grep -q 'intensity slope' cal4.json ||
  fail "device calibrate --no-intensity-slope: the candidates are not the family factors alone"
"$bin" device calibrate --model dev.dnnc --out cal3.dnnc > /dev/null 2> none.err && fail "device calibrate without shots"
grep -q -- "--runner" none.err || fail "device calibrate without --runner or --data: the error does not say what to give"
# rules replaced after the build: the directives added and removed, the model priced under them
# (the fake device's build found no fusion: a rule file with one, the model's device kept)
printf 'dnncost-fusion-rules 1\nfuse Conv Relu operands=none\n' > relu.rules
"$bin" device rules --model dev.dnnc --rules relu.rules --out relu.dnnc --json > rules.json 2> rules.err ||
  { fail "device rules"; tail -3 rules.err; }
python3 -c 'import json, sys; d = json.load(open("rules.json")); sys.exit(0 if d["added"] == ["fuse Conv Relu operands=none"] and d["removed"] == [] else 1)' ||
  fail "device rules --json: not the one directive added: $(cat rules.json)"
"$bin" device info --model relu.dnnc > relu_info.txt || fail "device info on a model with replaced rules"
grep -q '^fuse Conv Relu operands=none$' relu_info.txt || fail "device rules: the written model lacks the new rule"
"$bin" device info --model relu.dnnc --json > relu_info.json || fail "device info --json on a model with replaced rules"
python3 -c 'import json, sys; sys.exit(0 if json.load(open("relu_info.json"))["build"]["rules_replaced_from"] == "relu.rules" else 1)' ||
  fail "device info --json: the build record does not say the rules were replaced"
grep -q "^device $(sed -n 's/^device //p' relu_info.txt)" relu_info.txt || fail "device rules: no device in the written rules"
printf 'dnncost-fusion-rules 1\ndevice another\n' > other.rules
"$bin" device rules --model dev.dnnc --rules other.rules --out x.dnnc > /dev/null 2> other.err &&
  fail "device rules accepted the rules of another device"
grep -q "another" other.err || fail "device rules: the error does not name the device: $(cat other.err)"
# a rule the parse reads but the checks refuse, and a control character in an operator's name
# (printed as it is by the text output): refused, naming file and line, with no model written
printf 'dnncost-fusion-rules 1\n# folds take constants\nfold Conv BatchNormalization\n' > fold.rules
"$bin" device rules --model dev.dnnc --rules fold.rules --out fold.dnnc > /dev/null 2> fold.err &&
  fail "device rules accepted a fold without operands=constant"
grep -q "fold.rules:3: fold Conv BatchNormalization must require operands=constant" fold.err ||
  fail "device rules, a fold without operands=constant: the error does not name the line: $(cat fold.err)"
printf 'dnncost-fusion-rules 1\nfuse Conv Re\033[31mlu\n' > esc.rules
"$bin" device rules --model dev.dnnc --rules esc.rules --out esc.dnnc > /dev/null 2> esc.err &&
  fail "device rules accepted a control character in an operator's name"
grep -q 'esc.rules:2: operator kind "Re\\u001b\[31mlu" has a control character' esc.err ||
  fail "device rules, a control character: unclear error: $(cat -v esc.err)"
[ -e fold.dnnc ] || [ -e esc.dnnc ] && fail "device rules refused the rules and wrote a model"
# the same name inside a model's own rules (its checksum made right): refused on reading
python3 - relu.dnnc esc_model.dnnc <<'PY'
import struct, sys, zlib
b = open(sys.argv[1], "rb").read()[:-4].replace(b"fuse Conv Relu", b"fuse Conv Re\x1bu")
open(sys.argv[2], "wb").write(b + struct.pack("<I", zlib.crc32(b)))
PY
"$bin" device info --model esc_model.dnnc > esc_info.txt 2> esc_info.err &&
  fail "device info printed a model whose rules have a control character: $(cat -v esc_info.txt | head -3)"
grep -q 'esc_model.dnnc (fusion rules):[0-9]*: operator kind "Re\\u001bu" has a control character' esc_info.err ||
  fail "device info, a control character in the model's rules: unclear error: $(cat -v esc_info.err)"
# an execute line is a set of operators: the same ones in another order or split over lines change nothing
"$bin" device info --model dev.dnnc --json |
  python3 -c 'import json, sys; print("".join(l + "\n" for l in json.load(sys.stdin)["rules_text"].splitlines() if not l.startswith("execute ")), end="")' > base.rules
{ cat base.rules; echo 'execute Reshape Flatten'; } > exec1.rules
{ cat base.rules; printf 'execute Flatten\nexecute Reshape\n'; } > exec2.rules
"$bin" device rules --model dev.dnnc --rules exec1.rules --out exec1.dnnc > /dev/null || fail "device rules with an execute line"
"$bin" device rules --model exec1.dnnc --rules exec2.rules --out exec2.dnnc --json > exec.json || fail "device rules, execute split"
python3 -c 'import json, sys; d = json.load(open("exec.json")); sys.exit(0 if d["added"] == [] and d["removed"] == [] else 1)' ||
  fail "device rules: the same executed operators listed as changed: $(cat exec.json)"
"$bin" device info --model cal.dnnc --json > info.json || fail "device info"
if grep -q '"applied": true' cal.json; then
  grep -q '"calibration_shots": 4' info.json || fail "device info: not 4 calibration shots"
fi

# residual: fitted to networks measured on the device, the sample-boundary rates and scale alone
"$bin" measure --runner "$runner" --device fake --space nb201 --sample 12 --seed 3 --out nets.csv "${fast[@]}" > /dev/null 2> nets.err ||
  { fail "measure networks for device residual"; tail -3 nets.err; }
"$bin" device residual --model dev.dnnc --data nets.csv --no-residual --out fit.dnnc --json > fit.json 2> fit.err ||
  { fail "device residual --no-residual"; tail -3 fit.err; }
for key in sample_boundary sample_boundary_fit calibration_factor validation_mape_before validation_mape_after; do
  grep -q "\"$key\"" fit.json || fail "device residual --json lacks $key"
done
grep -q '"kept": "zero residual' fit.json || fail "device residual --no-residual trained a residual"
# no scale by default: the machine's level is left to calibration
grep -Eq '"calibration_factor": 1(\.0)?[,}]' fit.json || fail "device residual fitted a scale without --boundary-scale free"
# with a free scale, the fitted scale is the model's calibration factor
"$bin" device residual --model dev.dnnc --data nets.csv --no-residual --boundary-scale free --out fit_free.dnnc \
  --json > fit_free.json 2> fit_free.err || { fail "device residual --boundary-scale free"; tail -3 fit_free.err; }
fitted=$(grep -o '"calibration_factor": [0-9.e+-]*' fit_free.json | awk '{ print $2 }')
"$bin" device info --model fit_free.dnnc --json > fit_info.json || fail "device info on a fitted model"
grep -q "\"calibration_factor\": $fitted" fit_info.json || fail "device info: not the fitted factor $fitted"
grep -q '"sample_boundary"' fit_info.json || fail "device info --json lacks the sample boundary"
# a scale alone: no rates, the scale is the calibration factor, every price the kernel sum times it
"$bin" device residual --model dev.dnnc --data nets.csv --no-residual --boundary-scale alone --out fit_alone.dnnc \
  --json > fit_alone.json 2> fit_alone.err || { fail "device residual --boundary-scale alone"; tail -3 fit_alone.err; }
python3 - fit_alone.json dev.dnnc fit_alone.dnnc "$bin" <<'PY' || fail "device residual --boundary-scale alone: not the kernel sum times its factor"
import json, subprocess, sys
fit = json.load(open(sys.argv[1]))
rates = fit["sample_boundary"]
assert all(rates[k] == 0 for k in ("ms_per_kernel", "ms_per_output_mb", "ms_per_reorder_mb")), rates
factor = fit["calibration_factor"]
assert factor > 0, factor
def prices(model):
    out = subprocess.run([sys.argv[4], "predict", "--model", model, "--space", "nb201", "--json",
                          "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_1x1~1|none~2|"],
                         check=True, capture_output=True, text=True).stdout
    return [p["latency"] for p in json.loads(out)["predictions"]]
for a, b in zip(prices(sys.argv[2]), prices(sys.argv[3])):
    assert abs(b - factor * a) <= 1e-6 * a, (a, b, factor)
PY
"$bin" device residual --model dev.dnnc --data nets.csv --boundary-scale half --out x.dnnc > /dev/null 2> scale.err &&
  fail "device residual --boundary-scale half succeeded"
grep -q "free" scale.err || fail "device residual --boundary-scale half: the error does not name the choices"
awk -v b="$(grep -o '"validation_mape_before": [0-9.e+-]*' fit.json | awk '{ print $2 }')" \
    -v a="$(grep -o '"validation_mape_after": [0-9.e+-]*' fit.json | awk '{ print $2 }')" \
    'BEGIN { exit !(a <= b * 1.05 + 1e-9) }' || fail "device residual made the validation networks worse"
# networks measured at four times their time (awk keeps six digits): a quarter of the median ratio,
# and a warning whenever that ratio strays beyond 1.25 either way
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "latency_ms") c = i; print; next }
                  { $c = 4 * $c; print }' nets.csv > slow.csv
"$bin" device residual --model dev.dnnc --data slow.csv --no-residual --out x.dnnc --json > slow.json 2> slow.err ||
  { fail "device residual on the slowed networks"; tail -3 slow.err; }
ratio_of() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["median_ratio_before"])' "$1"; }
python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if abs(b - a / 4) <= 1e-5 * a else 1)' \
  "$(ratio_of fit.json)" "$(ratio_of slow.json)" || fail "device residual: the median ratio is not a quarter on networks four times as slow"
for f in fit slow; do
  if python3 -c 'import sys; r = float(sys.argv[1]); sys.exit(0 if 0.8 <= r <= 1.25 else 1)' "$(ratio_of $f.json)"; then
    grep -q "at a median" $f.err && fail "device residual warned on $f with a median ratio within 1.25: $(cat $f.err)"
  else
    grep -q "at a median" $f.err || fail "device residual: no warning for the median ratio $(ratio_of $f.json) ($f)"
  fi
done
# the two stores together: each store's own median ratio, and a warning naming the one that strays
"$bin" device residual --model dev.dnnc --data nets.csv slow.csv --no-residual --out x.dnnc --json > mixed.json 2> mixed.err ||
  { fail "device residual on two stores"; tail -3 mixed.err; }
python3 -c 'import json, sys; r = json.load(open("mixed.json"))["median_ratio_per_store"]
ok = [json.load(open(f + ".json"))["median_ratio_before"] for f in ("fit", "slow")]
sys.exit(0 if abs(r["nets.csv"] - ok[0]) <= 1e-9 * ok[0] and abs(r["slow.csv"] - ok[1]) <= 1e-9 * ok[1] else 1)' ||
  fail "device residual: the per-store median ratios are not each store's own: $(cat mixed.json)"
grep -q "networks of slow.csv at a median" mixed.err || fail "device residual: no warning naming slow.csv: $(cat mixed.err)"
if python3 -c 'import sys; r = float(sys.argv[1]); sys.exit(0 if 0.8 <= r <= 1.25 else 1)' "$(ratio_of fit.json)"; then
  grep -q "networks of nets.csv at a median" mixed.err && fail "device residual warned on nets.csv: $(cat mixed.err)"
fi
# the stores' sidecars compared: a copy of nets.csv whose reference network ran 1.5 times as long
# is named, in a warning and in --json's store_warnings; one store alone gives none
cp nets.csv ref_slow.csv
python3 - nets.device.json ref_slow.device.json <<'PY' || fail "device residual: no reference in the fake runner's sidecar to slow"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["references"], d
for r in d["references"]:
    r["latency_ms"] *= 1.5
    r["values_ms"] = [v * 1.5 for v in r["values_ms"]]
json.dump(d, open(sys.argv[2], "w"))
PY
"$bin" device residual --model dev.dnnc --data nets.csv ref_slow.csv --no-residual --out x.dnnc --json > ref_mix.json \
  2> ref_mix.err || { fail "device residual on stores whose references differ"; tail -3 ref_mix.err; }
grep -q "ref_slow.csv: the reference network measured" ref_mix.err ||
  fail "device residual: no warning for a store whose reference ran 1.5 times as long: $(cat ref_mix.err)"
python3 -c 'import json, sys; w = json.load(open("ref_mix.json"))["store_warnings"]
sys.exit(0 if len(w) == 1 and w[0].startswith("ref_slow.csv: the reference network") else 1)' ||
  fail "device residual --json: store_warnings is not the one slowed reference: $(cat ref_mix.json)"
python3 -c 'import json, sys; sys.exit(0 if json.load(open("fit.json"))["store_warnings"] == [] else 1)' ||
  fail "device residual on one store warned of mixing stores: $(cat fit.json)"
# a damaged row of a store is left out and named, file and line
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "latency_ms") c = i } NR == 3 { $c = "nan" } { print }' \
  nets.csv > nan_row.csv
"$bin" device residual --model dev.dnnc --data nan_row.csv --no-residual --out x.dnnc > /dev/null 2> nan_row.err ||
  { fail "device residual on a store with a NaN row"; tail -3 nan_row.err; }
grep -q "skipped nan_row.csv:3: column 'latency_ms': NaN" nan_row.err ||
  fail "device residual: a NaN row left out unsaid: $(cat nan_row.err)"
# neither part: the kernel sum, an earlier fit (here the free scale and its rates) removed; dev.dnnc never had one
"$bin" device residual --model fit_free.dnnc --data nets.csv --no-residual --no-boundary --out sum.dnnc --json \
  > sum.json 2> sum.err || { fail "device residual --no-residual --no-boundary"; tail -3 sum.err; }
python3 - sum.json dev.dnnc sum.dnnc fit_free.dnnc "$bin" <<'PY' || fail "device residual --no-residual --no-boundary: not the kernel sum"
import json, subprocess, sys
fit = json.load(open(sys.argv[1]))
rates = fit["sample_boundary"]
assert all(rates[k] == 0 for k in ("ms_per_kernel", "ms_per_output_mb", "ms_per_reorder_mb")), rates
assert rates["max_output_mb"] is None and rates["max_reorder_mb"] is None, rates
assert fit["calibration_factor"] == 1 and "sample_boundary_fit" not in fit, fit
def prices(model):
    out = subprocess.run([sys.argv[5], "predict", "--model", model, "--space", "nb201", "--json",
                          "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_1x1~1|none~2|",
                          "|skip_connect~0|+|nor_conv_1x1~0|none~1|+|avg_pool_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|"],
                         check=True, capture_output=True, text=True).stdout
    return [p["latency"] for p in json.loads(out)["predictions"]]
assert prices(sys.argv[3]) == prices(sys.argv[2]), (prices(sys.argv[3]), prices(sys.argv[2]))
assert prices(sys.argv[4]) != prices(sys.argv[2]), "the fitted model priced as the kernel sum: the test shows nothing"
PY

# damaged files: clear errors naming them
size=$(wc -c < dev.dnnc)
head -c $((size / 2)) dev.dnnc > half.dnnc
"$bin" predict --model half.dnnc "$net" > /dev/null 2> half.err && fail "a truncated device model predicted"
grep -q "half.dnnc" half.err || fail "a truncated device model: the error does not name the file"
"$bin" device info --model "$net" > /dev/null 2> notmodel.err && fail "device info read an ONNX file as a model"
grep -q "mobilenet_v2.onnx" notmodel.err || fail "device info on an ONNX file: the error does not name it"
"$bin" device build --runner "bash -c 'exit 3'" --out never.dnnc "${small[@]}" "${fast[@]}" > /dev/null 2> crash.err &&
  fail "device build with a runner that dies succeeded"
[ -e never.dnnc ] && fail "a failed device build left a model file"
# the calibration shots and the build's networks as files
"$bin" device networks --out nets --count 2 > /dev/null 2> nets.err || { fail "device networks"; tail -3 nets.err; }
[ "$(wc -l < nets/networks.tsv)" -eq 2 ] && [ -s nets/000.onnx ] && [ -s nets/001.onnx ] ||
  fail "device networks: not two ONNX files and their names"
"$bin" inspect nets/000.onnx > /dev/null 2>&1 || fail "device networks wrote a file inspect cannot read"
cut -f2 nets/networks.tsv | grep -q '^cnn:' || fail "device networks: the first shot is no synthesised CNN"
"$bin" device networks --out nets2 --kind context --seed 777 --count 1 > /dev/null 2>&1 &&
  [ "$(wc -l < nets2/networks.tsv)" -eq 1 ] || fail "device networks --kind context"
"$bin" device networks --out nets3 --kind nonsense > /dev/null 2> kind.err && fail "device networks --kind nonsense accepted"
finish device
