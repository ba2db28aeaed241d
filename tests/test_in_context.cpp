// In-context kernel samples: a profile mapped onto the kernel pass with hand-computed times and
// overhead removal; whole networks profiled and measured through the fake runner, whose answers
// the test plants per network (tests/measure/fake_runner.sh, mode planted): the planted samples
// come back, unmapped kernels are counted, a second run measures nothing again; device builds
// that take profiles as their main source, fall back to single kernels when the runner cannot
// profile (or stop, when profiles were required), and resume after a runner that crashed midway
// without measuring again what they had; a calibration profiles its shots, or times them alone
// when the runner cannot profile. The synthesised networks reach real sizes and fit limits.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/device/device_build.hpp>
#include <dnncost/device/in_context.hpp>
#include <dnncost/device/kernel_features.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_sample_file.hpp>
#include <dnncost/device/network_profiling.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/measure/kernel_profiles.hpp>
#include <dnncost/measure/store.hpp>
#include <dnncost/spaces/kws.hpp>
#include <dnncost/spaces/network_name.hpp>
#include <dnncost/spaces/synthetic.hpp>

#include "measure/quiet_machine.hpp"
#include "measure/scratch.hpp"

using namespace dnncost;
namespace fs = std::filesystem;

namespace {

using measure_tests::lines_of;
using measure_tests::Scratch;

device::FusionRules rules() {
    return device::FusionRules::parse(
        "dnncost-fusion-rules 1\n"
        "fold Conv BatchNormalization operands=constant\n"
        "fuse Conv Relu operands=none\n"
        "fuse Gemm Relu\n");
}

/// x -> Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm(10)
graph::Graph small_net() {
    spaces::NetworkBuilder b("small");
    int x = b.input("x", {1, 8, 8, 8});
    x = b.unary("Relu", b.conv(x, 8, 3, 1, 1, "conv"), "relu");
    x = b.flatten(b.global_average_pool(x, "pool"), "flatten");
    return b.finish({b.gemm(x, 10, "fc")});
}

std::string name_of_writer(const graph::Graph& g, const device::Kernel& k) {
    return g.node(g.tensor(k.outputs.front()).producer).name;
}

/// Planted answers for one network: kernel k of the pass takes `unit` (k + 1) ms profiled, every
/// `skip`-th kernel is left out of the profile (unmapped, and its first consumer in the profile
/// counts as the kernel the runtime fused it into), and a kernel the runtime inserted takes
/// 0.1 ms; the profiler adds `cost` ms to each of them. The unprofiled latency is chosen so that
/// the profile less that cost scales by `scale` with run overhead `overhead`. Returns each pass
/// kernel's expected sample (NaN: none).
std::vector<double> plant(const fs::path& dir, const graph::Graph& g, std::size_t skip, double scale,
                          double overhead, std::set<std::size_t>& merged, double cost = 0, double unit = 0.01) {
    const auto kg = device::kernel_graph(g, rules());
    std::vector<double> expected(kg.kernels.size(), std::nan(""));
    std::ostringstream kernels;
    kernels.precision(17);
    double sum = 0.1;
    kernels << "{\"name\":\"inserted_cast\",\"op\":\"Cast\",\"ms\":" << 0.1 + cost << "}";
    for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
        if (skip > 0 && k % skip == skip - 1) continue;
        const double ms = unit * static_cast<double>(k + 1);
        kernels << ",{\"name\":\"" << name_of_writer(g, kg.kernels[k]) << "\",\"op\":\"X\",\"ms\":" << ms + cost
                << "}";
        sum += ms;
        expected[k] = ms * scale;
    }
    const auto model = measure::network_key(g) + ".onnx";
    fs::create_directories(dir / "plant");
    std::ofstream(dir / "plant" / (model + ".profile")) << "\"latency_ms\":[9.0],\"kernels\":[" << kernels.str() << "]";
    std::ostringstream plain;
    plain.precision(17);
    plain << "\"latency_ms\":[" << overhead + scale * sum << "]";
    std::ofstream(dir / "plant" / (model + ".plain")) << plain.str();
    const auto left_out = [&](std::size_t k) { return skip > 0 && k % skip == skip - 1; };
    for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
        if (!left_out(k)) continue;
        for (const auto& e : kg.edges)
            if (e.src == static_cast<int>(k) && !left_out(static_cast<std::size_t>(e.dst))) {
                merged.insert(static_cast<std::size_t>(e.dst));
                break;
            }
    }
    for (const auto k : merged) expected[k] = std::nan("");
    return expected;
}

void plant_overhead(const fs::path& dir, double overhead) {
    fs::create_directories(dir / "plant");
    std::ofstream(dir / "plant" / (device::detail::overhead_sample().key + ".onnx.plain"))
        << "\"latency_ms\":[" << overhead << "]";
}

/// Two small networks of the generator: a convolutional one and a transformer.
std::vector<graph::Graph> tiny_networks(std::uint64_t seed = 4) {
    synthetic::Limits l;
    l.max_params = 60'000;
    l.max_macs = 5'000'000;
    l.classes = 10;
    Rng rng(seed);
    return {synthetic::build_cnn(synthetic::sample_cnn(rng), l),
            synthetic::build_transformer(synthetic::sample_transformer(rng), l)};
}

measure::HarnessOptions one_run() {
    measure::HarnessOptions h;
    h.rounds = h.max_rounds = 1;
    h.warmup = 0;
    h.repeats = 1;
    h.round_ms = 0;
    return h;
}

device::NetworkProfilingSetup profiling_setup(const Scratch& s, const std::string& mode) {
    device::NetworkProfilingSetup p;
    p.runners = {s.runner(mode)};
    p.device = "fake-device";
    p.store = s.dir / "networks.csv";
    p.harness = one_run();
    p.opset = synthetic::onnx_opset;
    p.retake_disturbed = false;  // the counts below would follow this machine's load
    p.confirm_latency = false;   // the counts below are of one latency a network, where not said
    return p;
}

/// The unprofiled latency plant() chose for `g`.
double planted_latency(const fs::path& dir, const graph::Graph& g) {
    const auto text = io::read_file(dir / "plant" / (measure::network_key(g) + ".onnx.plain"));
    const auto at = text.find('[');
    return std::stod(text.substr(at + 1, text.find(']') - at - 1));
}

device::DeviceBuildSetup build_setup(const Scratch& s, const std::string& mode) {
    device::DeviceBuildSetup b;
    b.runners = {s.runner(mode)};
    b.device = "fake-device";
    b.work_dir = s.dir / "work";
    b.rules = rules();
    b.harness = one_run();
    b.budget_minutes = 0;
    b.per_kind = 12;
    b.prior_per_space = 0;
    b.adaptive_rounds = 0;
    b.model.min_samples = 12;  // the fewest a regressor fits on
    b.profiled_networks = tiny_networks();
    b.retake_disturbed = false;  // the counts below would follow this machine's load
    b.confirm_latency = false;   // the counts below are of one latency a network
    return b;
}

}  // namespace

