#!/usr/bin/env bash
# `dnncost adapt`, `dnncost probe` and `dnncost export-header` end to end: reports, clear errors
# on bad input, the probe without performance counters, and an exported header compiled in a
# separate program (with and without exceptions) predicting what the runtime model predicts.
# usage: adapt.sh DNNCOST_BINARY DATA_DIR WORK_DIR [CXX INCLUDE_DIR [EIGEN_INCLUDE_DIRS, ':'-separated
#        [HEADERS: all (default) | additive, which skips the GNN headers' long compiles]]]
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"
cxx=${4:-c++} inc=${5:-}
eigen=()  # the GNN headers need Eigen's
IFS=: read -r -a dirs <<< "${6:-}"
for d in "${dirs[@]}"; do [ -n "$d" ] && eigen+=(-isystem "$d"); done
headers=${7:-all}

head -n 401 "$data/nb201/latency_ms.csv" > pool.csv
pool=1080ti_1,titan_rtx_32,silver_4114,pixel3,titanx_256
fast="--epochs 3 --pool-networks 100"

# --- adapt: a report with the keys of `dnncost train` and the floor
"$bin" adapt --pool pool.csv --pool-targets $pool --target gold_6240 --shots 10 --seed 1 $fast \
  --baseline ridge --report r.json > adapt.out 2> adapt.err || { fail "adapt"; tail -3 adapt.err; }
for key in spearman kendall mape within_10 non_degenerate n_test n_train baseline shots; do
  grep -q "\"$key\"" r.json || fail "adapt report lacks $key"
done
grep -q '"n_train": 10' r.json || fail "adapt report: n_train is not the 10 shots"
grep -q '"n_test": 390' r.json || fail "adapt report: n_test is not the 390 other rows"
"$bin" adapt --pool pool.csv --pool-targets $pool --target gold_6240 --shots 10 --seed 1 $fast --baseline ridge --report r2.json \
  > /dev/null 2>&1 || fail "adapt, second run"
[ "$(grep '"spearman"' r.json | head -1)" = "$(grep '"spearman"' r2.json | head -1)" ] || fail "adapt: same seed, other result"
"$bin" adapt --pool pool.csv --pool-targets $pool --target gold_6240 --shots 10 --seed 1 $fast --sampling random \
  --encoder aggregates > agg.out 2> agg.err || { fail "adapt --encoder aggregates --sampling random"; tail -3 agg.err; }
"$bin" adapt --pool pool.csv --pool-targets $pool --target gold_6240 --shots 10 --seed 1 $fast --method maple \
  --report rm.json > maple.out 2> maple.err || { fail "adapt --method maple"; tail -3 maple.err; }
"$bin" adapt --pool pool.csv --pool-targets $pool --target gold_6240 --shots 10 --seed 1 --sampling doptimal \
  --baseline ridge --report rd.json > dopt.out 2> dopt.err || { fail "adapt --sampling doptimal"; tail -3 dopt.err; }
grep -q '"sampling": "doptimal"' rd.json || fail "adapt --sampling doptimal: report names another sampling"
grep -q '"n_train": 10' rd.json || fail "adapt --sampling doptimal: n_train is not the 10 shots"
[ "$(tr -d ' \n' < rd.json | grep -o '"shots":\[[^]]*\]')" != "$(tr -d ' \n' < r.json | grep -o '"shots":\[[^]]*\]')" ] ||
  fail "adapt --sampling doptimal: the same shots as uniform sampling"
grep -q '"preset": "maple-edge"' rm.json || fail "adapt --method maple: report names no maple-edge"
grep -q '"preset": "pool-prior"' r.json || fail "adapt: the default method is not the pool prior"
grep -q '"prior_device"' r.json || fail "adapt report lacks the prior device"

# --- the new device's measurements in a results file of `dnncost measure`
echo "key,id,latency_ms,spread,rounds,status,time,peak_memory_bytes,energy_mj,detail" > results.csv
# distinct keys: a repeated key is a re-measurement and replaces the earlier row
row=0
sed -n 2,41p pool.csv | while IFS=, read -r arch g rest; do
  row=$((row + 1))
  echo "k$row,nb201:$arch,$g,0.01,3,ok,2026-01-01T00:00:00Z,,,"
done >> results.csv
"$bin" adapt --pool pool.csv --pool-targets $pool --data results.csv --shots 10 $fast --report rr.json \
  > res.out 2> res.err || { fail "adapt --data results file"; tail -3 res.err; }
grep -q '"n_test": 30' rr.json || fail "adapt on a results file: n_test is not 30"

