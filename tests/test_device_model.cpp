// The kernel-level device model: built from single-kernel samples whose latencies come from a
// planted kernel model, it prices networks as the kernel sum plus the run overhead (checked
// against the sum computed by hand from its own regressors), learns the planted model, prices an
// unsampled kind by a named nearest kind, calibrates to a machine whose latencies are a known
// multiple, round-trips through its file and rejects a damaged one; its totals alone are its
// breakdown's totals.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <dnncost/core/rng.hpp>
#include <dnncost/device/device_model.hpp>
#include <dnncost/device/kernel_batches.hpp>
#include <dnncost/device/kernel_features.hpp>
#include <dnncost/device/kernel_figure_memo.hpp>
#include <dnncost/device/kernel_sampler.hpp>
#include <dnncost/estimators/preset_registry.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/train/train_data.hpp>

#include "kernel_graph_fixtures.hpp"

using namespace dnncost;
using namespace kg_fixtures;

namespace {

device::FusionRules rules() {
    return device::FusionRules::parse(
        "dnncost-fusion-rules 1\n"
        "device planted\n"
        "fold Conv BatchNormalization operands=constant\n"
        "fuse Conv Relu operands=none\n"
        "fuse Conv Add operands=activation\n"
        "fuse Add Relu operands=none after=Conv\n");
}

constexpr double overhead_ms = 0.02;

// the planted device: a kernel costs 0.004 ms plus 1 ms per 2 GFLOP and 1 ms per 4 GB moved
double planted_kernel_ms(const device::Kernel& k) {
    return 0.004 + double(k.cost.flops) * 5e-10 + double(k.cost.input_bytes + k.cost.output_bytes) * 2.5e-10;
}

// the planted device's latency of a network: the run overhead and its kernels' planted times
double planted_ms(const graph::Graph& g) {
    double ms = overhead_ms;
    for (const auto& k : device::kernel_graph(g, rules()).kernels) ms += planted_kernel_ms(k);
    return ms;
}

std::vector<device::KernelMeasurement> planted_samples(std::size_t per_kind, std::uint64_t seed) {
    device::KernelSampler sampler(rules());
    Rng rng(seed);
    device::add_space_prior(sampler, 3, rng);
    std::vector<device::KernelMeasurement> out;
    for (const auto& s : sampler.draw_all(per_kind, rng)) {
        const auto kg = device::kernel_graph(s.graph, rules());
        for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
            if (kg.kernels[k].is_reorder()) continue;
            auto f = device::kernel_features(s.graph, kg, k, 0);
            out.push_back({f.kind.key, std::move(f.values), overhead_ms + planted_kernel_ms(kg.kernels[k])});
        }
    }
    return out;
}

// One candidate regressor: these tests are about the device model, not the choice among
// regressors (test_tabular_regressor); trees on the roofline base fit in a fraction of the MLP's time.
device::DeviceModelOptions one_regressor() {
    device::DeviceModelOptions o;
#if defined(DNNCOST_HAS_XGBOOST)
    o.regressors = {"gbt"};
#endif
    return o;
}

device::DeviceModel planted_model() {
    auto o = one_regressor();
    o.min_samples = 24;
    return device::DeviceModel::build(rules(), planted_samples(40, 7), overhead_ms, o);
}

std::vector<graph::Graph> nb201_networks(int n) {
    std::vector<graph::Graph> out;
    Rng rng(3);
    for (int i = 0; i < n; ++i) {
        nb201::Arch a;
        for (auto& op : a.ops) op = static_cast<nb201::Op>(rng.below(5));
        out.push_back(nb201::build_graph(a));
    }
    return out;
}

std::vector<const graph::Graph*> pointers(const std::vector<graph::Graph>& nets) {
    std::vector<const graph::Graph*> out;
    for (const auto& g : nets) out.push_back(&g);
    return out;
}

}  // namespace

TEST_CASE("device model: a network costs its kernels plus the run overhead, each kernel priced by its regressor") {
    const auto m = planted_model();
    const auto nets = nb201_networks(3);
    const auto ptrs = pointers(nets);
    const auto prices = m.price_networks(ptrs);
    const auto totals = m.predict_mean(ptrs);
    for (std::size_t i = 0; i < nets.size(); ++i) {
        const auto kg = device::kernel_graph(nets[i], rules());
        REQUIRE(prices[i].kernels.size() == kg.kernels.size());
        double by_hand = overhead_ms;
        for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
            const auto f = device::kernel_features(nets[i], kg, k, 0);
            const auto& pk = prices[i].kernels[k];
            CHECK(pk.kind == f.kind.key);
            Mat<double> x(1, static_cast<Index>(f.values.size()));
            for (std::size_t j = 0; j < f.values.size(); ++j) x(0, static_cast<Index>(j)) = f.values[j];
            const double ms = m.kinds().at(pk.priced_as).regressor->predict(x)[0];
            CHECK(pk.ms == doctest::Approx(ms).epsilon(1e-12));
            by_hand += ms;
        }
        CHECK(totals[i] == doctest::Approx(by_hand).epsilon(1e-12));
        CHECK(prices[i].total_ms == doctest::Approx(by_hand).epsilon(1e-12));
        // as a cost source: kernels (reorders folded into their readers) and the overhead add up
        const auto c = m.cost(nets[i]);
        CHECK(c.breakdown() == cost::Breakdown::kernels);
        CHECK(c.run_overhead_ms == doctest::Approx(overhead_ms));
        CHECK(c.total_ms == doctest::Approx(by_hand).epsilon(1e-12));
    }
}

TEST_CASE("device model: models priced in turn on one thread each price as when alone") {
    // a thread remembers what it worked out of a few models' kinds between calls. Two models that
    // price a kind differently (one without the pooling samples prices pooling kernels as another
    // kind, and numbers its regressors otherwise), three objects of each (more than a thread
    // keeps), priced in turn, then one destroyed and another made in its place: each must give the
    // figures of a thread that never priced another model
    const auto a = planted_model();
    auto samples = planted_samples(40, 7);
    std::erase_if(samples, [](const device::KernelMeasurement& s) { return s.kind.find("Pool") != std::string::npos; });
    auto o = one_regressor();
    o.min_samples = 24;
    const auto b = device::DeviceModel::build(rules(), samples, overhead_ms, o);
    REQUIRE(a.priced_kinds() != b.priced_kinds());
    const auto nets = nb201_networks(6);
    const auto ptrs = pointers(nets);
    std::vector<std::unique_ptr<device::DeviceModel>> models;
    for (int copy = 0; copy < 3; ++copy)
        for (const auto* m : {&a, &b}) models.push_back(device::DeviceModel::deserialize(m->serialize()));
    const auto alone = [&](const device::DeviceModel& m) {
        std::vector<double> out;
        std::thread([&] { out = m.price_totals(ptrs); }).join();
        return out;
    };
    const auto want_a = alone(a), want_b = alone(b);
    REQUIRE(want_a != want_b);
    for (const std::size_t i : {0, 1, 2, 3, 4, 5, 0, 0, 5, 2, 1, 1, 4, 3, 0, 1}) {
        INFO("object ", i);
        CHECK(models[i]->price_totals(ptrs) == (i % 2 == 0 ? want_a : want_b));
    }
    models[0].reset();
    models[0] = device::DeviceModel::deserialize(b.serialize());
    CHECK(models[0]->price_totals(ptrs) == want_b);
    CHECK(models[2]->price_totals(ptrs) == want_a);
}