TEST_CASE("in-context samples: mapped kernels scaled to the unprofiled latency, hand-computed") {
    const auto g = small_net();
    const auto kg = device::kernel_graph(g, rules());
    std::vector<std::string> kinds;
    for (const auto& k : kg.kernels) kinds.push_back(k.kind);
    REQUIRE(kinds == std::vector<std::string>{"Conv+Relu", "GlobalAveragePool", "Gemm"});
    for (std::size_t k = 0; k < kinds.size(); ++k) kinds[k] = device::kernel_features(g, kg, k, 0).kind.key;
    // the runtime ran the convolution apart from its ReLU (both the fused kernel's time) and
    // inserted a kernel of its own; the profile adds up to 5 ms, the run took 3 ms with an
    // overhead of 0.5 ms: every time scales by (3 - 0.5) / 5 = 0.5
    const std::vector<measure::RuntimeKernel> profile{
        {"conv", "Conv", 1.5}, {"relu", "Relu", 0.5}, {"pool", "GlobalAveragePool", 1.0},
        {"fc", "Gemm", 1.0},   {"copy_1", "MemcpyToHost", 1.0}};
    const auto s = device::in_context_samples(g, "net", rules(), profile, {}, 3.0, 0.5);
    CHECK(s.profiled_ms == doctest::Approx(5.0));
    CHECK(s.sampled_ms == doctest::Approx(4.0));
    CHECK(s.scale == doctest::Approx(0.5));
    CHECK(s.pass_kernels == 3);
    CHECK(s.unmapped == 0);
    REQUIRE(s.rows.size() == 3);
    const double expected[] = {1.0, 0.5, 0.5};
    for (std::size_t k = 0; k < 3; ++k) {
        CHECK(s.rows[k].kind == kinds[k]);
        CHECK(s.rows[k].key == "net#" + std::to_string(k));
        CHECK(s.rows[k].in_context);
        CHECK(s.rows[k].latency_ms == doctest::Approx(expected[k]));
        CHECK(s.rows[k].features == device::kernel_features(g, kg, k, 0).values);
    }

    // the classifier missing from the profile: skipped and counted; a latency below the
    // overhead keeps a tenth of itself, (0.4 / 4) per profiled ms
    const std::vector<measure::RuntimeKernel> partial{{"relu", "Relu", 2.0}, {"pool", "GlobalAveragePool", 2.0}};
    const auto p = device::in_context_samples(g, "net", rules(), partial, {}, 0.4, 0.5);
    CHECK(p.unmapped == 1);
    CHECK(p.merged == 0);
    REQUIRE(p.rows.size() == 2);
    CHECK(p.rows[0].kind == kinds[0]);
    CHECK(p.rows[1].kind == kinds[1]);
    CHECK(p.scale == doctest::Approx(0.01));
    CHECK(p.rows[0].latency_ms == doctest::Approx(0.02));

    // the pooling missing: the runtime fused it into the classifier, whose time is not its own
    const std::vector<measure::RuntimeKernel> fused{{"relu", "Relu", 2.0}, {"fc", "Gemm", 2.0}};
    const auto f = device::in_context_samples(g, "net", rules(), fused, {}, 4.5, 0.5);
    CHECK(f.unmapped == 1);
    CHECK(f.merged == 1);
    REQUIRE(f.rows.size() == 1);
    CHECK(f.rows[0].kind == kinds[0]);
    CHECK(f.rows[0].latency_ms == doctest::Approx(2.0));

    CHECK_THROWS_WITH_AS(device::in_context_samples(g, "net", rules(), {}, {}, 1.0, 0.5),
                         doctest::Contains("add up to 0 ms"), config_error);
    CHECK_THROWS_AS(device::in_context_samples(g, "net", rules(), profile, {}, std::nan(""), 0.5), config_error);
}

TEST_CASE("in-context samples: the profiler's per-kernel cost comes off every kernel before scaling") {
    const auto g = small_net();
    // 0.3 ms a kernel: the ReLU, profiled at 0.2 ms, keeps a tenth of its time; the rest lose
    // 0.3 ms each: 1.2 + 0.02 + 0.7 + 0.4 + 0.7 = 3.02 ms, scaled by (3 - 0.5) / 3.02
    const std::vector<measure::RuntimeKernel> profile{
        {"conv", "Conv", 1.5}, {"relu", "Relu", 0.2}, {"pool", "GlobalAveragePool", 1.0},
        {"fc", "Gemm", 0.7},   {"copy_1", "MemcpyToHost", 1.0}};
    const device::ProfilerCost cost{0.3, 1.05, 3};
    const auto s = device::in_context_samples(g, "net", rules(), profile, {}, 3.0, 0.5, cost);
    const double scale = 2.5 / 3.02;
    CHECK(s.profiled_ms == doctest::Approx(4.4));
    CHECK(s.profiler_ms == doctest::Approx(4.4 - 3.02));
    CHECK(s.sampled_ms == doctest::Approx(1.22 + 0.7 + 0.4));
    CHECK(s.scale == doctest::Approx(scale));
    REQUIRE(s.rows.size() == 3);
    CHECK(s.rows[0].latency_ms == doctest::Approx(1.22 * scale));
    CHECK(s.rows[1].latency_ms == doctest::Approx(0.7 * scale));
    CHECK(s.rows[2].latency_ms == doctest::Approx(0.4 * scale));
    // the default cost removes nothing
    const auto plain = device::in_context_samples(g, "net", rules(), profile, {}, 3.0, 0.5);
    CHECK(plain.profiler_ms == 0);
    CHECK(plain.scale == doctest::Approx(2.5 / 4.4));
}

TEST_CASE("profiler cost: recovered from planted networks, a disturbed one does not pull it, guarded") {
    // profiled sum = 1.04 (latency - 0.01) + 0.004 n, for networks of many sizes
    const double overhead = 0.01;
    const auto planted = [&](double latency, std::size_t n, double factor = 1.04, double cost = 0.004) {
        return device::ProfiledTotals{factor * (latency - overhead) + cost * static_cast<double>(n), n, latency};
    };
    std::vector<device::ProfiledTotals> nets{planted(0.5, 200),  planted(2.0, 350), planted(12.0, 120),
                                             planted(40.0, 60),  planted(1.2, 90),  planted(150.0, 200),
                                             planted(0.15, 15)};
    const auto c = device::fit_profiler_cost(nets, overhead);
    CHECK(c.networks == nets.size());
    CHECK(c.per_kernel_ms == doctest::Approx(0.004).epsilon(1e-4));
    CHECK(c.factor == doctest::Approx(1.04).epsilon(1e-4));

    // one network profiled in a disturbed hour, 1.8 times too slow: least absolute error ignores it
    auto disturbed = nets;
    disturbed[2].profiled_ms *= 1.8;
    const auto d = device::fit_profiler_cost(disturbed, overhead);
    CHECK(d.per_kernel_ms == doctest::Approx(0.004).epsilon(0.02));
    CHECK(d.factor == doctest::Approx(1.04).epsilon(0.02));

    // a network without a latency above the overhead, or without kernels, is left out
    auto unusable = nets;
    unusable.push_back({5.0, 10, 0.005});
    unusable.push_back({5.0, 0, 5.0});
    CHECK(device::fit_profiler_cost(unusable, overhead).networks == nets.size());

    // too few networks, or networks that cannot tell a per-kernel cost from a slower run: nothing
    CHECK(device::fit_profiler_cost(std::span(nets).first(2), overhead).networks == 0);
    CHECK(device::fit_profiler_cost(std::span(nets).first(2), overhead).per_kernel_ms == 0);
    const std::vector<device::ProfiledTotals> alike{{1.0, 10, 1.0}, {2.0, 20, 2.0}, {4.0, 40, 4.0}};
    const auto a = device::fit_profiler_cost(alike, 0.0);
    CHECK(a.networks == 0);
    CHECK(a.per_kernel_ms == 0);
    CHECK(a.factor == 1);

    // networks of three or four kernels, each profiled run 0.5 ms longer than its unprofiled one:
    // that difference is not a per-kernel cost (it would have been fitted as about 0.17 ms)
    std::vector<device::ProfiledTotals> offset;
    for (const auto& [latency, n] :
         std::vector<std::pair<double, std::size_t>>{{2.0, 3}, {5.0, 4}, {9.0, 3}, {20.0, 4}, {40.0, 4}})
        offset.push_back({1.02 * (latency - overhead) + 0.5, n, latency});
    const auto o = device::fit_profiler_cost(offset, overhead);
    CHECK(o.networks == offset.size());
    CHECK(o.per_kernel_ms == 0);
    CHECK(o.factor > 1.02);
    CHECK(o.factor < 1.3);

    // runs the profiler made faster per kernel: no negative cost, the factor alone (its median)
    std::vector<device::ProfiledTotals> faster{planted(0.5, 200, 1.1, -0.001), planted(12.0, 120, 1.1, -0.001),
                                               planted(40.0, 60, 1.1, -0.001), planted(2.0, 350, 1.1, -0.001)};
    const auto f = device::fit_profiler_cost(faster, overhead);
    CHECK(f.per_kernel_ms == 0);
    CHECK(f.factor > 1.0);
    CHECK(f.factor < 1.1);

    // a cost as large as a network's mean kernel time would leave that network nothing
    std::vector<device::ProfiledTotals> heavy{planted(0.5, 200, 1.0, 0.05), planted(12.0, 120, 1.0, 0.05),
                                              planted(40.0, 60, 1.0, 0.05)};
    const auto h = device::fit_profiler_cost(heavy, overhead);
    const double smallest_mean = heavy[0].profiled_ms / 200.0;
    CHECK(h.per_kernel_ms == doctest::Approx(0.9 * smallest_mean));
    CHECK(h.per_kernel_ms < smallest_mean);
}

