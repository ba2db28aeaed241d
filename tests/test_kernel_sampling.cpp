// Kernel samples measured through the harness and a fake runner (tests/measure/fake_runner.sh):
// rows come back with features and the runner's latency, a second run measures nothing again,
// and a time budget (on a clock the test controls: ten seconds per runner request) stops the
// run where the measured time per sample says the budget ends; a later run finishes the rest.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <dnncost/device/kernel_features.hpp>
#include <dnncost/device/kernel_sample_file.hpp>
#include <dnncost/device/kernel_sampler.hpp>
#include <dnncost/device/kernel_sampling.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/measure/machine_load.hpp>

#include "measure/quiet_machine.hpp"
#include "measure/scratch.hpp"

using namespace dnncost;
namespace fs = std::filesystem;

namespace {

using measure_tests::lines_of;

device::FusionRules rules() {
    return device::FusionRules::parse(
        "dnncost-fusion-rules 1\n"
        "fold Conv BatchNormalization operands=constant\n"
        "fuse Conv Relu operands=none\n"
        "fuse Gemm Relu\n"
        "layout NCHWc 8 anchors=Conv followers=MaxPool,Add,Relu\n");
}

device::KernelSamplingSetup setup(const fs::path& dir, const std::string& store) {
    device::KernelSamplingSetup s;
    s.runners = {"bash '" + std::string(DNNCOST_TESTS_DIR) + "/measure/fake_runner.sh' good '" + dir.string() + "'"};
    s.device = "fake-device";
    s.store = dir / store;
    s.harness.rounds = s.harness.max_rounds = 1;
    s.harness.warmup = 0;
    s.harness.repeats = 1;
    s.chunk = 4;
    s.retake_disturbed = false;  // the counts below would follow this machine's load
    return s;
}

std::vector<device::KernelSample> samples(std::size_t per_kind) {
    device::KernelSampler sampler(rules(), {.max_macs = 20'000'000, .max_elements = 1'000'000});
    Rng rng(1);
    std::vector<device::KernelSample> out;
    for (const char* kind : {"Conv+Act", "Gemm", "Pool"})
        for (auto& s : sampler.draw(kind, per_kind, rng)) out.push_back(std::move(s));
    return out;
}

}  // namespace

TEST_CASE("kernel sampling: measured rows, resumable from the store") {
    const fs::path dir = fs::path(DNNCOST_BINARY_DIR) / "test_kernel_sampling_resume";
    fs::remove_all(dir);
    fs::create_directories(dir);
    const auto s = setup(dir, "kernels.csv");
    const auto todo = samples(3);
    REQUIRE(todo.size() == 9);
    std::vector<device::SamplingProgress> seen;
    auto with_progress = s;
    with_progress.on_progress = [&](const device::SamplingProgress& p) { seen.push_back(p); };
    const auto first = device::measure_kernel_samples(todo, rules(), with_progress);
    CHECK(first.measured == 9);
    CHECK(first.from_store == 0);
    CHECK(first.over_budget == 0);
    CHECK(first.failed == 0);
    REQUIRE(first.rows.size() == 9);
    for (std::size_t i = 0; i < first.rows.size(); ++i) {
        CHECK(first.rows[i].kind == todo[i].config.kind);
        CHECK(first.rows[i].key == todo[i].key);
        CHECK(first.rows[i].latency_ms == doctest::Approx(1.0));  // the fake runner's answer
        CHECK(first.rows[i].features.size() == device::kernel_feature_names().size());
    }
    CHECK(lines_of(dir / "requests.log") == 9);
    REQUIRE(seen.size() >= 2);
    CHECK(seen.front().done == 0);
    CHECK(seen.back().done == 9);
    CHECK(seen.back().total == 9);
    CHECK(seen.back().eta_seconds == 0);
    for (std::size_t i = 1; i + 1 < seen.size(); ++i) {
        CHECK(seen[i].done > seen[i - 1].done);
        CHECK(std::isfinite(seen[i].eta_seconds));
    }

    const auto second = device::measure_kernel_samples(todo, rules(), s);
    CHECK(second.measured == 0);
    CHECK(second.from_store == 9);
    CHECK(second.rows.size() == 9);
    CHECK(lines_of(dir / "requests.log") == 9);  // nothing measured again

    auto other = s;
    other.device = "another";
    CHECK_THROWS_WITH_AS(device::measure_kernel_samples(todo, rules(), other),
                         doctest::Contains("holds measurements of device"), config_error);
}