TEST_CASE("device model: the planted kernel model is learnt, networks priced close to the planted sum") {
    const auto m = planted_model();
    for (const auto& [kind, km] : m.kinds())
        if (km.regressor) {
            REQUIRE_FALSE(km.scores.empty());
            CHECK(km.held_out > 0);
        }
    const auto nets = nb201_networks(8);
    double worst = 0;
    for (const auto& g : nets) {
        const graph::Graph* one[] = {&g};
        worst = std::max(worst, std::abs(m.predict_mean(one)[0] / planted_ms(g) - 1));
    }
    CHECK(worst < 0.25);
}

TEST_CASE("device model: family regressors learn the fused kinds with their family, and price them whole") {
    auto o = one_regressor();
    o.family_regressors = true;
    const auto m = device::DeviceModel::build(rules(), planted_samples(40, 7), overhead_ms, o);
    const auto& kinds = m.kinds();
    REQUIRE(kinds.count("Conv+Act") == 1);
    CHECK(kinds.at("Conv+Act").pooled_into == "Conv");
    CHECK_FALSE(kinds.at("Conv+Act").regressor);
    REQUIRE(kinds.at("Conv").regressor);
    // the family's regressor held out samples of the whole family
    CHECK(kinds.at("Conv").held_out > kinds.at("Conv").samples / 5);
    const auto nets = nb201_networks(8);
    double worst = 0;
    for (const auto& g : nets) {
        const graph::Graph* one[] = {&g};
        worst = std::max(worst, std::abs(m.predict_mean(one)[0] / planted_ms(g) - 1));
        // a fused kind the family learnt is priced as one kernel, not as its operators unfused
        const auto price = m.price_networks(one).front();
        for (const auto& k : price.kernels) {
            CHECK(k.warning.find("unfused") == std::string::npos);
            if (k.kind == "Conv+Act") CHECK(k.priced_as == "Conv");
        }
    }
    CHECK(worst < 0.25);
    const auto loaded = device::DeviceModel::deserialize(m.serialize(), "family.dnnc");
    CHECK(loaded->kinds().at("Conv+Act").pooled_into == "Conv");
    const auto ptrs = pointers(nets);
    CHECK(loaded->predict_mean(ptrs) == m.predict_mean(ptrs));
    // one regressor per kind: each kind learns from its own samples only
    o.family_regressors = false;
    const auto per_kind = device::DeviceModel::build(rules(), planted_samples(40, 7), overhead_ms, o);
    CHECK(per_kind.kinds().at("Conv+Act").regressor);
    CHECK(per_kind.kinds().at("Conv+Act").pooled_into.empty());
    CHECK(per_kind.kinds().at("Conv").held_out < kinds.at("Conv").held_out);
}