TEST_CASE("network profiling: the planted in-context samples, unmapped kernels counted, resumable") {
    const Scratch s("test_in_context", "profiling");
    const auto nets = tiny_networks();
    std::vector<std::vector<double>> expected;
    std::vector<std::set<std::size_t>> merged(nets.size());
    for (std::size_t i = 0; i < nets.size(); ++i) expected.push_back(plant(s.dir, nets[i], 4, 0.5, 0.25, merged[i]));
    auto setup = profiling_setup(s, "planted");
    setup.confirm_latency = true;
    const auto r = device::profile_networks(nets, rules(), 0.25, setup);
    CHECK(r.profiles);
    CHECK(r.profiled == 2);
    CHECK(r.measured == 2);
    CHECK(r.confirmed == 2);
    CHECK(r.latency_disagreed == 0);
    CHECK(r.without_profile == 0);
    CHECK(r.failed == 0);
    REQUIRE(r.networks.size() == 2);
    std::size_t rows = 0, unmapped = 0, kernels = 0, fused = 0;
    for (std::size_t i = 0; i < nets.size(); ++i) {
        CHECK(r.networks[i].scale == doctest::Approx(0.5));
        CHECK(r.networks[i].id == nets[i].name());
        const auto key = measure::network_key(nets[i]);
        fused += merged[i].size();
        for (std::size_t k = 0; k < expected[i].size(); ++k) {
            ++kernels;
            if (std::isnan(expected[i][k])) {
                unmapped += merged[i].count(k) == 0;
                continue;
            }
            REQUIRE(rows < r.rows.size());
            CHECK(r.rows[rows].key == key + "#" + std::to_string(k));
            CHECK(r.rows[rows].latency_ms == doctest::Approx(expected[i][k]));
            CHECK(r.rows[rows].in_context);
            ++rows;
        }
    }
    CHECK(r.rows.size() == rows);
    CHECK(unmapped > 0);
    CHECK(r.unmapped == unmapped);
    CHECK(fused > 0);
    CHECK(r.merged == fused);
    CHECK(r.pass_kernels == kernels);
    CHECK(lines_of(s.dir / "profiles.log") == 2);
    CHECK(lines_of(s.dir / "requests.log") == 6);  // a profile and two latencies each
    CHECK(measure::ResultsStore(device::again_store_path(setup.store)).records().size() == 2);
    // the profiles are kept beside the store; a model file goes once its network is done
    CHECK(measure::read_kernel_profiles(measure::kernel_profiles_path(setup.store)).size() == 2);
    CHECK(fs::is_empty(s.dir / "networks.csv.models"));

    const auto again = device::profile_networks(nets, rules(), 0.25, setup);
    CHECK(again.from_store == 2);
    CHECK(again.measured + again.profiled == 0);
    CHECK(again.rows.size() == rows);
    CHECK(lines_of(s.dir / "requests.log") == 6);
}

TEST_CASE(
    "network profiling: a latency taken in a slow spell the reference missed is measured again, the median kept") {
    // the first latency of the second network came from a spell 60 % slower that the reference
    // network, measured at the chunk's start and end, did not see; the third network's first is
    // 3 % off, within the noise bound
    for (const bool confirm : {true, false}) {
        CAPTURE(confirm);
        const Scratch s("test_in_context", confirm ? "confirm_on" : "confirm_off");
        auto nets = tiny_networks();
        for (auto& g : tiny_networks(9)) nets.push_back(std::move(g));
        std::vector<std::vector<double>> expected;
        std::vector<std::set<std::size_t>> merged(nets.size());
        for (std::size_t i = 0; i < nets.size(); ++i)
            expected.push_back(plant(s.dir, nets[i], 0, 0.5, 0.25, merged[i]));
        std::vector<double> planted;
        for (const auto& g : nets) planted.push_back(planted_latency(s.dir, g));
        const auto plain_first = [&](std::size_t i, double factor) {
            std::ostringstream v;
            v.precision(17);
            v << "\"latency_ms\":[" << factor * planted[i] << "]";
            std::ofstream(s.dir / "plant" / (measure::network_key(nets[i]) + ".onnx.plain.first")) << v.str();
        };
        plain_first(1, 1.6);
        plain_first(2, 1.03);
        auto setup = profiling_setup(s, "planted");
        setup.confirm_latency = confirm;
        setup.load_sampler = measure_tests::quiet_machine();
        const auto r = device::profile_networks(nets, rules(), 0.25, setup);
        REQUIRE(r.networks.size() == nets.size());
        CHECK(r.disturbance.disturbed == 0);  // the reference saw nothing
        if (!confirm) {
            CHECK(r.confirmed == 0);
            CHECK(r.networks[1].latency_ms == doctest::Approx(1.6 * planted[1]));
            CHECK(r.networks[1].scale > 0.75);  // every sample of it 60 % and more too slow
            continue;
        }
        CHECK(r.confirmed == 4);
        CHECK(r.latency_disagreed == 1);
        CHECK(r.unconfirmed == 0);
        REQUIRE(r.disagreements.size() == 1);
        CHECK(r.disagreements.front().find(nets[1].name() + ": latency ") == 0);
        CHECK(r.disagreements.front().find("the median") != std::string::npos);
        CHECK(lines_of(s.dir / "profiles.log") == 4);
        CHECK(lines_of(s.dir / "requests.log") == 4 + 4 + 4 + 1);  // profiles, two latencies each, one third
        for (std::size_t i = 0; i < nets.size(); ++i) {
            CAPTURE(i);
            CHECK(r.networks[i].latencies == (i == 1 ? 3u : 2u));
            CHECK(r.networks[i].latency_ms == doctest::Approx(i == 2 ? 1.015 * planted[i] : planted[i]));
        }
        // the planted samples come back, the second network's at their own speed
        std::size_t row = 0;
        for (std::size_t i = 0; i < nets.size(); ++i)
            for (double e : expected[i]) {
                if (std::isnan(e)) continue;
                REQUIRE(row < r.rows.size());
                if (i != 2) CHECK(r.rows[row].latency_ms == doctest::Approx(e));
                ++row;
            }
        CHECK(row == r.rows.size());
        // the median is the store's result: a resumed run finds both latencies agreeing
        CHECK(measure::ResultsStore(setup.store).result(measure::network_key(nets[1]))->latency_ms ==
              doctest::Approx(planted[1]));
        const auto again = device::profile_networks(nets, rules(), 0.25, setup);
        CHECK(again.from_store == nets.size());
        CHECK(again.latency_disagreed == 0);
        CHECK(lines_of(s.dir / "requests.log") == 13);
        REQUIRE(again.networks.size() == nets.size());
        CHECK(again.networks[1].latency_ms == doctest::Approx(planted[1]));
        CHECK(fs::is_empty(s.dir / "networks.csv.models"));
    }
}