TEST_CASE("kernel sampling: a time budget is honoured, and the rest is measured later") {
    const fs::path dir = fs::path(DNNCOST_BINARY_DIR) / "test_kernel_sampling_budget";
    fs::remove_all(dir);
    fs::create_directories(dir);
    auto s = setup(dir, "kernels.csv");
    s.chunk = 16;
    s.budget_minutes = 1;  // 60 s of the clock below: six samples at ten seconds each
    s.clock = [&] { return 10.0 * static_cast<double>(lines_of(dir / "requests.log")); };
    const auto todo = samples(4);
    REQUIRE(todo.size() == 12);
    const auto first = device::measure_kernel_samples(todo, rules(), s);
    CHECK(first.measured == 6);
    CHECK(first.over_budget == 6);
    CHECK(first.rows.size() == 6);
    CHECK(lines_of(dir / "requests.log") == 6);

    s.budget_minutes = 0;
    const auto rest = device::measure_kernel_samples(todo, rules(), s);
    CHECK(rest.from_store == 6);
    CHECK(rest.measured == 6);
    CHECK(rest.rows.size() == 12);
    CHECK(lines_of(dir / "requests.log") == 12);

    s.budget_minutes = -1;
    CHECK_THROWS_AS(device::measure_kernel_samples(todo, rules(), s), config_error);
}

TEST_CASE("kernel sampling: chunks measured on a loaded machine are reported, with the harness's reason") {
    // load samples 1 s apart in which other processes used `other_cpus` CPUs' worth of time
    const auto planted_load = [](double other_cpus) {
        auto calls = std::make_shared<int>(0);
        return [calls, other_cpus] {
            measure::LoadSample l;
            l.seconds = 1000.0 + *calls;
            l.busy = {static_cast<std::uint64_t>(other_cpus * measure::clock_ticks_per_second() * *calls), 0};
            l.load_average = 0.1;
            ++*calls;
            return l;
        };
    };
    const auto todo = samples(2);
    REQUIRE(todo.size() == 6);
    for (const double other_cpus : {0.0, 1e6}) {
        const fs::path dir = fs::path(DNNCOST_BINARY_DIR) / "test_kernel_sampling_load";
        fs::remove_all(dir);
        fs::create_directories(dir);
        auto s = setup(dir, "kernels.csv");
        s.chunk = 2;
        s.retake_disturbed = true;
        s.load_sampler = planted_load(other_cpus);
        const auto r = device::measure_kernel_samples(todo, rules(), s);
        CHECK(r.measured == 6);
        CHECK(r.disturbance.chunks == 3);
        if (other_cpus == 0) {
            CHECK(r.disturbance.disturbed == 0);
            CHECK(r.disturbance.summary().empty());
        } else {
            CHECK(r.disturbance.disturbed == 3);
            REQUIRE(r.disturbance.reasons.size() == 3);
            CHECK(r.disturbance.reasons.front().find("other processes") != std::string::npos);
            CHECK(r.disturbance.summary().find("3 of 3 chunks") == 0);
        }
    }
}

TEST_CASE("kernel sampling: every chunk measures the reference network, and a host that slows down under it is reported") {
    const auto todo = samples(2);
    REQUIRE(todo.size() == 6);
    for (const std::string mode : {"good", "drifting"}) {
        const fs::path dir = fs::path(DNNCOST_BINARY_DIR) / "test_kernel_sampling_drift";
        fs::remove_all(dir);
        fs::create_directories(dir);
        auto s = setup(dir, "kernels.csv");
        s.runners = {"bash '" + std::string(DNNCOST_TESTS_DIR) + "/measure/fake_runner.sh' " + mode + " '" +
                     dir.string() + "'"};
        s.chunk = 2;
        s.retake_disturbed = true;
        s.load_sampler = measure_tests::quiet_machine();
        const auto r = device::measure_kernel_samples(todo, rules(), s);
        CHECK(r.measured == 6);
        CHECK(r.disturbance.chunks == 3);
        CHECK(lines_of(dir / "references.log") >= 6);  // at the start and the end of each chunk
        if (mode == "good") {
            CHECK(lines_of(dir / "requests.log") == 6);
            CHECK(r.disturbance.disturbed == 0);
            CHECK(r.disturbance.retaken == 0);
        } else {
            // every chunk is measured twice more, and drifts again each time
            CHECK(lines_of(dir / "requests.log") == 18);
            CHECK(r.disturbance.retaken == 3);
            CHECK(r.disturbance.disturbed == 3);
            REQUIRE(!r.disturbance.reasons.empty());
            CHECK(r.disturbance.reasons.front().find("reference network drifted") != std::string::npos);
            CHECK(r.disturbance.summary().find("(3 measured again)") != std::string::npos);
        }
    }
}