TEST_CASE("device model: an unsampled kind is priced by the nearest kind, with a warning naming it") {
    auto samples = planted_samples(40, 7);
    std::erase_if(samples, [](const auto& s) { return s.kind.rfind("Pool", 0) == 0; });
    const auto m = device::DeviceModel::build(rules(), samples, overhead_ms, one_regressor());
    Graph g("pooled");
    const int x = g.add_input("x", {1, 16, 8, 8});
    const int y = g.add_op("MaxPool", "pool", {x}, {1, 16, 4, 4},
                           {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
    g.mark_output(y);
    const graph::Graph* one[] = {&g};
    const auto p = m.price_networks(one)[0];
    REQUIRE(p.kernels.size() == 1);
    CHECK(p.kernels[0].kind == "Pool");
    CHECK(p.kernels[0].priced_as != "Pool");
    CHECK(p.kernels[0].warning.find("priced as") != std::string::npos);
    CHECK(p.kernels[0].ms > 0);
}

TEST_CASE("device model: calibration recovers a machine that is a known multiple slower") {
    auto m = planted_model();
    const auto nets = nb201_networks(5);
    const auto ptrs = pointers(nets);
    const auto before = m.predict_mean(ptrs);
    std::vector<double> measured;
    for (double b : before) measured.push_back(1.7 * b);
    const auto report = m.calibrate(ptrs, measured);
    CHECK(report.shots == 5);
    CHECK(report.applied);
    CHECK(report.family_factors.empty());  // one factor explains the shots: no family needs its own
    CHECK(m.calibration_factor() == doctest::Approx(1.7).epsilon(1e-12));
    const auto after = m.predict_mean(ptrs);
    for (std::size_t i = 0; i < nets.size(); ++i) CHECK(after[i] == doctest::Approx(measured[i]).epsilon(1e-12));
    measured[0] = -1;
    CHECK_THROWS_AS(m.calibrate(ptrs, measured), config_error);
}

namespace {
// A machine on which each kernel family runs at its own multiple of the model's price (planted),
// a global multiple besides: the latency the model would give with those factors.
double planted_factor(const std::map<std::string, double>& factor, const std::string& kind) {
    const auto it = factor.find(kind.substr(0, kind.find('+')));
    return it == factor.end() ? 1.0 : it->second;
}
double family_planted_ms(const device::DevicePrice& p, const std::map<std::string, double>& factor, double global) {
    double ms = p.run_overhead_ms;
    for (const auto& k : p.kernels) ms += k.ms * planted_factor(factor, k.kind);
    return global * ms;
}
// The NB201 networks of nb201_networks(total) after its first `skip`: networks no shot is.
std::vector<graph::Graph> unseen_networks(int skip, int total) {
    auto all = nb201_networks(total);
    return {all.begin() + skip, all.end()};
}
// MAPE (%) of the model's prices of `nets` against `truth`.
double mape_against(const device::DeviceModel& model, const std::vector<graph::Graph>& nets,
                    const std::vector<double>& truth) {
    const auto p = model.predict_mean(pointers(nets));
    double e = 0;
    for (std::size_t i = 0; i < p.size(); ++i) e += std::abs(p[i] / truth[i] - 1);
    return 100 * e / double(p.size());
}
}  // namespace

TEST_CASE("device model: per-family calibration recovers planted family factors and prices unseen networks") {
    auto m = planted_model();
    const auto shots = nb201_networks(10);
    const auto unseen = unseen_networks(10, 40);
    const std::map<std::string, double> factor{{"Conv", 1.6}, {"Pool", 0.5}};
    const auto truth = [&](const std::vector<graph::Graph>& nets) {
        std::vector<double> out;
        for (const auto& p : m.price_networks(pointers(nets))) out.push_back(family_planted_ms(p, factor, 1.2));
        return out;
    };
    const auto measured = truth(shots), unseen_ms = truth(unseen);
    const auto mape = [&](const device::DeviceModel& model) { return mape_against(model, unseen, unseen_ms); };
    // copies of the model through its file
    auto global_model = device::DeviceModel::deserialize(m.serialize());
    auto fam_model = device::DeviceModel::deserialize(m.serialize());
    auto& global = *global_model;
    auto& fam = *fam_model;
    device::CalibrationOptions only_global;
    only_global.per_family = false;
    only_global.intensity_slope = false;
    const auto g = global.calibrate(pointers(shots), measured, only_global);
    CHECK(g.family_factors.empty());
    const auto r = fam.calibrate(pointers(shots), measured);
    INFO("global only: ", mape(global), " % on unseen networks; per family: ", mape(fam), " %");
    CHECK(r.applied);
    CHECK(std::isfinite(r.shrinkage));
    REQUIRE(r.family_factors.count("Conv") == 1);
    // the Conv factor relative to the global one: the planted 1.6 against whatever the rest average to
    CHECK(r.family_factors.at("Conv") > 1.15);
    CHECK(mape(fam) < 0.5 * mape(global));
    CHECK(r.cv_mape < r.given_mape);
    // saved and loaded: the same prices
    const auto loaded = device::DeviceModel::deserialize(fam.serialize(), "fam.dnnc");
    CHECK(loaded->family_factors() == fam.family_factors());
    CHECK(loaded->predict_mean(pointers(unseen)) == fam.predict_mean(pointers(unseen)));
}

TEST_CASE("device model: a machine uniformly slower, with noise, mostly gets one factor, not one per family") {
    auto m = planted_model();
    const auto shots = nb201_networks(10);
    const auto exact = m.predict_mean(pointers(shots));
    const auto unseen = unseen_networks(10, 40);
    auto unseen_ms = m.predict_mean(pointers(unseen));
    for (auto& x : unseen_ms) x *= 1.3;
    // 1.3 times slower, each shot within +-10 % of that: family factors or an intensity slope
    // could only fit the noise. Over many draws of the noise (enough that the counts below do not
    // turn on a few draws): how often the least leave-one-out error is the global factor's, how
    // often the global factor is kept (the fewest factors within a standard error), how often the
    // intensity slope is taken, and what the choice costs on unseen networks against a global
    // factor alone fitted to the same shots.
    constexpr int draws = 120;
    device::CalibrationOptions only_global;
    only_global.per_family = false;
    only_global.intensity_slope = false;
    int least_global = 0, kept_global = 0, took_slope = 0;
    double worst_unseen = 0, mean_unseen = 0, worst_global = 0, mean_global = 0;
    for (std::uint64_t seed = 1; seed <= draws; ++seed) {
        auto copy = device::DeviceModel::deserialize(m.serialize());
        auto global_copy = device::DeviceModel::deserialize(m.serialize());
        auto measured = exact;
        Rng rng(seed);
        for (auto& x : measured) x *= 1.3 * (1 + 0.2 * (rng.uniform() - 0.5));
        const auto r = copy->calibrate(pointers(shots), measured);
        global_copy->calibrate(pointers(shots), measured, only_global);
        REQUIRE(r.candidates.size() == 6);
        REQUIRE(std::isinf(r.candidates.front().first));
        const auto least = std::min_element(r.candidates.begin(), r.candidates.end(),
                                            [](const auto& a, const auto& b) { return a.second < b.second; });
        least_global += least == r.candidates.begin();
        const bool global = std::isinf(r.shrinkage) && !r.intensity_factor.active();
        kept_global += global;
        took_slope += r.intensity_factor.active();
        const double e = mape_against(*copy, unseen, unseen_ms),
                     e_global = mape_against(*global_copy, unseen, unseen_ms);
        worst_unseen = std::max(worst_unseen, e);
        mean_unseen += e / draws;
        worst_global = std::max(worst_global, e_global);
        mean_global += e_global / draws;
        if (global) {
            CHECK(r.family_factors.empty());
            CHECK(r.factor == doctest::Approx(1.3).epsilon(0.1));
        }
        // never a candidate better than the least (the intensity slope's among them)
        double least_of_all = least->second;
        for (const auto& [from, e] : r.intensity_candidates) least_of_all = std::min(least_of_all, e);
        CHECK(r.cv_mape >= least_of_all);
    }
    INFO("of ", draws, " draws the least error is the global factor's in ", least_global, "; it is kept in ",
         kept_global, "; the intensity slope is taken in ", took_slope, "; on unseen networks, mean ", mean_unseen,
         " %, worst ", worst_unseen, " % (a global factor alone: ", mean_global, " %, worst ", worst_global, " %)");
    // the standard-error rule keeps the one factor well beyond the draws where it is the least
    CHECK(kept_global >= least_global + draws / 4);
    CHECK(kept_global > draws / 2);
    // choosing among candidates on ten noisy shots costs something against knowing there is
    // nothing to choose, but not much
    CHECK(mean_unseen < 3.0);
    CHECK(mean_unseen < 1.35 * mean_global);
    CHECK(worst_unseen < 1.5 * worst_global);
}

namespace {
// Shots measured on a planted machine, each with its profile: every kernel of its pass timed at
// the model's price times the global factor and the kernel's own planted factor, factor(priced
// kernel, the pass's kernel); the latency, the run overhead times the global factor and the sum.
struct ProfiledShots {
    std::vector<double> latency_ms;
    std::vector<std::vector<device::ProfiledKernel>> profiles;
};
template <class Factor>
ProfiledShots planted_shots(const device::DeviceModel& m, const std::vector<graph::Graph>& nets, double global,
                            Factor factor) {
    ProfiledShots out;
    const auto prices = m.price_networks(pointers(nets));
    for (std::size_t i = 0; i < nets.size(); ++i) {
        const auto kg = device::kernel_graph(nets[i], m.rules());
        REQUIRE(kg.kernels.size() == prices[i].kernels.size());
        double latency = global * prices[i].run_overhead_ms;
        auto& profile = out.profiles.emplace_back();
        for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
            const double ms = global * prices[i].kernels[k].ms * factor(prices[i].kernels[k], kg.kernels[k]);
            latency += ms;
            profile.push_back({k, ms});
        }
        out.latency_ms.push_back(latency);
    }
    return out;
}
// The family-planted machine of family_planted_ms.
ProfiledShots profiled_shots(const device::DeviceModel& m, const std::vector<graph::Graph>& nets,
                             const std::map<std::string, double>& factor, double global) {
    return planted_shots(m, nets, global, [&](const device::PricedKernel& p, const device::Kernel&) {
        return planted_factor(factor, p.kind);
    });
}
}  // namespace

TEST_CASE("device model: family factors from the shots' profiled kernels, where their latencies cannot tell") {
    auto m = planted_model();
    // four shots: too few for family factors fitted to their latencies, but some hundred kernels
    const auto shots = nb201_networks(4);
    const auto unseen = unseen_networks(4, 40);
    const std::map<std::string, double> factor{{"Conv", 1.6}, {"Pool", 0.5}};
    const auto truth = profiled_shots(m, shots, factor, 1.2);
    const auto unseen_truth = profiled_shots(m, unseen, factor, 1.2).latency_ms;
    const auto mape = [&](const device::DeviceModel& model) { return mape_against(model, unseen, unseen_truth); };
    auto by_latency = device::DeviceModel::deserialize(m.serialize());
    const auto l = by_latency->calibrate(pointers(shots), truth.latency_ms);
    CHECK(l.profiled_kernels == 0);
    CHECK(l.profiled_candidates.empty());
    CHECK_FALSE(l.from_profiles);

    auto by_kernels = device::DeviceModel::deserialize(m.serialize());
    const auto r = by_kernels->calibrate(pointers(shots), truth.latency_ms, {}, truth.profiles);
    std::size_t kernels = 0;
    for (const auto& p : truth.profiles) kernels += p.size();
    CHECK(r.profiled_kernels == kernels);
    CHECK(kernels > 100);
    CHECK(r.profiled_candidates.size() == 3);
    CHECK(r.candidates.size() == 6);  // the global factor and the five penalties, as without profiles
    INFO("by latency: ", mape(*by_latency), " % on unseen networks; by profiled kernels: ", mape(*by_kernels), " %");
    CHECK(r.applied);
    CHECK(r.from_profiles);
    REQUIRE(r.family_factors.count("Conv") == 1);
    REQUIRE(r.family_factors.count("Pool") == 1);
    // relative to the global factor, each kept n / (n + prior) of its log: the planted ratio
    // between the two families, a little shrunk
    const double ratio = r.family_factors.at("Conv") / r.family_factors.at("Pool");
    CHECK(ratio > 2.6);
    CHECK(ratio < 3.2 + 1e-9);
    CHECK(mape(*by_kernels) < 1.0);
    CHECK(mape(*by_kernels) < 0.5 * mape(*by_latency));

    // without a prior, each family's factor is its kernels' own ratio against all kernels' (hand-computed)
    device::CalibrationOptions exact;
    exact.kernel_priors = {0};
    auto unshrunk = device::DeviceModel::deserialize(m.serialize());
    const auto u = unshrunk->calibrate(pointers(shots), truth.latency_ms, exact, truth.profiles);
    REQUIRE(u.from_profiles);
    double measured = 0, priced = 0;
    const auto prices = m.price_networks(pointers(shots));
    for (std::size_t i = 0; i < shots.size(); ++i)
        for (const auto& k : truth.profiles[i]) {
            measured += k.ms;
            priced += prices[i].kernels[k.kernel].ms;
        }
    const double all = measured / priced;
    CHECK(u.family_factors.at("Conv") == doctest::Approx(1.6 * 1.2 / all).epsilon(1e-9));
    CHECK(u.family_factors.at("Pool") == doctest::Approx(0.5 * 1.2 / all).epsilon(1e-9));
    for (const auto& [family, f] : u.family_factors)
        if (family != "Conv" && family != "Pool") CHECK(f == doctest::Approx(1.2 / all).epsilon(1e-9));

    // profiles that are not one per shot, or that name a kernel the pass has not
    auto bad = truth.profiles;
    bad.pop_back();
    CHECK_THROWS_WITH_AS(unshrunk->calibrate(pointers(shots), truth.latency_ms, {}, bad), doctest::Contains("profiles"),
                         config_error);
    bad = truth.profiles;
    bad[1].push_back({bad[1].size() + 5, 1.0});
    CHECK_THROWS_WITH_AS(unshrunk->calibrate(pointers(shots), truth.latency_ms, {}, bad),
                         doctest::Contains("calibration network 2"), config_error);
    bad = truth.profiles;
    bad[0][0].ms = std::nan("");
    CHECK_THROWS_AS(unshrunk->calibrate(pointers(shots), truth.latency_ms, {}, bad), config_error);
    exact.kernel_priors = {-1};
    CHECK_THROWS_AS(unshrunk->calibrate(pointers(shots), truth.latency_ms, exact, truth.profiles), config_error);
}

namespace {
// A machine on which a kernel's time moves with its arithmetic intensity (planted): the model's
// price times global * (FLOPs per byte / 10)^slope (kernels that move no byte: global alone).
ProfiledShots intensity_shots(const device::DeviceModel& m, const std::vector<graph::Graph>& nets, double global,
                              double slope) {
    return planted_shots(m, nets, global, [&](const device::PricedKernel&, const device::Kernel& kn) {
        const double moved = static_cast<double>(kn.cost.bytes());
        return moved > 0 && kn.cost.flops > 0 ? std::pow(static_cast<double>(kn.cost.flops) / moved / 10, slope) : 1.0;
    });
}
}  // namespace

TEST_CASE("device model: an intensity factor recovers a slope planted in the kernels' FLOPs per byte") {
    auto m = planted_model();
    const auto shots = nb201_networks(10);
    const auto unseen = unseen_networks(10, 40);
    const auto truth = intensity_shots(m, shots, 1.4, -0.25);
    const auto unseen_truth = intensity_shots(m, unseen, 1.4, -0.25).latency_ms;
    const auto mape = [&](const device::DeviceModel& model) { return mape_against(model, unseen, unseen_truth); };
    device::CalibrationOptions only_global;
    only_global.per_family = false;
    only_global.intensity_slope = false;
    auto global = device::DeviceModel::deserialize(m.serialize());
    global->calibrate(pointers(shots), truth.latency_ms, only_global);

    // from the profiled kernels, and from the latencies alone
    for (const bool profiled : {true, false}) {
        INFO("with profiles: ", profiled);
        auto model = device::DeviceModel::deserialize(m.serialize());
        const auto r = profiled ? model->calibrate(pointers(shots), truth.latency_ms, {}, truth.profiles)
                                : model->calibrate(pointers(shots), truth.latency_ms);
        REQUIRE(r.intensity_candidates.size() == (profiled ? 2u : 1u));
        CHECK(r.applied);
        CHECK(r.family_factors.empty());
        const auto& z = r.intensity_factor;
        REQUIRE(z.active());
        CHECK(z == model->intensity_factor());
        // the span of 90 % of the shots' priced time: from pooling and additions (well under one
        // FLOP per byte) to NB201's 3x3 convolutions at 16-64 channels (tens)
        INFO("span ", z.low, " to ", z.high, " FLOPs per byte");
        CHECK(z.low > 0);
        CHECK(z.high > 10);
        CHECK(z.high > 10 * z.low);
        // the planted slope, a little flattened where kernels lie beyond the span
        CHECK(z.slope < -0.15);
        CHECK(z.slope > -0.3);
        INFO("global factor alone: ", mape(*global), " % on unseen networks; with the intensity slope: ", mape(*model),
             " %");
        CHECK(mape(*model) < 0.5 * mape(*global));
        CHECK(mape(*model) < 2.0);
        // saved and loaded: the same factor and prices
        const auto loaded = device::DeviceModel::deserialize(model->serialize(), "intensity.dnnc");
        CHECK(loaded->intensity_factor() == model->intensity_factor());
        CHECK(loaded->predict_mean(pointers(unseen)) == model->predict_mean(pointers(unseen)));
        // a file whose slope is out of range: refused, named. The slope is the first of the three
        // doubles before the sample boundary's two bounds (a flag byte each, and a double when present).
        auto c = io::read_container(model->serialize());
        const double steep = 0.9;
        std::size_t bounds = 2;
        for (const double b : {model->boundary().max_output_mb, model->boundary().max_reorder_mb})
            bounds += std::isfinite(b) ? sizeof(double) : 0;
        std::memcpy(c.payload.data() + c.payload.size() - bounds - 3 * sizeof(double), &steep, sizeof steep);
        CHECK_THROWS_WITH_AS(device::DeviceModel::deserialize(io::write_container(c.kind, c.config_hash, c.payload),
                                                              "steep.dnnc"),
                             doctest::Contains("intensity factor slope 0.9"), parse_error);
    }
    // a factor by hand: (clamp(x, 2, 50) / 50)^-0.2
    const device::KernelIntensityFactor z{-0.2, 2, 50};
    CHECK(z(50) == 1.0);
    CHECK(z(500) == 1.0);
    CHECK(z(10) == doctest::Approx(std::pow(0.2, -0.2)));
    CHECK(z(0) == doctest::Approx(std::pow(0.04, -0.2)));
    CHECK(device::KernelIntensityFactor{}.valid());
    CHECK_FALSE((device::KernelIntensityFactor{-0.6, 2, 50}.valid()));
    CHECK_FALSE((device::KernelIntensityFactor{-0.2, 0, 50}.valid()));
    CHECK_FALSE((device::KernelIntensityFactor{-0.2, 60, 50}.valid()));
    CHECK_FALSE((device::KernelIntensityFactor{std::nan(""), 2, 50}.valid()));
}

TEST_CASE("device model: calibration never makes a model worse on its shots") {
    auto m = planted_model();
    const auto nets = nb201_networks(8);
    const auto exact = m.predict_mean(pointers(nets));
    const auto before = m.serialize();
    // shots the model as given prices exactly: no fit can beat it, the model stays as it was
    auto r = m.calibrate(pointers(nets), exact);
    CHECK_FALSE(r.applied);
    CHECK(m.serialize() == before);
    // shots within +-1 %, alternately above and below: a global factor fitted on seven of them
    // takes the majority's side, 2 % off the eighth, so leave-one-out says no
    auto noisy = exact;
    for (std::size_t i = 0; i < noisy.size(); ++i) noisy[i] *= i % 2 ? 0.99 : 1.01;
    device::CalibrationOptions only_global;
    only_global.per_family = false;
    only_global.intensity_slope = false;
    r = m.calibrate(pointers(nets), noisy, only_global);
    CHECK(r.given_mape == doctest::Approx(1.0).epsilon(1e-3));
    CHECK(r.cv_mape == doctest::Approx(2.0).epsilon(0.01));
    CHECK_FALSE(r.applied);
    CHECK(m.serialize() == before);
}

TEST_CASE("device model: saved and loaded through the registry, a damaged file is a clear error") {
    auto m = planted_model();
    const auto nets = nb201_networks(2);
    const auto ptrs = pointers(nets);
    std::vector<double> measured{1.0, 2.0};
    m.calibrate(ptrs, measured);
    m.set_build_info("planted test device");
    const auto bytes = m.serialize();
    const auto loaded = estimators::load_estimator(bytes, "planted.dnnc");
    CHECK(loaded->preset() == "device");
    CHECK(loaded->predict_mean(ptrs) == m.predict_mean(ptrs));
    const auto& d = dynamic_cast<const device::DeviceModel&>(*loaded);
    CHECK(d.rules() == m.rules());
    CHECK(d.build_info() == "planted test device");
    CHECK(d.calibration_shots() == 2);

    CHECK_THROWS_WITH_AS(estimators::load_estimator(bytes.substr(0, bytes.size() / 2), "half.dnnc"),
                         doctest::Contains("half.dnnc"), parse_error);
    auto flipped = bytes;
    flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x5a);
    CHECK_THROWS_WITH_AS(estimators::load_estimator(flipped, "flipped.dnnc"), doctest::Contains("flipped.dnnc"),
                         parse_error);
}