TEST_CASE("network profiling: a chunk whose reference ran slow throughout is profiled and measured again") {
    // two networks, one a chunk; the second chunk's reference requests (the 4th and 5th: the first
    // chunk makes a probe, then one at its start and one at its end) answer 50 % slower
    for (const bool retake : {false, true}) {
        const Scratch s("test_in_context", retake ? "slow_chunk_retaken" : "slow_chunk_kept");
        const auto nets = tiny_networks();
        std::vector<std::vector<double>> expected;
        std::vector<std::set<std::size_t>> merged(nets.size());
        for (std::size_t i = 0; i < nets.size(); ++i)
            expected.push_back(plant(s.dir, nets[i], 4, 0.5, 0.25, merged[i]));
        std::ofstream(s.dir / "slow_references") << "4\n5\n";
        auto setup = profiling_setup(s, "planted");
        setup.retake_disturbed = retake;
        setup.load_sampler = measure_tests::quiet_machine();
        const auto r = device::profile_networks(nets, rules(), 0.25, setup);
        CHECK(r.measured == 2);
        REQUIRE(r.networks.size() == 2);
        CHECK(r.disturbance.chunks == 2);
        if (retake) {
            CHECK(r.disturbance.retaken == 1);
            CHECK(r.disturbance.disturbed == 0);
            CHECK(lines_of(s.dir / "profiles.log") == 3);  // the second network profiled again
            CHECK(lines_of(s.dir / "requests.log") == 6);
            CHECK(fs::is_empty(s.dir / "networks.csv.models"));
        } else {
            CHECK(r.disturbance.disturbed == 1);
            REQUIRE(r.disturbance.reasons.size() == 1);
            CHECK(r.disturbance.reasons.front().find("slower than in the 1 of 2 chunks that agree") !=
                  std::string::npos);
            CHECK(lines_of(s.dir / "profiles.log") == 2);
            CHECK(lines_of(s.dir / "requests.log") == 4);
        }
        for (const auto& n : r.networks) CHECK(n.scale == doctest::Approx(0.5));  // the planted answers
    }
}

TEST_CASE("network profiling: a per-kernel profiler cost in every profile is fitted across the networks and taken off") {
    const Scratch s("test_in_context", "profiler_cost");
    auto nets = tiny_networks();
    for (auto& g : tiny_networks(9)) nets.push_back(std::move(g));
    // 3 us a kernel on top of kernels of 10, 20, 30 and 40 us per unit, no other slowdown
    std::vector<std::vector<double>> expected;
    std::vector<std::set<std::size_t>> merged(nets.size());
    for (std::size_t i = 0; i < nets.size(); ++i)
        expected.push_back(plant(s.dir, nets[i], 0, 1.0, 0.25, merged[i], 0.003, 0.01 * static_cast<double>(i + 1)));
    const auto r = device::profile_networks(nets, rules(), 0.25, profiling_setup(s, "planted"));
    REQUIRE(r.networks.size() == nets.size());
    CHECK(r.profiler_cost.networks == nets.size());
    CHECK(r.profiler_cost.per_kernel_ms == doctest::Approx(0.003).epsilon(1e-6));
    CHECK(r.profiler_cost.factor == doctest::Approx(1.0).epsilon(1e-6));
    std::size_t row = 0;
    for (std::size_t i = 0; i < nets.size(); ++i) {
        // the cost off, the profile adds up to the latency: nothing left to scale
        CHECK(r.networks[i].scale == doctest::Approx(1.0));
        CHECK(r.networks[i].profiler_ms > 0);
        for (double e : expected[i]) {
            if (std::isnan(e)) continue;
            REQUIRE(row < r.rows.size());
            CHECK(r.rows[row].latency_ms == doctest::Approx(e));
            ++row;
        }
    }
    CHECK(row == r.rows.size());
}

TEST_CASE("network profiling: a profile far out of line with the others is taken again, the second one kept") {
    // again: the second profile answers; off: no second profile is asked for; fails: the second
    // request answers without kernels, and the first profile stays (the network has one)
    for (const std::string mode : {"again", "off", "fails"}) {
        CAPTURE(mode);
        const bool again = mode == "again";
        const Scratch s("test_in_context", "reprofile_" + mode);
        auto nets = tiny_networks();
        for (auto& g : tiny_networks(9)) nets.push_back(std::move(g));
        std::vector<std::vector<double>> expected;
        std::vector<std::set<std::size_t>> merged(nets.size());
        for (std::size_t i = 0; i < nets.size(); ++i)
            expected.push_back(plant(s.dir, nets[i], 0, 1.0, 0.25, merged[i]));
        // the first profile of the third network ran while the host was three times slower
        const auto model = s.dir / "plant" / (measure::network_key(nets[2]) + ".onnx.profile");
        std::string text = io::read_file(model);
        std::string slow;
        for (std::size_t at = 0;;) {
            const auto ms = text.find("\"ms\":", at);
            slow += text.substr(at, ms == std::string::npos ? std::string::npos : ms + 5 - at);
            if (ms == std::string::npos) break;
            const auto end = text.find('}', ms);
            std::ostringstream v;
            v.precision(17);
            v << 3 * std::stod(text.substr(ms + 5, end - ms - 5));
            slow += v.str();
            at = end;
        }
        std::ofstream(model.string() + ".first") << slow;
        if (mode == "fails") std::ofstream(model) << "\"latency_ms\":[1.0]";
        auto setup = profiling_setup(s, "planted");
        if (mode == "off") setup.profile_disagreement = 0;
        const auto r = device::profile_networks(nets, rules(), 0.25, setup);
        REQUIRE(r.networks.size() == nets.size());
        CHECK(r.reprofiled == (again ? 1u : 0u));
        CHECK(r.without_profile == 0);
        CHECK(lines_of(s.dir / "profiles.log") == nets.size() + (mode == "off" ? 0 : 1));
        if (mode == "fails") {
            CHECK(std::any_of(r.problems.begin(), r.problems.end(), [](const std::string& p) {
                return p.find("no second profile (the first is kept)") != std::string::npos;
            }));
            continue;  // the first, slow profile stays: its kernels are three times their time
        }
        for (std::size_t i = 0; i < nets.size(); ++i)
            CHECK(r.networks[i].scale == doctest::Approx(i == 2 && !again ? 1.0 / 3 : 1.0));
        // the kept profile is the second one, in the kernel file as well
        std::size_t row = 0;
        for (std::size_t i = 0; i < nets.size(); ++i)
            for (double e : expected[i]) {
                if (std::isnan(e)) continue;
                REQUIRE(row < r.rows.size());
                CHECK(r.rows[row].latency_ms == doctest::Approx(e));
                ++row;
            }
        if (again) {
            const auto kept = measure::read_kernel_profiles(measure::kernel_profiles_path(setup.store));
            const auto it = std::find_if(kept.begin(), kept.end(),
                                         [&](const auto& p) { return p.key == measure::network_key(nets[2]); });
            REQUIRE(it != kept.end());
            CHECK(it->kernels.front().ms == doctest::Approx(0.1));
        }
    }
}