namespace {
/// Six samples in chunks of two, measured on the fake host in `spell` mode (fake_runner.sh):
/// every sample takes 1 ms at the host's usual speed, 1.5 ms in the spell. `spell` is the
/// mode's reference ranges ("FROM TO ..."), empty for its default.
struct SpellRun {
    device::KernelSamplingResult result;
    std::size_t requests = 0;  ///< sample requests the runner answered
    std::size_t slow = 0;      ///< samples kept at the spell's speed
};
SpellRun sample_in_spell(const std::string& name, const std::string& spell, bool retake) {
    const fs::path dir = fs::path(DNNCOST_BINARY_DIR) / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    if (!spell.empty()) std::ofstream(dir / "spell") << spell << "\n";
    auto s = setup(dir, "kernels.csv");
    s.runners = {"bash '" + std::string(DNNCOST_TESTS_DIR) + "/measure/fake_runner.sh' spell '" + dir.string() + "'"};
    s.chunk = 2;
    s.retake_disturbed = retake;
    s.load_sampler = measure_tests::quiet_machine();
    const auto todo = samples(2);
    REQUIRE(todo.size() == 6);
    SpellRun run;
    run.result = device::measure_kernel_samples(todo, rules(), s);
    run.requests = lines_of(dir / "requests.log");
    for (const auto& row : run.result.rows) run.slow += row.latency_ms > 1.2;
    return run;
}
}  // namespace

TEST_CASE("kernel sampling: a chunk still slow when measured again is measured once more, and no more") {
    // the fake host runs slow for the whole second chunk (its 4th and 5th reference requests)
    // and again for that chunk's first retake (the 8th and 9th); in the second case for its
    // second retake too (the 10th and 11th)
    for (const bool outlasts_both : {false, true}) {
        const auto run =
            sample_in_spell("test_kernel_sampling_long_spell", outlasts_both ? "4 5 8 11" : "4 5 8 9", true);
        const auto& r = run.result;
        REQUIRE(r.rows.size() == 6);
        CHECK(run.requests == 10);  // the chunk's two samples measured three times
        CHECK(r.disturbance.chunks == 3);
        CHECK(r.disturbance.retaken == 1);
        if (!outlasts_both) {
            CHECK(r.disturbance.disturbed == 0);
            CHECK(r.disturbance.summary().empty());
            CHECK(run.slow == 0);
        } else {
            CHECK(r.disturbance.disturbed == 1);
            CHECK(r.disturbance.summary().find("1 of 3 chunks") == 0);
            CHECK(r.disturbance.summary().find("(1 measured again)") != std::string::npos);
            CHECK(run.slow == 2);
        }
    }
}

TEST_CASE(
    "kernel sampling: a chunk measured while the host was slow throughout is found by its reference and measured "
    "again") {
    // the fake host runs 50 % slower for the whole second chunk (its reference at the start and
    // the end alike, so it shows no drift)
    for (const bool retake : {false, true}) {
        const auto run = sample_in_spell("test_kernel_sampling_spell", "", retake);
        const auto& r = run.result;
        CHECK(r.measured == 6);
        CHECK(r.disturbance.chunks == 3);
        REQUIRE(r.rows.size() == 6);
        if (retake) {
            CHECK(r.disturbance.retaken == 1);
            CHECK(r.disturbance.disturbed == 0);
            CHECK(r.disturbance.summary().empty());
            CHECK(run.slow == 0);
            CHECK(run.requests == 8);
        } else {
            CHECK(r.disturbance.retaken == 0);
            CHECK(r.disturbance.disturbed == 1);
            REQUIRE(r.disturbance.reasons.size() == 1);
            CHECK(r.disturbance.reasons.front().find("50.0 % slower than in the 2 of 3 chunks that agree") !=
                  std::string::npos);
            CHECK(run.slow == 2);
        }
    }
}