# --- bad input: one clear error line each
expect_error() {  # expect_error PATTERN args...
  local pattern=$1; shift
  "$bin" "$@" > bad.out 2> bad.err && { fail "accepted: $*"; return; }
  grep -q "^dnncost: error: .*$pattern" bad.err || fail "unclear error for $* (want $pattern): $(cat bad.err)"
}
expect_error "no_such_device" adapt --pool pool.csv --pool-targets 1080ti_1,no_such_device --target gold_6240 $fast
expect_error "column 'pixel3' named twice" adapt --pool pool.csv --pool-targets $pool,pixel3 --target gold_6240 $fast
head -n 11 results.csv > ten.csv
expect_error "only 10 measured rows" adapt --pool pool.csv --pool-targets $pool --data ten.csv --shots 10 $fast
head -n 40 pool.csv > nan.csv
echo '|none~0|+|none~0|none~1|+|none~0|none~1|none~2|,nan,1,1,1,1,1' >> nan.csv
expect_error "nan.csv:41" adapt --pool nan.csv --pool-targets $pool --target gold_6240 --shots 5 $fast
expect_error "not a C++ identifier" export-header --model r.json --out x.hpp --name 1bad
expect_error "not a C++ identifier (or is a keyword)" export-header --model r.json --out x.hpp --name int
# --out naming the model itself would replace the model with its header
"$bin" train --data pool.csv --target pixel3 --preset additive --train 20 --val 5 --seed 3 --out self.dnnc > /dev/null 2>&1 ||
  fail "train self.dnnc"
cp self.dnnc self_before.dnnc
expect_error "--model and --out name the same file" export-header --model self.dnnc --out ./self.dnnc --name ok
cmp -s self.dnnc self_before.dnnc || fail "export-header --out = --model: the model was overwritten"

# --- probe: runs here, says which counters are missing, writes the descriptor
"$bin" probe --out desc.json > probe.out 2> probe.err || fail "probe exits non-zero: $(cat probe.err)"
grep -q '"kernels"' desc.json || fail "probe: no kernels in the descriptor"
grep -q '"latency_ms"' desc.json || fail "probe: no latencies in the descriptor"
if grep -q '"timing_only": true' desc.json; then
  grep -q "cycles" probe.err || fail "probe without counters does not say which are missing: $(cat probe.err)"
fi

# --- export-header: a separate program compiled against the header predicts as the model does
if [ -n "$inc" ]; then
  "$bin" train --data pool.csv --target pixel3 --preset additive --train 100 --val 20 --seed 3 --out additive.dnnc \
    > /dev/null 2>&1 || fail "train additive"
  for preset in hifisage brpnas; do
    "$bin" train --data pool.csv --target pixel3 --preset $preset --train 20 --val 5 --epochs 1 --seed 3 \
      --out $preset.dnnc > /dev/null 2>&1 || fail "train $preset"
  done
  cut -d, -f1 pool.csv | sed -n 2,101p > archs.txt
  same_predictions() {  # same_predictions FILE: arch, header, model per line; 100 lines, each within 1e-5
    awk -F'\t' '{ d = $2 - $3; if (d < 0) d = -d; s = $3 < 0 ? -$3 : $3;
      if (d > 1e-5 * s + 1e-12) { print "differs: " $1 " " $2 " " $3; bad = 1 } n++ }
      END { if (n != 100) { print "compared " n " of 100"; bad = 1 } exit bad }' "$1"
  }

  # a model file corrupted and resealed with a valid checksum (its intercept set to -2e33, then to
  # 1e308 so that the prediction overflows): predict fails naming the model and the network
  cat > reseal.cpp <<'CPP'
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <dnncost/io/serialize.hpp>
int main(int, char** argv) {
    std::ifstream file(argv[1], std::ios::binary);
    std::stringstream bytes;
    bytes << file.rdbuf();
    auto c = dnncost::io::read_container(bytes.str(), "additive", argv[1]);
    // the additive payload ends with intercept, target scale, lambda (f64 each), loss and flag bytes
    dnncost::io::BinaryWriter w;
    w.put_f64(std::strtod(argv[3], nullptr));
    c.payload.replace(c.payload.size() - 26, 8, w.bytes());
    std::ofstream(argv[2], std::ios::binary) << dnncost::io::write_container(c.kind, c.config_hash, c.payload, c.metadata);
}
CPP
  if "$cxx" -std=c++20 -O1 -I"$inc" reseal.cpp -o reseal 2> reseal.err; then
    arch=$(head -1 archs.txt)
    for value in -2e33 1e308; do
      ./reseal additive.dnnc resealed.dnnc $value || fail "reseal $value"
      "$bin" predict --model resealed.dnnc --space nb201 "$arch" > resealed.out 2> resealed.err \
        && fail "predict with a corrupt, resealed model ($value) exits 0: $(cat resealed.out)"
      grep -q "^dnncost: error: resealed.dnnc (additive model): predicts .* for '$arch'" resealed.err \
        || fail "predict with a corrupt, resealed model ($value): $(cat resealed.err)"
      [ -s resealed.out ] && fail "predict with a corrupt, resealed model ($value) printed: $(cat resealed.out)"
    done
    "$bin" eval --model resealed.dnnc --data pool.csv --target pixel3 > /dev/null 2> reseal_eval.err \
      && fail "eval with a corrupt, resealed model exits 0"
    grep -q "resealed.dnnc (additive model): predicts .* (pool.csv:2)" reseal_eval.err \
      || fail "eval with a corrupt, resealed model: $(cat reseal_eval.err)"
  else
    fail "compile reseal.cpp"; head -5 reseal.err
  fi
  cat > use.cpp <<'CPP'