TEST_CASE("network profiling: a runner that cannot profile is found on one network") {
    const Scratch s("test_in_context", "no_profile");
    const auto r = device::profile_networks(tiny_networks(), rules(), 0.25, profiling_setup(s, "good"));
    CHECK_FALSE(r.profiles);
    CHECK(r.rows.empty());
    CHECK(r.over_budget == 0);
    CHECK(lines_of(s.dir / "profiles.log") == 1);
    CHECK(lines_of(s.dir / "requests.log") == 1);  // no latency measured
}

TEST_CASE("device build: profiled networks are the main source, single kernels fill the kinds they miss") {
    const Scratch s("test_in_context", "build");
    auto setup = build_setup(s, "planted");
    plant_overhead(s.dir, 0.25);
    std::map<std::string, double> expected;  // by sample key
    for (const auto& g : setup.profiled_networks) {
        std::set<std::size_t> merged;
        const auto e = plant(s.dir, g, 4, 0.5, 0.25, merged);
        for (std::size_t k = 0; k < e.size(); ++k)
            if (!std::isnan(e[k])) expected[measure::network_key(g) + "#" + std::to_string(k)] = e[k];
    }
    setup.in_context = device::InContext::on;
    const auto r = device::build_device_model({}, setup);
    CHECK(r.in_context);
    CHECK(r.in_context_note.empty());
    REQUIRE(r.profiling);
    CHECK(r.context_samples == expected.size());
    CHECK(r.profiling->unmapped > 0);
    CHECK(r.model.run_overhead_ms() == doctest::Approx(0.25));
    // single kernels only for kinds whose family the profiles left short of samples
    std::map<std::string, int> per_family;
    const auto family = [](const std::string& k) { return k.substr(0, k.find('+')); };
    const auto file = device::read_kernel_sample_file(setup.work_dir / "kernel_samples.json");
    std::size_t in_context = 0;
    for (std::size_t i = 0; i < file.samples.size(); ++i) {
        if (!file.samples[i].in_context) continue;
        ++in_context;
        ++per_family[family(file.samples[i].kind)];
        REQUIRE(expected.count(file.keys[i]));
        CHECK(file.samples[i].latency_ms == doctest::Approx(expected[file.keys[i]]));
    }
    CHECK(in_context == expected.size());
    CHECK(file.samples.size() == r.samples);
    CHECK(r.samples == r.context_samples + r.isolated_samples);
    const std::set<std::string> isolated(r.isolated_kinds.begin(), r.isolated_kinds.end());
    device::KernelSampler sampler(rules(), setup.sampler);
    for (const auto& kind : sampler.kinds())
        CHECK_MESSAGE(isolated.count(kind) == (per_family[family(kind)] < setup.model.min_samples ? 1u : 0u), kind);
    CHECK(isolated.size() < sampler.kinds().size());

    // the build's networks store names its networks, and the names build them again: the store
    // loads as a data set (`device residual --data WORK/networks.csv`) with no model file
    const auto networks = measure::load_results_dataset(setup.work_dir / "networks.csv", {"latency_ms"}, true, {}, {});
    REQUIRE(networks.size() == setup.profiled_networks.size());
    const measure::ResultsStore build_store(setup.work_dir / "networks.csv");
    for (std::size_t i = 0; i < networks.size(); ++i) {
        const auto* row = build_store.result(measure::network_key(*networks.graph(i)));
        REQUIRE(row);
        CHECK(row->id == networks.key(i));
        CHECK(spaces::parse_network_name(row->id));
    }

    // the samples in context keep their own time when the model is fitted again
    const auto refit = device::refit_device_model(setup.work_dir, setup.model);
    CHECK(refit.priced_kinds() == r.model.priced_kinds());

    // calibrating on the same networks: measured and profiled at once, every mapped kernel
    // handed to the calibration, the store's names still reading back as the model files
    const auto copy = [&] { return device::DeviceModel::deserialize(r.model.serialize()); };
    auto model = copy();
    device::DeviceCalibrationSetup cal;
    cal.runners = {s.runner("planted")};
    cal.work_dir = s.dir / "calibration";
    cal.harness = one_run();
    cal.retake_disturbed = false;
    const auto before = lines_of(s.dir / "requests.log");
    const auto c = device::calibrate_device_model(*model, setup.profiled_networks, cal);
    CHECK(c.profile_problems.empty());
    CHECK(c.profiled_kernels == expected.size());
    CHECK(c.report.profiled_kernels == expected.size());
    REQUIRE(c.shots.size() == setup.profiled_networks.size());
    const auto profiles = measure::read_kernel_profiles(cal.work_dir / "shots.kernels.jsonl");
    CHECK(profiles.size() == setup.profiled_networks.size());
    const auto requests = lines_of(s.dir / "requests.log") - before;
    CHECK(requests == 2 * setup.profiled_networks.size());  // one profiled, one timed per network
    measure::ResultsStore store(cal.work_dir / "shots.csv");
    for (std::size_t i = 0; i < c.shots.size(); ++i) {
        const auto key = measure::network_key(setup.profiled_networks[i]);
        const auto* row = store.result(key);
        REQUIRE(row);
        CHECK(row->latency_ms == doctest::Approx(c.measured_ms[i]));
        CHECK(row->id == setup.profiled_networks[i].name());  // a name that builds the network again
    }
    CHECK(measure::load_results_dataset(cal.work_dir / "shots.csv", {"latency_ms"}, true, {}, {}).size() ==
          c.shots.size());
    // resumed: nothing measured again, the same calibration
    auto again_model = copy();
    const auto again = device::calibrate_device_model(*again_model, setup.profiled_networks, cal);
    CHECK(lines_of(s.dir / "requests.log") - before == requests);
    CHECK(again.profiled_kernels == c.profiled_kernels);
    CHECK(again_model->calibration_factor() == model->calibration_factor());

    // a shot whose name is not its network's (an imported model may carry any name): stored by its
    // model file, which stays
    auto renamed = setup.profiled_networks;
    renamed[0].set_name(renamed[1].name());
    auto renamed_model = copy();
    cal.work_dir = s.dir / "calibration_renamed";
    (void)device::calibrate_device_model(*renamed_model, renamed, cal);
    {
        const auto key = measure::network_key(renamed[0]);
        const measure::ResultsStore renamed_store(cal.work_dir / "shots.csv");
        const auto* row = renamed_store.result(key);
        REQUIRE(row);
        CHECK(row->id == "models/" + key + ".onnx");
        CHECK(fs::exists(cal.work_dir / row->id));
    }

    // a runner that cannot profile: found on the first shot, the shots then timed without
    auto plain_model = copy();
    cal.runners = {s.runner("good")};
    cal.work_dir = s.dir / "calibration_plain";
    const auto p = device::calibrate_device_model(*plain_model, setup.profiled_networks, cal);
    CHECK(p.profiled_kernels == 0);
    CHECK(p.report.profiled_kernels == 0);
    REQUIRE(p.profile_problems.size() == 1);
    CHECK(p.profile_problems[0].find("without kernels") != std::string::npos);
    CHECK(p.shots.size() == setup.profiled_networks.size());
}

