#!/usr/bin/env bash
# `dnncost device check` end to end: fake runners that profile without an optimised model, do not
# profile, or answer malformed kernel lists (each a clear per-network failure, exit 3), one whose
# kernel times are planted multiples of the model's prices (found again by family), and, when
# Node.js and the bundled runner's packages are there, the committed "all" model's kernel pass
# against ONNX Runtime's own kernels on SqueezeNet and two NB201 networks (its agreement kept),
# and the rule files of data/devices/rules on a few networks at "all", "disabled" and "basic",
# and the rules --write-rules writes from wrong ones at "basic" (rewrites, merged repeats, drops).
# usage: device_check.sh DNNCOST_BINARY DATA_DIR WORK_DIR
tests="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$tests/cli/common.sh" "$@"
fake="bash $tests/measure/fake_runner.sh"
model=$data/devices/ort-cpu-all-1t.dnnc
net=$data/onnx/squeezenet1_1.onnx
export TMPDIR=$work

"$bin" device check --model "$model" --runner "$fake good $PWD" "$net" --json > plain.json 2> plain.err
rc=$?
[ $rc -eq 3 ] || fail "a runner that does not profile: exit $rc, expected 3"
grep -q '"without_profile": 1' plain.json || fail "a runner that does not profile is not counted as such"
grep -q 'does not profile' plain.json || fail "no reason given for the missing profile"
grep -q '"agreement": null' plain.json || fail "no network compared, and an agreement reported in JSON"

"$bin" device check --model "$model" --runner "$fake bad_kernels $PWD" "$net" > bad.txt 2> bad.err
rc=$?
[ $rc -eq 3 ] || fail "malformed kernels: exit $rc, expected 3"
grep -q 'bad_answer: kernel 0 has no finite non-negative "ms"' bad.err || { fail "malformed kernels: no clear reason"; cat bad.err; }
grep -q '^networks 1 (1 failed' bad.txt || fail "malformed kernels: not counted as failed"
grep -q 'agreement - (no network compared)' bad.txt || fail "no network compared, and an agreement reported: $(sed -n 2p bad.txt)"
# every network failed: no --kernels or --write-rules file (an empty one, or the rules unchanged,
# would read as this run's findings), and said
"$bin" device check --model "$model" --runner "$fake bad_kernels $PWD" "$net" --kernels none.jsonl \
  --write-rules none.rules > /dev/null 2> none.err
rc=$?
[ $rc -eq 3 ] || fail "every network failed: exit $rc, expected 3"
[ -e none.jsonl ] || [ -e none.rules ] && fail "every network failed, and device check wrote its output files"
grep -q "no network was profiled and compared: none.jsonl not written" none.err &&
  grep -q "none.rules not written" none.err || fail "every network failed: the files not written unsaid: $(cat none.err)"

"$bin" device check --model "$model" --runner "$fake profile $PWD" "$net" --json > noopt.json 2> noopt.err
rc=$?
[ $rc -eq 3 ] || fail "a missing optimised model: exit $rc, expected 3"
grep -q "the runner's optimised model" noopt.err || { fail "a missing optimised model: no clear reason"; cat noopt.err; }

# runs and seconds checked before a runner is asked: a NaN timeout read as -9.2e15 s, -1 repeats went to the runner
for bad in "--timeout nan" "--timeout 0" "--repeats 0" "--warmup -3"; do
  "$bin" device check --model "$model" --runner "$fake good $PWD" "$net" $bad > /dev/null 2> opt.err
  rc=$?
  [ $rc -ge 1 ] && [ $rc -ne 3 ] && [ $rc -lt 124 ] && grep -q -- "${bad%% *}" opt.err ||
    fail "device check $bad: exit $rc, $(tail -1 opt.err)"