TEST_CASE("device model: the regressors a build chooses among are the ones named") {
    device::DeviceModelOptions o;
#if defined(DNNCOST_HAS_XGBOOST)
    const std::string one = "gbt-linear";
#else
    const std::string one = "mlp";
#endif
    o.regressors = {one};
    const auto m = device::DeviceModel::build(rules(), planted_samples(30, 7), overhead_ms, o);
    int fitted = 0;
    for (const auto& [kind, km] : m.kinds()) {
        if (!km.regressor) continue;
        CAPTURE(kind);
        CHECK(km.chosen == "roofline-" + one);
        REQUIRE(km.scores.size() == 1);
        ++fitted;
    }
    CHECK(fitted > 3);
    o.regressors = {"mlp", "forest"};
    CHECK_THROWS_WITH_AS(device::DeviceModel::build(rules(), planted_samples(30, 7), overhead_ms, o),
                         doctest::Contains("regressor 'forest' is not a candidate here (candidates: mlp"), config_error);
    o.regressors = {"mlp", "mlp"};
    CHECK_THROWS_WITH_AS(device::DeviceModel::build(rules(), planted_samples(30, 7), overhead_ms, o),
                         doctest::Contains("regressor 'mlp' is named twice"), config_error);
}

TEST_CASE("device model: bad samples and an unbuilt model are errors, not garbage") {
    CHECK_THROWS_AS(device::DeviceModel::build(rules(), {}, overhead_ms), config_error);
    auto samples = planted_samples(40, 7);
    samples[3].latency_ms = std::nan("");
    CHECK_THROWS_WITH_AS(device::DeviceModel::build(rules(), samples, overhead_ms), doctest::Contains("sample 3"),
                         config_error);
    samples = planted_samples(40, 7);
    CHECK_THROWS_AS(device::DeviceModel::build(rules(), samples, -1.0), config_error);
    samples.resize(5);
    CHECK_THROWS_WITH_AS(device::DeviceModel::build(rules(), samples, overhead_ms),
                         doctest::Contains("measure more kernels"), config_error);
    device::DeviceModel empty;
    const auto nets = nb201_networks(1);
    const graph::Graph* one[] = {&nets[0]};
    CHECK_THROWS_AS(empty.predict(one), config_error);
}