TEST_CASE("device build: a runner that cannot profile falls back to single kernels, or stops when profiles are required") {
    const Scratch s("test_in_context", "fallback");
    auto setup = build_setup(s, "good");
    setup.in_context = device::InContext::on;
    CHECK_THROWS_WITH_AS(device::build_device_model({}, setup), doctest::Contains("cannot profile"), config_error);
    CHECK_FALSE(fs::exists(setup.work_dir / "kernel_samples.json"));

    setup.in_context = device::InContext::automatic;
    const auto r = device::build_device_model({}, setup);
    CHECK_FALSE(r.in_context);
    CHECK(r.in_context_note.find("does not profile") != std::string::npos);
    CHECK(r.context_samples == 0);
    CHECK(r.samples == r.isolated_samples);
    CHECK(r.isolated_kinds == device::KernelSampler(rules(), setup.sampler).kinds());
    CHECK(lines_of(s.dir / "profiles.log") == 2);  // one network asked, by each build

    // off: today's path, no profiled request at all
    setup.in_context = device::InContext::off;
    setup.work_dir = s.dir / "off";
    const auto off = device::build_device_model({}, setup);
    CHECK(off.samples == r.samples);
    CHECK(lines_of(s.dir / "profiles.log") == 2);
}

TEST_CASE("device build: a runner that crashes midway, and the build resumes without measuring again") {
    const Scratch s("test_in_context", "crash");
    auto setup = build_setup(s, "planted");
    setup.in_context = device::InContext::on;
    plant_overhead(s.dir, 0.25);
    std::set<std::size_t> merged;
    for (const auto& g : setup.profiled_networks) (void)plant(s.dir, g, 4, 0.5, 0.25, merged);
    // the overhead, the first network's profile and latency, the second's profile; then it dies
    std::ofstream(s.dir / "crash_after") << 4;
    try {
        (void)device::build_device_model({}, setup);
    } catch (const config_error&) {
        // too little to fit a model is a clear error; what was measured stays in the stores
    }
    const auto first = measure::network_key(setup.profiled_networks[0]) + ".onnx";
    const auto second = measure::network_key(setup.profiled_networks[1]) + ".onnx";
    const auto count = [&](const std::string& file, const std::string& model) {
        std::ifstream in(s.dir / file);
        std::size_t n = 0;
        for (std::string line; std::getline(in, line);) n += fs::path(line).filename() == model;
        return n;
    };
    CHECK(count("profiles.log", first) == 1);
    CHECK(count("profiles.log", second) == 1);
    CHECK(measure::read_kernel_profiles(setup.work_dir / "networks.kernels.jsonl").size() == 2);
    const auto before = lines_of(s.dir / "requests.log");

    fs::remove(s.dir / "crash_after");
    const auto r = device::build_device_model({}, setup);
    CHECK(r.in_context);
    REQUIRE(r.profiling);
    CHECK(r.profiling->networks.size() == 2);
    CHECK(r.profiling->profiled == 0);  // both profiles were kept
    CHECK(r.profiling->measured == 1);  // the second network's latency only
    CHECK(count("profiles.log", first) == 1);
    CHECK(count("profiles.log", second) == 1);
    CHECK(count("requests.log", first) == 2);
    // the overhead and the first network were not measured again
    CHECK(lines_of(s.dir / "requests.log") - before == 1 + r.measured);
}

TEST_CASE("synthesised networks: a branched stage concatenates its branches along the channels") {
    synthetic::CnnArch a;
    a.resolution = 64;
    a.stem = 16;
    a.block = synthetic::Block::branched;
    a.stages = {{.width = 64, .depth = 2, .stride = 2, .kernel = 3, .branches = 4, .dense = true}};
    const auto g = synthetic::build_cnn(a);
    CHECK(g.name() == "cnn:r64-s16-branched-Relu-w64d2s2k3b4dense");
    std::vector<graph::Shape> concats, pools;
    for (std::size_t i = 0; i < g.num_nodes(); ++i) {
        const auto& n = g.node(static_cast<int>(i));
        if (n.op_type == "Concat") concats.push_back(g.tensor(n.outputs[0]).shape);
        if (n.op_type == "MaxPool") pools.push_back(g.tensor(n.outputs[0]).shape);
    }
    // stem 64 -> 32 pixels, the stage's stride 32 -> 16; the first block (stride 2) keeps no
    // input: 4 branches of 16; the second keeps its 64 channels and adds 4 branches of 8
    REQUIRE(concats.size() == 2);
    CHECK(concats[0] == graph::Shape{1, 64, 16, 16});
    CHECK(concats[1] == graph::Shape{1, 96, 16, 16});
    // each block's pool branch: the stem's 16 channels pooled with stride 2, then 64 with stride 1
    REQUIRE(pools.size() == 2);
    CHECK(pools[0] == graph::Shape{1, 16, 16, 16});
    CHECK(pools[1] == graph::Shape{1, 64, 16, 16});
    CHECK_NOTHROW(device::kernel_graph(g, rules()));
    a.stages[0].branches = 5;
    CHECK_THROWS_WITH_AS(synthetic::build_cnn(a), doctest::Contains("5 branches"), config_error);
}