#include <cstdio>
#include <fstream>
#include <string>
#include "my_estimator.hpp"
#include <dnncost/spaces/nb201.hpp>
int main(int, char** argv) {
    std::ifstream in(argv[1]);
    std::string arch;
    while (std::getline(in, arch)) std::printf("%s\t%.9g\n", arch.c_str(), my_estimator::predict(dnncost::nb201::build_graph(arch)));
}
CPP
  # the additive header with exceptions and without, against the CLI's predictions
  mkdir -p additive && cd additive
  if "$bin" export-header --model ../additive.dnnc --out my_estimator.hpp --name my_estimator > /dev/null 2> ex.err; then
    "$bin" predict --model ../additive.dnnc --space nb201 $(cat ../archs.txt) > theirs.txt 2> /dev/null \
      || fail "predict additive"
    for mode in exceptions no-exceptions; do
      flags=""; [ $mode = no-exceptions ] && flags=-fno-exceptions
      "$cxx" -std=c++20 -O1 $flags -I. -I"$inc" ../use.cpp -o use_$mode 2> cc_$mode.err \
        || { fail "compile additive ($mode)"; head -5 cc_$mode.err; continue; }
      ./use_$mode ../archs.txt > ours_$mode.txt || { fail "run additive ($mode)"; continue; }
      paste ours_$mode.txt theirs.txt | cut -f1,2,4 > pairs_$mode.txt
      same_predictions pairs_$mode.txt || fail "additive header predictions ($mode) differ from the model's"
    done
  else
    fail "export-header additive"; cat ex.err
  fi
  cd ..
  # the GNN headers against the runtime models loaded from the same files, graph by graph: HiFi-SAGE's
  # and BRP-NAS's in one program without exceptions (they share the layers and Eigen's kernels, most
  # of a minute-long compile)
  if [ "$headers" = all ]; then
    mkdir -p gnn && cd gnn
    exported=1
    for preset in hifisage brpnas; do
      "$bin" export-header --model ../$preset.dnnc --out $preset.hpp --name $preset > /dev/null 2> ex_$preset.err \
        || { fail "export-header $preset"; cat ex_$preset.err; exported=0; }
    done
    cat > use_gnn.cpp <<'CPP'
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include "brpnas.hpp"
#include "hifisage.hpp"
#include <dnncost/spaces/nb201.hpp>
template <class Estimator>
Estimator runtime_model(std::string_view preset, const char* path) {
    std::ifstream file(path, std::ios::binary);
    std::stringstream bytes;
    bytes << file.rdbuf();
    return Estimator::deserialize(bytes.str(), preset, path);
}
int main(int, char** argv) {
    const auto h = runtime_model<hifisage::estimator_type>(hifisage::preset, argv[2]);
    const auto b = runtime_model<brpnas::estimator_type>(brpnas::preset, argv[3]);
    std::ifstream in(argv[1]);
    std::string arch;
    while (std::getline(in, arch)) {
        const auto g = dnncost::nb201::build_graph(arch);
        const dnncost::graph::Graph* one[] = {&g};
        std::printf("%s\t%.9g\t%.9g\t%.9g\t%.9g\n", arch.c_str(), hifisage::predict(g), h.predict(one).front().mean,
                    brpnas::predict(g), b.predict(one).front().mean);
    }
}
CPP
    if [ $exported = 1 ]; then
      if "$cxx" -std=c++20 -O1 -fno-exceptions -I. -I"$inc" "${eigen[@]}" use_gnn.cpp -o use_gnn 2> cc.err; then
        if ./use_gnn ../archs.txt ../hifisage.dnnc ../brpnas.dnnc > ours.txt; then
          cut -f1,2,3 ours.txt > pairs_hifisage.txt
          cut -f1,4,5 ours.txt > pairs_brpnas.txt
          same_predictions pairs_hifisage.txt || fail "hifisage header predictions differ from the model's"
          same_predictions pairs_brpnas.txt || fail "brpnas header predictions differ from the model's"
        else
          fail "run the GNN headers' program"
        fi
      else
        fail "compile the GNN headers (no exceptions)"; head -5 cc.err
      fi
    fi
    cd ..
  fi
  "$bin" train --data pool.csv --target pixel3 --preset perfsage --train 20 --val 5 --epochs 1 --seed 3 --out ps.dnnc \
    > /dev/null 2>&1 || fail "train perfsage"
  expect_error "cannot be written as a header (the additive, hifisage and brpnas presets can)" export-header --model ps.dnnc --out g.hpp --name g
fi

finish adapt