TEST_CASE("device model: the residual learns what the kernel sum misses, and survives saving") {
    auto m = planted_model();
    const auto nets = nb201_networks(40);
    const auto ptrs = pointers(nets);
    const auto sums = m.predict_mean(ptrs);
    // the planted device runs every network 30 % slower than its kernels add up to
    train::TrainData tr, va;
    for (std::size_t i = 0; i < nets.size(); ++i) {
        auto& d = i < 30 ? tr : va;
        d.graphs.push_back(ptrs[i]);
        d.targets.push_back(1.3 * sums[i]);
    }
    // a larger step than the default: the planted factor is reached in a few dozen epochs
    device::KernelResidualOptions ro;
    ro.learning_rate = 1e-2;
    ro.max_epochs = 60;
    m.set_residual_options(ro);
    m.set_fit_parts(false, true);  // the residual alone: no scale fitted before it
    estimators::FitOptions fo;
    fo.seed = 5;
    m.fit(tr, va, fo);
    CHECK(m.calibration_factor() == 1.0);
    REQUIRE(m.residual().get() != nullptr);
    CHECK(m.residual().trained());
    const auto after = m.predict_mean(va.graphs);
    for (std::size_t i = 0; i < after.size(); ++i) CHECK(after[i] / va.targets[i] == doctest::Approx(1.0).epsilon(0.05));
    // the breakdown still adds up, and the saved model predicts the same
    const auto p = m.price_networks(va.graphs);
    for (const auto& x : p) {
        double sum = x.run_overhead_ms;
        for (const auto& k : x.kernels) sum += k.ms;
        CHECK(sum == doctest::Approx(x.total_ms).epsilon(1e-12));
    }
    for (std::size_t i = 0; i < p.size(); ++i) CHECK(after[i] == doctest::Approx(p[i].total_ms).epsilon(1e-12));
    const auto loaded = estimators::load_estimator(m.serialize(), "residual.dnnc");
    CHECK(loaded->predict_mean(va.graphs) == after);

    // a copy of the slot holds a residual of its own (the layers keep buffers between calls)
    const device::ResidualSlot copy = m.residual();
    REQUIRE(copy.get() != nullptr);
    CHECK(copy.get() != m.residual().get());
    CHECK(copy.trained());

    // a program without the residual compiled in refuses the model and says which header to include
    const auto saved = m.serialize();
    auto& ops = device::detail::kernel_residual_ops;
    const auto registered = ops;
    REQUIRE(registered != nullptr);
    ops = nullptr;
    std::string message;
    try {
        (void)estimators::load_estimator(saved, "residual.dnnc");
    } catch (const parse_error& e) {
        message = e.what();
    }
    ops = registered;
    CHECK(message.find("residual.dnnc") != std::string::npos);
    CHECK(message.find("dnncost/device/kernel_residual.hpp") != std::string::npos);
}

TEST_CASE("device model: fit() without the training compiled in names the header that provides it") {
    auto m = planted_model();
    const auto nets = nb201_networks(3);
    train::TrainData tr;
    for (const auto& g : nets) {
        tr.graphs.push_back(&g);
        tr.targets.push_back(1.0);
    }
    auto& hook = device::detail::device_model_fitting;
    const auto registered = hook;
    REQUIRE(static_cast<bool>(registered));
    hook = nullptr;
    CHECK_THROWS_WITH_AS(m.fit(tr, {}, {}), doctest::Contains("device_model_training.hpp"), config_error);
    hook = registered;
}