TEST_CASE("synthesised networks: grouped, channel-shuffle, channels-last MLP and plain blocks, shapes by hand") {
    const auto nodes_of = [](const Graph& g, const std::string& op) {
        std::vector<const graph::Node*> out;
        for (const auto& n : g.nodes())
            if (n.op_type == op) out.push_back(&n);
        return out;
    };
    const auto out_shape = [](const Graph& g, const graph::Node* n) { return g.tensor(n->outputs[0]).shape; };
    // grouped: 1x1 to 128 / 2 = 64 channels, a 3x3 in groups of 16 (4 groups), 1x1 back to 128
    synthetic::CnnArch a;
    a.resolution = 64;
    a.stem = 32;
    a.block = synthetic::Block::grouped;
    a.stages = {{.width = 128, .depth = 1, .stride = 2, .kernel = 3, .group_width = 16, .inner_divisor = 2}};
    auto g = synthetic::build_cnn(a);
    CHECK(g.name() == "cnn:r64-s32-grouped-Relu-w128d1s2k3g16i2");
    std::vector<std::int64_t> groups;
    for (const auto* n : nodes_of(g, "Conv")) groups.push_back(n->attr_int("group", 1));
    CHECK(groups == std::vector<std::int64_t>{1, 1, 4, 1, 1});  // stem, reduce, grouped, expand, shortcut
    CHECK_NOTHROW(device::kernel_graph(g, rules()));
    a.stages[0].inner_divisor = 3;
    CHECK_THROWS_WITH_AS(synthetic::build_cnn(a), doctest::Contains("inner divisor 3"), config_error);

    // shuffle: the first unit (stride 2) takes both halves from the whole input; the second splits
    // 64 channels in two, and each unit ends in a Reshape to [1, 2, 32, H, W], a swap of the two
    // groups and a Reshape back
    a.block = synthetic::Block::shuffle;
    a.stages = {{.width = 64, .depth = 2, .stride = 2, .kernel = 3}};
    g = synthetic::build_cnn(a);
    CHECK(g.name() == "cnn:r64-s32-shuffle-Relu-w64d2s2k3");
    REQUIRE(nodes_of(g, "Split").size() == 1);
    CHECK(out_shape(g, nodes_of(g, "Split")[0]) == graph::Shape{1, 32, 16, 16});
    const auto swaps = nodes_of(g, "Transpose");
    REQUIRE(swaps.size() == 2);
    CHECK(out_shape(g, swaps[0]) == graph::Shape{1, 32, 2, 16, 16});
    CHECK(swaps[0]->attr_ints("perm") == std::vector<std::int64_t>{0, 2, 1, 3, 4});
    CHECK(out_shape(g, nodes_of(g, "Concat").back()) == graph::Shape{1, 64, 16, 16});

    // channels-last MLP: a 4x4 patch stem (64 -> 16 pixels), a layer norm and a 2x2 stride-2
    // convolution into the stage (8 pixels), a depthwise 7x7, the MLP at 3 x 48 on [1, 8, 8, 48]
    a.block = synthetic::Block::depthwise_mlp;
    a.act = "Gelu";
    a.stem = 32;
    a.stages = {{.width = 48, .depth = 1, .stride = 2, .kernel = 7, .expand = 3}};
    g = synthetic::build_cnn(a);
    CHECK(g.name() == "cnn:r64-s32-dwmlp-Gelu-w48d1s2k7e3");
    const auto convs = nodes_of(g, "Conv");
    REQUIRE(convs.size() == 3);
    CHECK(out_shape(g, convs[0]) == graph::Shape{1, 32, 16, 16});
    CHECK(out_shape(g, convs[1]) == graph::Shape{1, 48, 8, 8});
    CHECK(convs[2]->attr_int("group", 1) == 48);
    CHECK(nodes_of(g, "LayerNormalization").size() == 4);  // stem, down, block, head
    std::vector<graph::Shape> mlp;
    for (const auto* n : nodes_of(g, "MatMul")) mlp.push_back(out_shape(g, n));
    CHECK(mlp == std::vector<graph::Shape>{{1, 8, 8, 144}, {1, 8, 8, 48}});
    a.act = "Relu";
    CHECK_THROWS_WITH_AS(synthetic::build_cnn(a), doctest::Contains("expected Gelu"), config_error);

    // plain: an 11x11 stride-4 stem (64 -> 16 pixels), a 2x2 max pool into the stage (8), a 3x3
    // convolution with a bias and no normalisation, the map flattened (64 x 8 x 8 = 4,096 inputs)
    // into two hidden layers of 512
    a.block = synthetic::Block::plain;
    a.stem = 32;
    a.stem_kernel = 11;
    a.stem_stride = 4;
    a.stages = {{.width = 64, .depth = 1, .stride = 2, .kernel = 3}};
    a.flatten = true;
    a.hidden = 512;
    a.hidden_layers = 2;
    g = synthetic::build_cnn(a);
    CHECK(g.name() == "cnn:r64-s32k11x4-plain-Relu-w64d1s2k3-flat-h512x2");
    CHECK(nodes_of(g, "BatchNormalization").empty());
    std::vector<graph::Shape> fc_weights;
    for (const auto* n : nodes_of(g, "Gemm")) fc_weights.push_back(g.tensor(n->inputs[1]).shape);
    CHECK(fc_weights == std::vector<graph::Shape>{{512, 4096}, {512, 512}, {1000, 512}});
    // too many weights for the limits: the hidden layers narrow first (by 0.8 a step: 4,096 ...
    // 1,072, 856), until no wider than 1,024; 4,096 x 856 + 856^2 + 856 x 1,000 weights then fit
    synthetic::Limits limits;
    limits.max_params = 6'000'000;
    a.hidden = 4096;
    const auto fitted = synthetic::build_cnn(a, limits);
    CHECK(synthetic::network_size(fitted).params <= limits.max_params);
    CHECK(fitted.name() == "cnn:r64-s32k11x4-plain-Relu-w64d1s2k3-flat-h856x2");
    for (const auto b : {synthetic::Block::grouped, synthetic::Block::shuffle, synthetic::Block::depthwise_mlp,
                         synthetic::Block::plain}) {
        Rng rng(11);
        for (int i = 0; i < 4; ++i) {
            const auto net = synthetic::build_cnn(synthetic::sample_cnn(rng, b));
            CHECK_NOTHROW(device::kernel_graph(net, rules()));
        }
    }
}