namespace {
// a chunk's conditions with its reference measured at `values` (ms), 1 % spread within each
measure::RunConditions chunk(std::vector<double> values, bool harness_disturbed = false) {
    measure::RunConditions c;
    measure::ReferenceLatency r;
    r.key = "reference";
    r.values_ms = std::move(values);
    r.latency_ms = r.values_ms.front();
    r.spread = 0.01;
    c.reference = r;
    c.disturbed = harness_disturbed;
    if (harness_disturbed) c.reasons = {"planted"};
    return c;
}
}  // namespace

TEST_CASE("disturbance: chunks that disagree with the speed most chunks agree on are the disturbed ones") {
    SUBCASE("one slow spell among fast chunks") {
        device::Disturbance d;
        for (const double v : {1.0, 1.02, 1.5, 0.99}) d.note(chunk({v, v}));
        CHECK(d.chunks == 4);
        CHECK(d.disturbed == 1);
        CHECK(d.disturbed_chunks() == std::vector<std::size_t>{2});
        // 1.5 against the fastest agreeing measurement, 0.99: 51.5 % slower, 3 of 4 agree
        CHECK(d.reasons.front().find("51.5 % slower than in the 3 of 4 chunks that agree") != std::string::npos);
    }
    SUBCASE("a host slow most of the time: its one fast chunk is the odd one out") {
        device::Disturbance d;
        for (const double v : {1.0, 1.3, 1.31, 1.29, 1.32}) d.note(chunk({v, v}));
        CHECK(d.disturbed == 1);
        CHECK(d.disturbed_chunks() == std::vector<std::size_t>{0});
        // 1.29 / 1.0: 29.0 % faster than the four chunks at 1.29-1.32
        CHECK(d.reasons.front().find("29.0 % faster than in the 4 of 5 chunks that agree") != std::string::npos);
        // measured again at the usual speed, it agrees too
        d.retake(0, chunk({1.3, 1.3}));
        CHECK(d.disturbed == 0);
        CHECK(d.summary().empty());
        CHECK(d.retaken == 1);
    }
    SUBCASE("as many chunks at each speed: the faster group is the level") {
        device::Disturbance d;
        for (const double v : {1.5, 1.0, 1.5, 1.0}) d.note(chunk({v, v}));
        CHECK(d.disturbed_chunks() == std::vector<std::size_t>{0, 2});
    }
    SUBCASE("a chunk that drifted within itself has no vote and stays disturbed") {
        device::Disturbance d;
        d.note(chunk({1.0, 1.0}));
        d.note(chunk({1.3, 1.3}, true));
        d.note(chunk({1.3, 1.3}, true));
        d.note(chunk({1.01, 1.0}));
        CHECK(d.disturbed_chunks() == std::vector<std::size_t>{1, 2});
        CHECK(d.reasons.front() == "planted");
    }
    SUBCASE("within the noise bound, different chunks agree") {
        device::Disturbance d;
        for (const double v : {1.0, 1.04, 0.97, 1.02}) d.note(chunk({v, v}));
        CHECK(d.disturbed == 0);
        // a chunk whose own reference spans more than the bound never agrees with one level
        d.note(chunk({1.0, 1.2}));
        CHECK(d.disturbed_chunks() == std::vector<std::size_t>{4});
    }
    SUBCASE("an earlier step's chunks vote on the speed but are not judged again") {
        device::Disturbance networks;
        for (const double v : {1.3, 1.3, 1.31}) networks.note(chunk({v, v}));
        CHECK(networks.disturbed == 0);
        device::Disturbance kernels;
        kernels.vote_with(networks);
        // alone, the two fast chunks would set the level; with the networks' three, the slow one does
        for (const double v : {1.0, 1.0, 1.3}) kernels.note(chunk({v, v}));
        CHECK(kernels.chunks == 3);
        CHECK(kernels.disturbed_chunks() == std::vector<std::size_t>{0, 1});
        CHECK(kernels.reasons.front().find("faster than in the 4 of 6 chunks that agree") != std::string::npos);
        // a later round votes with both
        device::Disturbance round2;
        round2.vote_with(kernels);
        round2.note(chunk({1.0, 1.0}));
        CHECK(round2.disturbed == 1);
        device::Disturbance total = kernels;
        total.add(round2);
        CHECK(total.chunks == 4);
        CHECK(total.disturbed == 3);
    }
    SUBCASE("a slow spell within a chunk whose networks the harness measured again: its usual speed counts") {
        device::Disturbance d;
        for (const double v : {1.0, 1.01, 0.99}) d.note(chunk({v, v}));
        auto spell = chunk({1.0, 1.5, 1.0});
        spell.slow_spans_checked = true;
        spell.slow_span_networks = spell.slow_span_retaken = 3;
        d.note(spell);
        CHECK(d.disturbed == 0);
        CHECK(d.slow_span_retaken == 3);
        // one network left measured only while slow: the spell reached the chunk's results
        spell.slow_span_retaken = 2;
        d.note(spell);
        CHECK(d.disturbed_chunks() == std::vector<std::size_t>{4});
    }
    SUBCASE("no chunk measured its reference: only the harness's judgements count") {
        device::Disturbance d;
        d.note(measure::RunConditions{});
        d.note(measure::RunConditions{});
        CHECK(d.disturbed == 0);
    }
}