TEST_CASE("device model: fit() finds planted sample-boundary rates (and with a free scale the scale), and keeps them") {
    auto m = planted_model();
    const auto nets = nb201_networks(60);
    const auto ptrs = pointers(nets);
    const auto raw = m.price_networks(ptrs);
    // the planted device: each kernel 2 us and 0.05 ms per MB of output cheaper inside a network
    // than its sample, and the whole machine 20 % slower
    const device::SampleBoundaryCost planted{0.002, 0.05, 0.0};
    train::TrainData tr, va;
    for (std::size_t i = 0; i < nets.size(); ++i) {
        const auto kg = device::kernel_graph(nets[i], m.rules());
        REQUIRE(kg.kernels.size() == raw[i].kernels.size());
        double t = raw[i].run_overhead_ms;
        for (std::size_t k = 0; k < kg.kernels.size(); ++k)
            t += planted.in_network_ms(raw[i].kernels[k].ms, double(kg.kernels[k].cost.output_bytes), 0.0);
        auto& d = i < 45 ? tr : va;
        d.graphs.push_back(ptrs[i]);
        d.targets.push_back(1.2 * t);
    }
    m.set_fit_parts(true, false);
    m.set_boundary_scale(device::BoundaryScale::free);
    m.fit(tr, va, {});
    REQUIRE(m.boundary_fit());
    CHECK(m.boundary_fit()->kept);
    CHECK(m.boundary_fit()->spread_with < 0.01 * m.boundary_fit()->spread_without);
    CHECK(m.boundary().ms_per_kernel == doctest::Approx(planted.ms_per_kernel).epsilon(0.03));
    CHECK(m.boundary().ms_per_output_mb == doctest::Approx(planted.ms_per_output_mb).epsilon(0.03));
    CHECK(m.calibration_factor() == doctest::Approx(1.2).epsilon(0.01));
    CHECK(m.residual().get() == nullptr);
    const auto after = m.predict_mean(va.graphs);
    for (std::size_t i = 0; i < after.size(); ++i) CHECK(after[i] / va.targets[i] == doctest::Approx(1.0).epsilon(0.005));
    const auto loaded = estimators::load_estimator(m.serialize(), "boundary.dnnc");
    CHECK(loaded->predict_mean(va.graphs) == after);
    // the rates' bounds: the largest kernel output of the networks fitted, kept by a save (these
    // rules block no layout, so nothing is reordered)
    double most_out = 0;
    for (std::size_t i = 0; i < 45; ++i)
        for (const auto& k : device::kernel_graph(nets[i], m.rules()).kernels)
            most_out = std::max(most_out, double(k.cost.output_bytes) / (1024.0 * 1024.0));
    CHECK(m.boundary().max_output_mb == doctest::Approx(most_out));
    CHECK(m.boundary().max_reorder_mb == 0.0);
    const auto back = device::DeviceModel::deserialize(m.serialize(), "boundary.dnnc");
    CHECK(back->boundary().max_output_mb == m.boundary().max_output_mb);
    CHECK(back->boundary().max_reorder_mb == m.boundary().max_reorder_mb);
    // networks that are exactly their kernels' sum, scaled: no rates kept, the scale is
    for (std::size_t i = 0; i < tr.size(); ++i) tr.targets[i] = 0.8 * raw[i].total_ms;
    for (std::size_t i = 0; i < va.size(); ++i) va.targets[i] = 0.8 * raw[45 + i].total_ms;
    m.fit(tr, va, {});
    CHECK(m.boundary().is_zero());
    CHECK(m.calibration_factor() == doctest::Approx(0.8).epsilon(1e-9));
    // without a scale (the default) the machine's own level is left to calibration: the planted
    // rates on a machine at the samples' level are found, the factor stays 1
    m.set_boundary_scale(device::BoundaryScale::one);
    for (auto* d : {&tr, &va})
        for (auto& y : d->targets) y = 0.0;
    for (std::size_t i = 0; i < nets.size(); ++i) {
        const auto kg = device::kernel_graph(nets[i], m.rules());
        double t = raw[i].run_overhead_ms;
        for (std::size_t k = 0; k < kg.kernels.size(); ++k)
            t += planted.in_network_ms(raw[i].kernels[k].ms, double(kg.kernels[k].cost.output_bytes), 0.0);
        (i < 45 ? tr.targets[i] : va.targets[i - 45]) = t;
    }
    m.fit(tr, va, {});
    REQUIRE(m.boundary_fit());
    CHECK(m.boundary_fit()->kept);
    CHECK(m.boundary().ms_per_kernel == doctest::Approx(planted.ms_per_kernel).epsilon(0.03));
    CHECK(m.boundary().ms_per_output_mb == doctest::Approx(planted.ms_per_output_mb).epsilon(0.03));
    CHECK(m.calibration_factor() == 1.0);
    const auto one = m.predict_mean(va.graphs);
    for (std::size_t i = 0; i < one.size(); ++i) CHECK(one[i] / va.targets[i] == doctest::Approx(1.0).epsilon(0.005));
    // a scale alone: networks 0.9x their kernels' sum get no rates and the factor 0.9, and every
    // price is the kernel sum times it
    m.set_boundary_scale(device::BoundaryScale::alone);
    for (std::size_t i = 0; i < tr.size(); ++i) tr.targets[i] = 0.9 * raw[i].total_ms;
    for (std::size_t i = 0; i < va.size(); ++i) va.targets[i] = 0.9 * raw[45 + i].total_ms;
    m.fit(tr, va, {});
    REQUIRE(m.boundary_fit());
    CHECK(m.boundary_fit()->kept);
    CHECK(m.boundary().is_zero());
    CHECK(m.calibration_factor() == doctest::Approx(0.9).epsilon(1e-9));
    const auto alone = m.predict_mean(va.graphs);
    for (std::size_t i = 0; i < alone.size(); ++i)
        CHECK(alone[i] == doctest::Approx(0.9 * raw[45 + i].total_ms).epsilon(1e-9));
}

TEST_CASE("device model: the totals alone are the breakdown's totals, fallbacks and repeated kernels included") {
    // no samples of the fused Conv+Add+Act (priced as its operators unfused) nor of Pool (priced
    // as the nearest kind): both occur in NB201's cells
    auto samples = planted_samples(40, 7);
    std::erase_if(samples, [](const auto& s) { return s.kind == "Conv+Add+Act" || s.kind.rfind("Pool", 0) == 0; });
    const auto m = device::DeviceModel::build(rules(), samples, overhead_ms, one_regressor());
    REQUIRE(m.kinds().count("Conv+Add") == 1);
    auto nets = nb201_networks(40);
    nets.push_back(nets[3]);  // the same network twice in one call
    const auto ptrs = pointers(nets);
    const auto prices = m.price_networks(ptrs);
    const auto totals = m.price_totals(ptrs);
    const auto means = m.predict_mean(ptrs);
    REQUIRE(totals.size() == nets.size());
    bool unfused = false, nearest = false;
    for (std::size_t i = 0; i < nets.size(); ++i) {
        CHECK(totals[i] == doctest::Approx(prices[i].total_ms).epsilon(1e-12));
        CHECK(means[i] == totals[i]);
        // each network priced on its own: a kernel's figure does not depend on the others of a call
        const graph::Graph* one[] = {ptrs[i]};
        const auto alone = m.price_networks(one)[0];
        CHECK(alone.total_ms == doctest::Approx(totals[i]).epsilon(1e-12));
        REQUIRE(alone.kernels.size() == prices[i].kernels.size());
        double sum = prices[i].run_overhead_ms;
        for (std::size_t k = 0; k < alone.kernels.size(); ++k) {
            const auto& pk = prices[i].kernels[k];
            CHECK(pk.ms == doctest::Approx(alone.kernels[k].ms).epsilon(1e-12));
            CHECK(pk.priced_as == alone.kernels[k].priced_as);
            CHECK(pk.warning == alone.kernels[k].warning);
            sum += pk.ms;
            if (pk.kind == "Conv+Add+Act") {
                unfused = true;
                CHECK(pk.priced_as.find(" + ") != std::string::npos);
                CHECK(pk.warning.find("priced as its operators unfused") != std::string::npos);
            }
            if (pk.kind == "Pool") {
                nearest = true;
                CHECK(pk.priced_as != "Pool");
                CHECK(pk.warning.find("no samples of its own kind") != std::string::npos);
            }
        }
        CHECK(sum == doctest::Approx(totals[i]).epsilon(1e-12));
    }
    CHECK(unfused);
    CHECK(nearest);
    CHECK(totals.back() == totals[3]);
}