done
# output paths checked before any network is profiled
rm -f requests.log
for out in --kernels --write-rules; do
  "$bin" device check --model "$model" --runner "$fake good $PWD" "$net" $out nodir/out > /dev/null 2> out.err &&
    fail "device check $out into a missing directory succeeded"
  grep -q "directory 'nodir' does not exist" out.err || fail "device check $out nodir/out: unclear error $(cat out.err)"
done
[ -e requests.log ] && fail "device check profiled networks before finding its output path unwritable"
"$bin" device check --model "$model" --runner "$fake good $PWD" --sample 2 > /dev/null 2> nospace.err
[ $? -ne 0 ] && grep -q -- '--sample needs --space' nospace.err || fail "--sample without --space accepted"

# the model's prices against the profiled times: a runtime (fake) that ran each kernel of the
# "disabled" pass under its last node's name, the convolutions at twice the model's price and every
# other kernel at half of it; by family, the ratios are those planted
disabled_model=$data/devices/ort-cpu-disabled-1t.dnnc
"$bin" predict --model "$disabled_model" --per-kernel "$net" --json > priced.json ||
  fail "predict --per-kernel on $net"
mkdir -p plant
python3 - priced.json plant/net0.onnx.profile <<'PY' || fail "planting the profile"
import json, sys
kernels = json.load(open(sys.argv[1]))["breakdown"][0]["kernels"]
planted = [{"name": k["nodes"][-1], "op": k["kernel"].split("+")[0],
            "ms": k["ms"] * (2.0 if k["kernel"].startswith("Conv") else 0.5)} for k in kernels]
open(sys.argv[2], "w").write('"latency_ms":[5.0],"kernels":' + json.dumps(planted))
PY
"$bin" device check --model "$disabled_model" --runner "$fake planted $PWD" "$net" --json > planted_prices.json \
  2> planted_prices.err || { fail "device check against planted kernel times"; tail -3 planted_prices.err; }
python3 - planted_prices.json priced.json <<'PY' || fail "device check: the planted ratios not found by family"
import json, sys
j = json.load(open(sys.argv[1]))
kernels = json.load(open(sys.argv[2]))["breakdown"][0]["kernels"]
fam = j["prices_by_family"]
# SqueezeNet at "disabled": 26 convolutions, each Relu apart, every kernel matched
ok = j["agreement"] == 1 and fam["Conv"]["kernels"] == 26 and sum(f["kernels"] for f in fam.values()) == len(kernels)
for name, f in fam.items():
    want = 2.0 if name == "Conv" else 0.5
    ok = ok and abs(f["profiled_over_priced"] - want) < 1e-6 * want and abs(f["median_ratio"] - want) < 1e-6 * want
net = j["per_network"][0]
ok = ok and len(net["kernel_prices"]) == len(kernels) and all(k["flops"] >= 0 and k["bytes"] > 0 for k in net["kernel_prices"])
print({name: (f["kernels"], round(f["profiled_over_priced"], 6)) for name, f in fam.items()})
sys.exit(0 if ok else 1)
PY
# under other rules than the model's, its prices are not its pass's: none given
"$bin" device check --model "$disabled_model" --rules "$data/devices/rules/ort-cpu-disabled.rules" \
  --runner "$fake planted $PWD" "$net" --json > planted_rules.json 2> /dev/null
grep -q '"prices_by_family": null' planted_rules.json || fail "device check --rules: prices given for another pass"

runner="$(cd "$tests/../runners/onnxruntime" && pwd)"
if command -v node >/dev/null 2>&1 && [ -d "$runner/node_modules/onnxruntime-node" ]; then
  "$bin" device check --model "$model" --runner "$runner/run --optimization all --threads 1" "$net" --json \
    --kernels kernels.jsonl > ort.json 2> ort.err
  rc=$?
  [ $rc -eq 0 ] || { fail "device check with ONNX Runtime: exit $rc"; tail -3 ort.err; }
  "$bin" device check --model "$model" --runner "$runner/run --optimization all --threads 1" --space nb201 --sample 2 \
    --seed 3 --json > ort_nb201.json 2> ort_nb201.err || { fail "device check on NB201 networks"; tail -3 ort_nb201.err; }
  # the committed model carries the rules of data/devices/rules: the agreement its build reached
  # (SqueezeNet 1.000, these NB201 networks 0.986; bench/results/kernel_check), a floor a little
  # below, fails when the pass drifts away from the runtime
  for case in ort.json:0.98 ort_nb201.json:0.96; do
    python3 - "${case%%:*}" "${case##*:}" <<'PY' || fail "${case%%:*}: agreement below ${case##*:}"