TEST_CASE("kernel sample file: what a build fitted to comes back exactly, and damage is a clear error") {
    device::KernelSampleFile f;
    f.device = "fake-device";
    f.rules = rules();
    f.run_overhead_ms = 0.0123456789012345;
    const auto n = device::kernel_feature_names().size();
    for (int i = 0; i < 3; ++i) {
        device::KernelMeasurement m;
        m.kind = i == 2 ? "Gemm" : "Conv+Act";
        m.latency_ms = 0.1 / 3.0 * (i + 1);
        for (std::size_t j = 0; j < n; ++j) m.features.push_back(std::ldexp(1.0 / 7.0, int(j)) - double(i));
        f.samples.push_back(m);
        f.keys.push_back("key" + std::to_string(i));
    }
    const fs::path dir = fs::path(DNNCOST_BINARY_DIR) / "test_kernel_sample_file";
    fs::remove_all(dir);
    fs::create_directories(dir);
    const auto path = dir / "kernel_samples.json";
    device::write_kernel_sample_file(path, f);
    const auto back = device::read_kernel_sample_file(path);
    CHECK(back.device == f.device);
    CHECK(back.rules.to_text() == f.rules.to_text());
    CHECK(back.run_overhead_ms == f.run_overhead_ms);
    CHECK(back.keys == f.keys);
    REQUIRE(back.samples.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(back.samples[i].kind == f.samples[i].kind);
        CHECK(back.samples[i].latency_ms == f.samples[i].latency_ms);
        CHECK(back.samples[i].features == f.samples[i].features);  // bit for bit
    }
    const auto text = io::read_file(path);
    const auto damaged = [&](const std::string& from, const std::string& to) {
        auto t = text;
        const auto at = t.find(from);
        REQUIRE(at != std::string::npos);
        t.replace(at, from.size(), to);
        io::write_file_atomic(path, t);
    };
    damaged("dnncost-kernel-samples 1", "something else");
    CHECK_THROWS_WITH_AS(device::read_kernel_sample_file(path), doctest::Contains("kernel_samples.json"), parse_error);
    damaged("\"log_batch\"", "\"log_something\"");
    CHECK_THROWS_WITH_AS(device::read_kernel_sample_file(path), doctest::Contains("not this build's"), parse_error);
    damaged("\"latency_ms\":0.1", "\"latency_ms\":null");
    CHECK_THROWS_WITH_AS(device::read_kernel_sample_file(path), doctest::Contains("sample 3"), parse_error);
    io::write_file_atomic(path, text.substr(0, text.size() / 2));
    CHECK_THROWS_WITH_AS(device::read_kernel_sample_file(path), doctest::Contains("kernel_samples.json"), parse_error);
    fs::remove(path);
    CHECK_THROWS(device::read_kernel_sample_file(path));
}