TEST_CASE("device model: the kernels of one network priced as another kind for one reason give one warning") {
    auto samples = planted_samples(40, 7);
    std::erase_if(samples, [](const auto& s) { return s.kind.rfind("Pool", 0) == 0; });
    const auto m = device::DeviceModel::build(rules(), samples, overhead_ms, one_regressor());
    bool grouped = false;
    for (const auto& net : nb201_networks(40)) {
        const graph::Graph* one[] = {&net};
        const auto p = m.price_networks(one).front();
        std::vector<std::size_t> pools;
        std::size_t warned = 0;
        for (std::size_t k = 0; k < p.kernels.size(); ++k) {
            warned += !p.kernels[k].warning.empty();
            if (p.kernels[k].kind == "Pool") pools.push_back(k);
        }
        const auto c = m.cost(net);
        if (pools.size() < 4 || warned != pools.size()) continue;
        // every warning is a Pool's, for the same reason: one line naming the first three and the count
        REQUIRE(c.fallbacks.size() == 1);
        const auto& line = c.fallbacks.front();
        const auto first = "kernels " + std::to_string(pools[0]) + ", " + std::to_string(pools[1]) + ", " +
                           std::to_string(pools[2]) + ", ... (" + std::to_string(pools.size()) +
                           " in all) (Pool) priced as ";
        CHECK(line.rfind(first, 0) == 0);
        CHECK(line.find("no samples of its own kind") != std::string::npos);
        CHECK(line.find("kernel " + std::to_string(pools[0]) + " ") == std::string::npos);
        grouped = true;
    }
    CHECK(grouped);
}

TEST_CASE("device model: a price after a failed one or a larger network is the price a fresh thread gives") {
    // pricing keeps its kernel graphs per thread between calls; what one call leaves there must
    // not reach the next
    const auto m = planted_model();
    const auto nets = nb201_networks(4);
    auto broken = nets[0];
    // a value two thirds into the network too large to count: the pass stops halfway through
    const int t = broken.nodes()[broken.num_nodes() * 2 / 3].outputs.front();
    broken.set_shape(t, {1, std::int64_t{1} << 40, std::int64_t{1} << 40, 8});
    const auto on_a_fresh_thread = [&](const graph::Graph& g) {
        std::vector<device::DevicePrice> p;
        std::thread([&] {
            const graph::Graph* one[] = {&g};
            p = m.price_networks(one);
        }).join();
        return p.front();
    };
    const graph::Graph* bad[] = {&broken};
    const std::string too_large = "tensor '" + broken.tensor(t).name + "' [1,1099511627776";
    for (const std::size_t i : {1, 2, 3, 1}) {
        CHECK_THROWS_WITH_AS(m.price_networks(bad), doctest::Contains(too_large.c_str()), shape_error);
        const graph::Graph* one[] = {&nets[i]};
        const auto here = m.price_networks(one).front();
        const auto fresh = on_a_fresh_thread(nets[i]);
        CHECK(here.total_ms == fresh.total_ms);
        REQUIRE(here.kernels.size() == fresh.kernels.size());
        for (std::size_t k = 0; k < here.kernels.size(); ++k) {
            CHECK(here.kernels[k].kind == fresh.kernels[k].kind);
            CHECK(here.kernels[k].nodes == fresh.kernels[k].nodes);
            CHECK(here.kernels[k].ms == fresh.kernels[k].ms);
        }
        // and the totals route, after a network of another size in the same thread
        const graph::Graph* two[] = {&nets[(i + 1) % nets.size()], &nets[i]};
        CHECK(m.price_totals(two).back() == fresh.total_ms);
    }
    // of many networks, the error says which one failed, by place and name, keeping its type
    const graph::Graph* three[] = {&nets[1], &broken, &nets[2]};
    const std::string which = "network 1 ('" + broken.name() + "'): " + too_large;
    CHECK_THROWS_WITH_AS(m.price_networks(three), doctest::Contains(which.c_str()), shape_error);
    CHECK_THROWS_WITH_AS(m.price_totals(three), doctest::Contains(which.c_str()), shape_error);
    auto nameless = broken;
    nameless.set_name("");
    const graph::Graph* two_bad[] = {&nets[1], &nameless};
    CHECK_THROWS_WITH_AS(m.price_totals(two_bad), doctest::Contains(("network 1: " + too_large).c_str()), shape_error);
    // and the next price is still a fresh thread's
    const graph::Graph* one[] = {&nets[2]};
    CHECK(m.price_networks(one).front().total_ms == on_a_fresh_thread(nets[2]).total_ms);
}

TEST_CASE("kernel batches: a repeated row is predicted once, its figure reaching every kernel that has it") {
    const auto m = planted_model();
    const auto* reg = m.kinds().at("Conv").regressor.get();
    REQUIRE(reg);
    const auto nets = nb201_networks(1);
    const auto kg = device::kernel_graph(nets[0], rules());
    std::vector<std::vector<double>> rows;
    for (std::size_t k = 0; k < kg.kernels.size() && rows.size() < 2; ++k) {
        auto f = device::kernel_features(nets[0], kg, k, 0);
        if (f.kind.key == "Conv" && (rows.empty() || rows[0] != f.values)) rows.push_back(std::move(f.values));
    }
    REQUIRE(rows.size() == 2);
    device::KernelBatches b(1, rows[0].size());
    b.add(0, rows[0], 0);
    b.add(0, rows[1], 1);
    b.add(0, rows[0], 2);
    b.add(0, rows[0], 0);
    CHECK(b.distinct_rows(0) == 2);
    // a row written in place (new_row, add_new_row) is a row like any other
    const auto room = b.new_row(0);
    std::copy(rows[1].begin(), rows[1].end(), room.begin());
    b.add_new_row(0, 2);
    CHECK(b.distinct_rows(0) == 2);
    std::vector<double> figures(3, 0.0);
    const device::TabularRegressor* regs[] = {reg};
    b.predict_into(regs, figures);
    const auto alone = [&](const std::vector<double>& r) {
        Mat<double> x(1, static_cast<Index>(r.size()));
        for (std::size_t j = 0; j < r.size(); ++j) x(0, static_cast<Index>(j)) = r[j];
        return reg->predict(x)[0];
    };
    CHECK(figures[0] == doctest::Approx(2 * alone(rows[0])).epsilon(1e-12));
    CHECK(figures[1] == doctest::Approx(alone(rows[1])).epsilon(1e-12));
    CHECK(figures[2] == doctest::Approx(alone(rows[0]) + alone(rows[1])).epsilon(1e-12));
    CHECK_THROWS_AS(b.add(1, rows[0], 0), shape_error);
    CHECK_THROWS_AS(b.add(0, std::vector<double>(3, 0.0), 0), shape_error);
    std::vector<double> too_few(2, 0.0);
    CHECK_THROWS_AS(b.predict_into(regs, too_few), shape_error);
    CHECK_THROWS_AS((void)b.new_row(1), shape_error);

    // many rows, each added twice: every one is found again, past the index's first size
    device::KernelBatches many(2, 3);
    for (int pass = 0; pass < 2; ++pass)
        for (int j = 0; j < 100; ++j)
            many.add(static_cast<std::size_t>(j % 2), std::vector<double>{j * 1.0, 1.0, -0.0}, 0);
    CHECK(many.distinct_rows(0) == 50);
    CHECK(many.distinct_rows(1) == 50);
    many.add(0, std::vector<double>{0.0, 1.0, 0.0}, 0);  // rows are told apart by their bits: -0.0 is not 0.0
    CHECK(many.distinct_rows(0) == 51);
}