import json, sys
j = json.load(open(sys.argv[1]))
print(f"{sys.argv[1]}: agreement {j['agreement']:.3f} ({j['matched']} of {j['pass_kernels']} pass / {j['runtime_kernels']} runtime kernels)")
sys.exit(0 if j["agreement"] >= float(sys.argv[2]) else 1)
PY
  done
  [ "$(wc -l < kernels.jsonl)" -eq 1 ] && grep -q '"op":"Conv"' kernels.jsonl || fail "--kernels wrote no profile"
  # the rule files of data/devices/rules checked without a rebuild (--rules): a data/onnx network,
  # a ViT (its layer norms also in primitive operators) and NB201 networks at "all", OFA at
  # "disabled", SqueezeNet and a ViT at "basic"; floors a little below what was measured
  # (MobileNetV2 1.000, the ViT 1.000 and 0.996, the NB201 networks 0.986, OFA 1.000, "basic" 1.000)
  rules=$data/devices/rules
  check_rules() {  # OUT LEVEL [networks...]
    local out=$1 level=$2
    shift 2
    "$bin" device check --model "$data/devices/ort-cpu-$level-1t.dnnc" --rules "$rules/ort-cpu-$level.rules" \
      --runner "$runner/run --optimization $level --threads 1" "$@" --json > "$out" 2> "$out.err" ||
      { fail "device check --rules $level: $out"; tail -3 "$out.err"; }
  }
  check_rules rules_mobilenet.json all "$data/onnx/mobilenet_v2.onnx"
  check_rules rules_vit.json all --space vit --sample 1 --seed 7
  check_rules rules_vit_ln13.json all --space vit --space-options layer_norm=decomposed --sample 1 --seed 7
  check_rules rules_nb201.json all --space nb201 --sample 2 --seed 3
  check_rules rules_ofa_disabled.json disabled --space ofa --sample 1 --seed 7
  check_rules rules_squeezenet_basic.json basic "$data/onnx/squeezenet1_1.onnx"
  check_rules rules_vit_basic.json basic --space vit --sample 1 --seed 7
  for case in rules_mobilenet.json:0.98 rules_vit.json:0.98 rules_vit_ln13.json:0.98 rules_nb201.json:0.96 \
              rules_ofa_disabled.json:0.98 rules_squeezenet_basic.json:0.98 rules_vit_basic.json:0.98; do
    python3 - "${case%%:*}" "${case##*:}" <<'PY' || fail "${case%%:*}: agreement below ${case##*:}"