TEST_CASE("synthesised networks: real sizes, within limits, named by what they are") {
    Rng rng(7);
    std::int64_t widest = 0, most_tokens = 0, largest_input = 0;
    std::set<synthetic::Block> blocks;
    bool thousand = true;
    for (int i = 0; i < 40; ++i) {
        const auto cnn = synthetic::sample_cnn(rng);
        const auto t = synthetic::sample_transformer(rng);
        blocks.insert(cnn.block);
        for (const auto& st : cnn.stages) widest = std::max(widest, st.width);
        widest = std::max({widest, cnn.feature_mix, cnn.hidden, t.embed * t.mlp_ratio});
        most_tokens = std::max(most_tokens, t.tokens);
        largest_input = std::max(largest_input, cnn.resolution);
    }
    CHECK(blocks.size() == 4);
    CHECK(widest >= 4096);
    CHECK(most_tokens >= 256);
    CHECK(largest_input == 320);

    // a sequence set after the draw: every length of its range, the rest of the draw kept
    const auto drawn = synthetic::sample_transformer(rng);
    for (std::size_t choice = 0; choice < 8; ++choice) {
        const auto s = synthetic::with_sequence(drawn, synthetic::Sequence::short_range, choice);
        CHECK(s.patch == 32);
        CHECK((s.tokens == 49 || s.tokens == 64 || s.tokens == 100));
        const auto m = synthetic::with_sequence(drawn, synthetic::Sequence::medium_range, choice);
        CHECK(m.patch == 16);
        CHECK((m.tokens == 144 || m.tokens == 196 || m.tokens == 256));
        const auto l = synthetic::with_sequence(drawn, synthetic::Sequence::long_range, choice);
        CHECK(l.tokens >= 384);
        CHECK(l.tokens <= 576);
        CHECK(synthetic::to_string(l).substr(synthetic::to_string(l).find("-e")) ==
              synthetic::to_string(drawn).substr(synthetic::to_string(drawn).find("-e")));
    }

    synthetic::Limits limits;
    const auto nets = device::context_networks(12, 3, limits);
    REQUIRE(nets.size() == 12);
    std::set<std::string> names;
    for (const auto& g : nets) {
        const auto size = synthetic::network_size(g);
        CHECK(size.params <= limits.max_params);
        CHECK(size.macs <= limits.max_macs);
        names.insert(g.name().substr(0, g.name().find(':')));
        const auto& out = g.tensor(g.outputs().front()).shape;
        // the classifiers of ImageNet-sized networks; the spaces' own data sets have fewer classes
        const bool imagenet = g.name().rfind("cnn:", 0) == 0 || g.name().rfind("transformer:", 0) == 0 ||
                              g.name().rfind("ofa:", 0) == 0;
        thousand = thousand && (!imagenet || out.back() == 1000);
        CHECK_NOTHROW(device::kernel_graph(g, rules()));
    }
    CHECK(thousand);
    // every round has a network whose branches join in a channel concatenation
    for (std::uint64_t seed : {1, 3, 2027}) {
        const auto round = device::context_networks(12, seed, limits);
        CHECK(std::any_of(round.begin(), round.end(), [](const graph::Graph& g) {
            return g.name().find("-branched-") != std::string::npos &&
                   std::any_of(g.nodes().begin(), g.nodes().end(),
                               [](const graph::Node& n) { return n.op_type == "Concat"; });
        }));
    }
    // the plain convolutional slots take the seven other block kinds in turn: each in every
    // twenty-eight networks (two rounds of the plan, four such slots a round)
    std::set<std::string> cnn_blocks;
    static const std::string seven[] = {"basic", "grouped", "bottleneck", "dwmlp", "inverted", "shuffle", "plain"};
    for (const auto& g : device::context_networks(28, 3, limits))
        for (const auto& b : seven)
            if (g.name().starts_with("cnn:") && g.name().find("-" + b + "-") != std::string::npos) cnn_blocks.insert(b);
    CHECK(cnn_blocks == std::set<std::string>(std::begin(seven), std::end(seven)));
    // the transformer slots take short, medium and long sequences in turn (a long one may be shrunk
    // to fit the limits): all three in every twenty-four networks
    for (std::uint64_t seed : {1, 3}) {
        std::set<std::string> lengths;
        for (const auto& g : device::context_networks(24, seed, limits)) {
            if (!g.name().starts_with("transformer:t")) continue;
            const auto tokens = std::stoll(g.name().substr(std::string("transformer:t").size()));
            lengths.insert(tokens <= 100 ? "short" : tokens <= 256 ? "medium" : "long");
        }
        CHECK(lengths == std::set<std::string>{"long", "medium", "short"});
    }
    for (std::uint64_t seed : {1, 3, 2027}) {  // the first of every round is short
        const auto round = device::context_networks(12, seed, limits);
        CHECK(std::any_of(round.begin(), round.end(), [](const graph::Graph& g) {
            return g.name().starts_with("transformer:t") && g.name().find("p32-") != std::string::npos &&
                   std::stoll(g.name().substr(std::string("transformer:t").size())) <= 100;
        }));
    }
    // the first round has each search space as searched (batch 1), later rounds at larger batches
    std::size_t as_searched = 0;
    for (const auto& g : nets) {
        const auto& name = g.name();
        const bool small_space = name.starts_with("|") || name.starts_with("fbnet:") || name.starts_with("vit:") ||
                                 name.starts_with("kws:");
        if (!small_space) continue;
        CHECK_MESSAGE(name.ends_with("@batch=1"), name);
        ++as_searched;
    }
    CHECK(as_searched >= 3);
    // keyword spotting as it runs, one frame window at a time, in every round
    std::size_t kws = 0;
    for (const auto& g : device::context_networks(42, 3, limits))
        if (g.name().starts_with("kws:")) {
            CHECK_MESSAGE(g.name().ends_with("@batch=1"), g.name());
            ++kws;
        }
    CHECK(kws >= 3);
    // its slots take the stem strides in turn, each network's windows alternating between k x 1
    // and k x 3, the first width in turn too
    for (std::uint64_t seed : {1, 3}) {
        std::set<std::pair<int, int>> kinds;
        std::size_t seen = 0;
        for (const auto& g : device::context_networks(56, seed, limits)) {
            if (!g.name().starts_with("kws:")) continue;
            const auto text = g.name().substr(4, g.name().find('@') - 4);
            const auto a = kws::parse(text);
            for (std::size_t b = 0; b < a.blocks.size(); ++b)
                CHECK_MESSAGE(a.blocks[b].kernel[1] == (b % 2 ? 4 - a.blocks[0].kernel[1] : a.blocks[0].kernel[1]),
                              text);
            kinds.insert({a.stem_stride[1], a.blocks[0].kernel[1]});
            ++seen;
        }
        CHECK(seen == 4);
        CHECK(kinds == std::set<std::pair<int, int>>{{1, 1}, {1, 3}, {2, 1}, {2, 3}});
    }
    CHECK(names.count("cnn"));
    CHECK(names.count("transformer"));
    CHECK(names.count("ofa"));

    // tight limits narrow a draw until it fits
    synthetic::Limits tight;
    tight.max_params = 200'000;
    tight.max_macs = 20'000'000;
    for (int i = 0; i < 10; ++i) {
        for (const auto& g : {synthetic::build_cnn(synthetic::sample_cnn(rng), tight),
                              synthetic::build_transformer(synthetic::sample_transformer(rng), tight)}) {
            const auto size = synthetic::network_size(g);
            CHECK(size.params <= tight.max_params);
            CHECK(size.macs <= tight.max_macs);
        }
    }
    synthetic::Limits impossible;
    impossible.max_params = 10;
    CHECK_THROWS_WITH_AS(synthetic::build_cnn(synthetic::sample_cnn(rng), impossible),
                         doctest::Contains("does not fit"), config_error);
    // the same seed, the same networks
    const auto again = device::context_networks(12, 3, limits);
    for (std::size_t i = 0; i < nets.size(); ++i) CHECK(measure::network_key(again[i]) == measure::network_key(nets[i]));
}

TEST_CASE("build and calibration networks: each is built again from its name alone") {
    // a results store of a build or a calibration names its networks so; `device residual --data`
    // and `measure` read them back without model files
    auto nets = device::context_networks(28, 3);
    for (auto& g : device::calibration_networks(10)) nets.push_back(std::move(g));
    std::set<std::string> kinds;
    for (const auto& g : nets) {
        CAPTURE(g.name());
        const auto n = spaces::parse_network_name(g.name());
        REQUIRE(n);
        CHECK(measure::network_key(n->build()) == measure::network_key(g));
        kinds.insert(n->space ? std::string(n->space->name) + (n->options.empty() ? "" : "@") : g.name().substr(0, 3));
    }
    // every kind of name: synthesised, each space, with options
    CHECK(kinds == std::set<std::string>{"cnn", "tra", "nb201@", "fbnet@", "ofa@", "vit@", "kws@"});
}

TEST_CASE("calibration networks: deployed sizes, every block kind, within the calibration's budget") {
    const auto nets = device::calibration_networks(10);
    REQUIRE(nets.size() == 10);
    std::set<std::string> kinds;
    for (const auto& g : nets) {
        const auto size = synthetic::network_size(g);
        CHECK(size.macs <= device::calibration_max_macs);
        // a deployed network's work at the least (a small MobileNet at 128 pixels)
        CHECK_MESSAGE(size.macs >= 20'000'000, g.name());
        CHECK(g.tensor(g.outputs().front()).shape.back() == 1000);
        for (const char* kind : {"-basic-", "-bottleneck-", "-inverted-", "-branched-"})
            if (g.name().find(kind) != std::string::npos) kinds.insert(kind);
        if (g.name().starts_with("transformer:")) kinds.insert("transformer");
        if (g.name().starts_with("ofa:")) {
            kinds.insert("ofa");
            CHECK((g.name().ends_with("@resolution=224") || g.name().ends_with("@resolution=256")));
        }
        CHECK_NOTHROW(device::kernel_graph(g, rules()));
        // dense shots as wide as deployed networks end: a calibration sees wide convolutions
        std::int64_t widest = 0;
        for (std::size_t n = 0; n < g.num_nodes(); ++n) {
            const auto& node = g.node(static_cast<int>(n));
            if (node.op_type == "Conv") widest = std::max(widest, g.tensor(node.inputs[1]).shape[0]);
        }
        if (g.name().find("-basic-") != std::string::npos) CHECK_MESSAGE(widest >= 384, g.name());
        if (g.name().find("-bottleneck-") != std::string::npos) CHECK_MESSAGE(widest >= 1024, g.name());
    }
    CHECK(kinds.size() == 6);
    const auto again = device::calibration_networks(10);
    for (std::size_t i = 0; i < nets.size(); ++i)
        CHECK(measure::network_key(again[i]) == measure::network_key(nets[i]));
    CHECK(measure::network_key(device::calibration_networks(1, 7).front()) != measure::network_key(nets.front()));
}