TEST_CASE("device model: kernels priced beyond every sample say how far, one line per kind") {
    const auto m = planted_model();
    nb201::Arch a;
    for (auto& op : a.ops) op = nb201::Op::nor_conv_3x3;
    nb201::Nb201Options big;
    big.batch = 4096;  // beyond the sampler's largest work (4 G MACs, 64 M elements a tensor)
    for (const auto& o : {nb201::Nb201Options{}, big}) {
        const auto g = nb201::build_graph(a, o);
        const graph::Graph* one[] = {&g};
        const auto p = m.price_networks(one).front();
        const auto kg = device::kernel_graph(g, rules());
        std::size_t beyond = 0;
        for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
            const auto f = device::kernel_features(g, kg, k, 0);
            const auto* reg = m.kinds().at(p.kernels[k].priced_as).regressor.get();
            const double want = reg->work_beyond_samples(f.values);
            CHECK(p.kernels[k].beyond_samples == want);
            if (reg->kind().starts_with("roofline")) CHECK(want > 0);
            beyond += want > 1;
        }
        const auto c = m.cost(g);
        if (o.batch == 1) {
            CHECK(beyond == 0);
            CHECK(c.beyond_samples.empty());
        } else {
            CHECK(beyond > kg.kernels.size() / 2);
            REQUIRE_FALSE(c.beyond_samples.empty());
            CHECK(c.beyond_samples.front().find("x the work of the largest sample") != std::string::npos);
        }
    }
}

TEST_CASE("kernel figure memo: remembered figures are the regressor's own, bounded, per regressor") {
    auto m = planted_model();
    const auto nets = nb201_networks(4);
    std::vector<std::vector<double>> rows;
    for (const auto& g : nets) {
        const auto kg = device::kernel_graph(g, m.rules());
        for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
            auto f = device::kernel_features(g, kg, k, m.rules().layout.block);
            if (f.kind.key == "Conv" && std::find(rows.begin(), rows.end(), f.values) == rows.end())
                rows.push_back(std::move(f.values));
        }
    }
    REQUIRE(rows.size() >= 3);
    const auto* reg = m.kinds().at("Conv").regressor.get();
    const device::TabularRegressor* regs[] = {reg, reg};
    const auto priced = [&](std::span<const std::vector<double>> which, std::size_t r, device::KernelFigureMemo* memo) {
        device::KernelBatches b(2, rows[0].size());
        for (std::size_t i = 0; i < which.size(); ++i) b.add(r, which[i], i);
        std::vector<double> figures(which.size(), 0.0);
        b.predict_into(regs, figures, memo);
        return figures;
    };
    const std::span<const std::vector<double>> all(rows);
    const auto plain = priced(all, 0, nullptr);
    device::KernelFigureMemo memo;
    // the first two rows remembered, then all of them: bit for bit the figures without a memo
    CHECK(priced(all.first(2), 0, &memo) == std::vector<double>(plain.begin(), plain.begin() + 2));
    CHECK(memo.size() == 2);
    CHECK(priced(all, 0, &memo) == plain);
    CHECK(memo.size() == rows.size());
    CHECK(priced(all, 0, &memo) == plain);  // every row found: nothing added
    CHECK(memo.size() == rows.size());
    // a row is remembered for the regressor that priced it, not for another
    CHECK(priced(all.first(1), 1, &memo) == std::vector<double>{plain[0]});
    CHECK(memo.size() == rows.size() + 1);
    // bounded: once full it starts again; 0 keeps nothing
    memo.set_capacity(2);
    CHECK(memo.size() == 0);
    CHECK(priced(all, 0, &memo) == plain);
    CHECK(memo.size() <= 2);
    memo.set_capacity(0);
    CHECK(priced(all, 0, &memo) == plain);
    CHECK(memo.size() == 0);
    // a copy starts empty, with the same bound
    device::KernelFigureMemo big(100);
    (void)priced(all, 0, &big);
    const device::KernelFigureMemo copy(big);
    CHECK(copy.size() == 0);
    CHECK(copy.capacity() == 100);
}

TEST_CASE("device model: prices with the figure memo are the prices without it, call after call") {
    auto m = planted_model();
    const auto nets = nb201_networks(8);
    const auto ptrs = pointers(nets);
    auto without = device::DeviceModel::deserialize(m.serialize());
    without->set_memo_capacity(0);
    const auto want = without->price_totals(ptrs);
    CHECK(without->memo().size() == 0);
    // one network per call, twice over: the second pass finds every row and adds none
    for (int pass = 0; pass < 2; ++pass) {
        const auto before = m.memo().size();
        for (std::size_t i = 0; i < nets.size(); ++i) {
            const graph::Graph* one[] = {&nets[i]};
            CHECK(m.price_totals(one)[0] == want[i]);
        }
        CHECK(m.memo().size() > 0);
        if (pass == 1) CHECK(m.memo().size() == before);
    }
    CHECK(m.price_totals(ptrs) == want);
    const auto details = m.price_networks(ptrs);
    for (std::size_t i = 0; i < nets.size(); ++i) CHECK(details[i].total_ms == want[i]);
    // a model read back starts with an empty memo
    CHECK(device::DeviceModel::deserialize(m.serialize())->memo().size() == 0);

    // threads pricing with one model share its memo: every price is still the price without it,
    // while the memo fills, forgets (a bound below the rows met) and fills again
    auto shared = device::DeviceModel::deserialize(m.serialize());
    shared->set_memo_capacity(5);
    std::vector<std::vector<double>> got(4);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < got.size(); ++t)
        threads.emplace_back([&, t] {
            for (int pass = 0; pass < 10; ++pass)
                for (std::size_t i = 0; i < nets.size(); ++i) {
                    const graph::Graph* one[] = {&nets[(i + t) % nets.size()]};
                    got[t].push_back(shared->price_totals(one)[0]);
                }
        });
    for (auto& th : threads) th.join();
    for (std::size_t t = 0; t < got.size(); ++t)
        for (std::size_t k = 0; k < got[t].size(); ++k) CHECK(got[t][k] == want[(k % nets.size() + t) % nets.size()]);
    CHECK(shared->memo().size() <= 5);
}

TEST_CASE("device model: replaced rules price the kernels they form with the regressors kept") {
    auto m = planted_model();
    const auto nets = nb201_networks(6);
    const auto ptrs = pointers(nets);
    const auto before = m.price_networks(ptrs);
    // without the Conv + Relu fusion each Relu is a kernel of its own: more kernels, and each
    // convolution's price is the regressor's for the kind it now forms
    const auto unfused = device::FusionRules::parse(
        "dnncost-fusion-rules 1\ndevice planted\n"
        "fold Conv BatchNormalization operands=constant\n");
    auto copy = device::DeviceModel::deserialize(m.serialize());
    copy->replace_rules(unfused);
    CHECK(copy->rules() == unfused);
    const auto after = copy->price_networks(ptrs);
    for (std::size_t i = 0; i < nets.size(); ++i) {
        std::size_t kernels = 0;
        for (const auto& k : device::kernel_graph(nets[i], unfused).kernels) kernels += !k.is_layout_reorder();
        CHECK(after[i].kernels.size() == kernels);
        CHECK(after[i].kernels.size() > before[i].kernels.size());
        CHECK(after[i].run_overhead_ms == before[i].run_overhead_ms);
    }
    // the same rules again: the same prices, and the model reads back with its new rules
    copy->replace_rules(rules());
    CHECK(copy->price_totals(ptrs) == m.price_totals(ptrs));
    copy->replace_rules(unfused);
    CHECK(device::DeviceModel::deserialize(copy->serialize())->rules() == unfused);
    // rules written for another device, or that do not check, are refused
    CHECK_THROWS_WITH_AS(copy->replace_rules(device::FusionRules::parse("dnncost-fusion-rules 1\ndevice other\n")),
                         doctest::Contains("rules of device 'other' for a model of device 'planted'"), config_error);
}