import json, sys
j = json.load(open(sys.argv[1]))
print(f"{sys.argv[1]}: agreement {j['agreement']:.3f} ({j['matched']} of {j['pass_kernels']} pass / {j['runtime_kernels']} runtime kernels)")
sys.exit(0 if j["agreement"] >= float(sys.argv[2]) else 1)
PY
  done
  # the rule changes the disagreements point at: SqueezeNet's 26 convolutions, each followed by a
  # Relu that ONNX Runtime fuses into it at "all" and runs apart at "disabled"
  "$bin" device check --model "$data/devices/ort-cpu-all-1t.dnnc" --rules "$rules/ort-cpu-disabled.rules" \
    --runner "$runner/run --optimization all --threads 1" "$net" --json > suggest_fuse.json 2> suggest_fuse.err ||
    { fail "device check, the disabled rules at all"; tail -3 suggest_fuse.err; }
  "$bin" device check --model "$data/devices/ort-cpu-all-1t.dnnc" \
    --runner "$runner/run --optimization disabled --threads 1" "$net" --json > suggest_drop.json 2> suggest_drop.err ||
    { fail "device check, the all rules at disabled"; tail -3 suggest_drop.err; }
  # --write-rules applies them: the disabled rules with Conv + Relu fused agree with "all" on SqueezeNet
  "$bin" device check --model "$data/devices/ort-cpu-all-1t.dnnc" --rules "$rules/ort-cpu-disabled.rules" \
    --runner "$runner/run --optimization all --threads 1" "$net" --write-rules fixed.rules > /dev/null 2>&1 &&
    grep -q '^fuse Conv Relu operands=none$' fixed.rules || fail "device check --write-rules: no Conv + Relu rule written"
  "$bin" device check --model "$data/devices/ort-cpu-all-1t.dnnc" --rules fixed.rules \
    --runner "$runner/run --optimization all --threads 1" "$net" --json > fixed.json 2> fixed.err ||
    { fail "device check with the written rules"; tail -3 fixed.err; }
  python3 -c 'import json, sys; sys.exit(0 if json.load(open("fixed.json"))["matched"] == 39 else 1)' ||
    fail "the written rules do not match SqueezeNet's 39 runtime kernels"
  for case in "suggest_fuse.json:fuse Conv Relu operands=none" "suggest_drop.json:drop fuse Conv Relu"; do
    python3 - "${case%%:*}" "${case#*:}" <<'PY' || fail "${case%%:*}: not the rule change '${case#*:}' for 26 kernels"
import json, sys
j = json.load(open(sys.argv[1]))
sys.exit(0 if {"rule": sys.argv[2], "kernels": 26} in j["suggested_rules"] else 1)
PY
  done
  # rewrites, merged repeats and fusion rules the pass must undo, from the rules ONNX Runtime's
  # prober discovered at "basic" (two of them, Split + MatMul and Split + Transpose, are wrong)
  cat > discovered.rules <<'RULES'
dnncost-fusion-rules 1
fuse MatMul Add operands=constant
fuse Split MatMul operands=activation
fuse Transpose Split operands=constant
fuse Split Transpose operands=none
RULES
  basic="$runner/run --optimization basic --threads 1"
  for case in "vit:rewrite MatMul+Add Gemm reshape-rank=3" "vit:rewrite Transpose+Split Split,Transpose,Transpose" \
              "ofa:rewrite HardSwish HardSigmoid,Mul" "nb201:merge-duplicates"; do
    space=${case%%:*} line=${case#*:}
    [ -f "written_$space.rules" ] ||
      "$bin" device check --model "$data/devices/ort-cpu-basic-1t.dnnc" --rules discovered.rules --runner "$basic" \
        --space "$space" --sample 1 --seed 7 --warmup 1 --repeats 1 --write-rules "written_$space.rules" \
        > /dev/null 2> "written_$space.err" || { fail "device check --write-rules at basic on $space"; tail -3 "written_$space.err"; }
    grep -qx "$line" "written_$space.rules" || fail "device check --write-rules on $space: no '$line'"
  done
  grep -q '^fuse Split' written_vit.rules && fail "device check --write-rules kept the Split fusions ONNX Runtime does not run"
  "$bin" device check --model "$data/devices/ort-cpu-basic-1t.dnnc" --rules written_vit.rules --runner "$basic" \
    --space vit --sample 1 --seed 7 --warmup 1 --repeats 1 --json > written_vit.json 2> /dev/null ||
    fail "device check with the rules written on a ViT"
  python3 -c 'import json, sys; sys.exit(0 if json.load(open("written_vit.json"))["agreement"] == 1.0 else 1)' ||
    fail "the rules written on a ViT do not agree with ONNX Runtime's kernels"
  # kernels beyond the samples judged by their own profiled time inside a network, each beside the
  # kernel it was grown from: a kernel's time is a part of its network's latency
  "$bin" device extrapolate --model "$model" --kernels "$tests/data/extrapolation_listing.json" \
    --runner "$runner/run --optimization all --threads 1" --rounds 1 --max-rounds 1 --warmup 1 --repeats 3 \
    --round-ms 0 --work extrapolation --json > extrapolation.json 2> extrapolation.err ||
    { fail "device extrapolate with ONNX Runtime"; tail -3 extrapolation.err; }
  python3 - "$model" <<'PY' || fail "device extrapolate with ONNX Runtime: kernels not judged by their profiled times"
import json, sys
d = json.load(open("extrapolation.json")); m = sys.argv[1]
ok = d["judged"] == "kernel" and len(d["kernels"]) == 2 and m in d["summary"] and m in d["from_edge_summary"]
for k in d["kernels"]:
    e = k["edge"]
    ok = ok and 0 < k["measured_ms"] < k["network_measured_ms"] and 0 < e["measured_ms"]
    ok = ok and 0 < k["predicted_ms"][m] < k["network_predicted_ms"][m] and e["grown_from_edge_ms"][m] > 0
sys.exit(0 if ok else 1)
PY
  # whole networks beyond the build's: each kernel larger than its family's largest sample (the
  # largest sample of each family of the committed model's build, kept in tests/data) judged by
  # its own profiled time, priced as a kernel of its network
  "$bin" device extrapolate --model "$model" --samples "$tests/data/kernel_samples_all_largest.json" --networks 1 \
    --runner "$runner/run --optimization all --threads 1" --rounds 1 --max-rounds 1 --warmup 1 --repeats 2 \
    --round-ms 0 --work extrapolation --json > beyond.json 2> beyond.err ||
    { fail "device extrapolate --networks with ONNX Runtime"; tail -3 beyond.err; }
  python3 - "$model" <<'PY' || fail "device extrapolate --networks: kernels beyond the samples not judged"
import json, sys
d = json.load(open("beyond.json")); m = sys.argv[1]
ok = len(d["networks"]) == 1 and d["networks"][0]["measured_ms"] > 0 and d["kernels_judged"] > len(d["kernels"]) > 0
for k in d["kernels"]:
    ok = ok and k["flops"] > k["family_max_flops"] > 0 and k["measured_ms"] > 0 and k["predicted_ms"][m] > 0
    ok = ok and k["measured_ms"] < d["networks"][0]["measured_ms"]
ok = ok and d["summary"][m]["beyond"]["kernels"] == len(d["kernels"])
# the error by time: the kernels' mispriced milliseconds over their measured ones
off = sum(abs(k["predicted_ms"][m] - k["measured_ms"]) for k in d["kernels"])
ok = ok and abs(d["summary"][m]["beyond"]["weighted_error"] - off / sum(k["measured_ms"] for k in d["kernels"])) < 1e-9
n = d["networks"][0]
ok = ok and abs(d["network_summary"][m]["mape"] - abs(n["predicted_ms"][m] / n["measured_ms"] - 1)) < 1e-9
sys.exit(0 if ok else 1)
PY
  # the listing plants its edges' sample times: each edge's time here over it
  python3 <<'PY' || fail "device extrapolate: the edges against their listed samples are not their measured times over them"
import json, sys
d = json.load(open("extrapolation.json"))
r = sorted(k["edge"]["measured_ms"] / k["edge"]["sample_ms"] for k in d["kernels"])
a = d["edge_against_sample"]
close = lambda x, y: abs(x - y) <= 1e-9 * y
sys.exit(0 if a["edges"] == 2 and close(a["min"], r[0]) and close(a["max"], r[1]) and close(a["median"], r[1]) else 1)
PY
else
  echo "note: Node.js or the bundled runner's packages are missing; the ONNX Runtime part is skipped"
fi
finish device_check
