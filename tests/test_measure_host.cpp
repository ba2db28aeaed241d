// Knowing the host and the run's conditions: the host fingerprint, the reference network and its
// noise rule, stores that may or may not be mixed, the machine-load arithmetic, a run judged
// disturbed, CPU pinning. Latencies come from fake runners with planted values
// (tests/measure/fake_runner.sh), machine load from planted samples.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/host.hpp>
#include <dnncost/measure/machine_load.hpp>
#include <dnncost/measure/reference.hpp>
#include <dnncost/measure/reference_model.hpp>
#include <dnncost/measure/run_conditions.hpp>
#include <dnncost/measure/runner.hpp>
#include <dnncost/measure/sidecar.hpp>
#include <dnncost/measure/store_mix.hpp>

#include "measure/scratch.hpp"

namespace fs = std::filesystem;
using namespace dnncost;
using namespace dnncost::measure;

namespace {

struct Scratch : measure_tests::Scratch {
    explicit Scratch(const std::string& name) : measure_tests::Scratch("dnncost_test_measure_host", name) {}
};

const char* x86_cpuinfo = R"(processor	: 0
vendor_id	: AuthenticAMD
cpu family	: 25
model		: 17
model name	: AMD EPYC 9R14
stepping	: 1
flags		: fpu vme cmov cx8 fxsr mmx sse sse2 pni ssse3 cx16 sse4_1 sse4_2 popcnt lahf_lm abm movbe xsave avx avx2 bmi1 bmi2 f16c fma

processor	: 1
model name	: another CPU that is not read
)";

ReferenceLatency ref(double ms, double spread, std::vector<double> values = {}) {
    ReferenceLatency r;
    r.key = "refkey";
    r.latency_ms = ms;
    r.spread = spread;
    r.values_ms = values.empty() ? std::vector<double>{ms} : std::move(values);
    return r;
}

HostFingerprint host(const std::string& cpu) {
    HostFingerprint h;
    parse_cpuinfo(x86_cpuinfo, h);
    h.cpu = cpu;
    h.logical_cpus = 2;
    h.kernel = "6.18.0";
    h.runtime = "onnxruntime 1.30.0";
    h.hostname = "vm-a";
    return h;
}

StoreInfo info(const HostFingerprint& h, std::vector<ReferenceLatency> refs) {
    StoreInfo i("ort-cpu", {"runners/onnxruntime/run"});
    i.host = h;
    i.references = std::move(refs);
    return i;
}

std::vector<MixFlag::Kind> kinds(const std::vector<MixFlag>& flags) {
    std::vector<MixFlag::Kind> out;
    for (const auto& f : flags) out.push_back(f.kind);
    return out;
}

/// Load samples 1 s apart in which other processes used `other_cpus` CPUs' worth of time.
Harness::LoadSampler planted_load(double other_cpus) {
    auto calls = std::make_shared<int>(0);
    return [calls, other_cpus] {
        LoadSample s;
        s.seconds = 1000.0 + *calls;
        const auto ticks = static_cast<std::uint64_t>(other_cpus * clock_ticks_per_second() * *calls);
        s.busy = {ticks, 0};
        s.load_average = 0.1;
        ++*calls;
        return s;
    };
}
}  // namespace

TEST_CASE("host fingerprint: cpuinfo fields, ISA level, an order-free flags digest") {
    HostFingerprint h;
    parse_cpuinfo(x86_cpuinfo, h);
    CHECK(h.cpu == "AMD EPYC 9R14");
    CHECK(h.cpu_family == 25);
    CHECK(h.cpu_model == 17);
    CHECK(h.stepping == 1);
    CHECK(h.isa_level == "x86-64-v3");
    CHECK(h.flags_digest.size() == 16);
    HostFingerprint reordered;
    parse_cpuinfo("model name : AMD EPYC 9R14\nflags : fma f16c bmi2 bmi1 avx2 avx xsave movbe abm lahf_lm popcnt "
                  "sse4_2 sse4_1 cx16 ssse3 pni sse2 sse mmx fxsr cx8 cmov vme fpu\n",
                  reordered);
    CHECK(reordered.flags_digest == h.flags_digest);
    CHECK(x86_isa_level({"cmov", "cx8", "fpu", "fxsr", "mmx", "sse", "sse2"}) == "x86-64-v1");
    CHECK(x86_isa_level({"neon", "asimd"}).empty());
    HostFingerprint arm;
    parse_cpuinfo("processor : 0\nFeatures : fp asimd evtstrm\nCPU architecture: 8\nCPU part : 0xd0b\n", arm);
    CHECK(arm.cpu_family == 8);
    CHECK(arm.cpu_model == 0xd0b);
    CHECK(arm.isa_level.empty());
    add_runner_device(h, R"({"runtime":"onnxruntime","version":"1.30.0","node":"v20.20.2"})");
    CHECK(h.runtime == "onnxruntime 1.30.0");
    CHECK(h.node == "v20.20.2");
    add_runner_device(h, "not json");  // a runner's odd device line changes nothing
    CHECK(h.runtime == "onnxruntime 1.30.0");
    const auto local = local_host();
    CHECK(local.logical_cpus > 0);
    CHECK(!local.kernel.empty());
    const auto back = host_from_json(json::parse(json::dump(to_json(h))));
    CHECK(host_differences(back, h).empty());
    CHECK(back.flags_digest == h.flags_digest);
}

TEST_CASE("host fingerprint: differences name the field, ignore the hostname and unknown fields") {
    auto a = host("AMD EPYC 9R14"), b = a;
    b.hostname = "vm-b";
    CHECK(host_differences(a, b).empty());
    b.kernel = "6.19.1";
    b.stepping = 2;
    const auto d = host_differences(a, b);
    REQUIRE(d.size() == 2);
    CHECK(d[0] == "stepping: 1 vs 2");
    CHECK(d[1] == "kernel: '6.18.0' vs '6.19.1'");
    b = a;
    b.runtime.clear();  // not known on one side: not compared
    b.cpu_model = -1;
    CHECK(host_differences(a, b).empty());
}

TEST_CASE("reference: differences beyond max(5 %, 3 x its noise) are more than noise") {
    CHECK(!references_differ(ref(1.00, 0.005), ref(1.04, 0.005)));  // 4 % < 5 %
    CHECK(references_differ(ref(1.00, 0.005), ref(1.06, 0.005)));   // 6 % > 5 %
    CHECK(references_differ(ref(1.06, 0.005), ref(1.00, 0.005)));   // symmetric
    CHECK(!references_differ(ref(1.00, 0.03), ref(1.08, 0.005)));   // 8 % < 3 x 3 %
    CHECK(references_differ(ref(1.00, 0.03), ref(1.10, 0.005)));    // 10 % > 9 %
    // the spread between a run's measurements is noise too: 1.0, 1.02, 1.04 -> MAD 0.02
    CHECK(ref(1.02, 0.001, {1.0, 1.02, 1.04}).spread_between() == doctest::Approx(0.02 / 1.02));
    CHECK(!references_differ(ref(1.02, 0.001, {1.0, 1.02, 1.04}), ref(1.08, 0.001)));  // 5.9 % < 5.9 %+
    CHECK(!references_differ(ref(1.0, 0.001), ReferenceLatency{}));  // unknown: nothing to compare
    // within a run: drift beyond max(5 %, 3 x the spread within a measurement)
    CHECK(!reference_drifted(ref(1.0, 0.002, {1.0, 1.04})));
    CHECK(reference_drifted(ref(1.0, 0.002, {1.0, 1.07})));
    CHECK(!reference_drifted(ref(1.0, 0.03, {1.0, 1.07})));
    const auto r = reference_from_json(json::parse(json::dump(to_json(ref(1.5, 0.01, {1.4, 1.5, 1.6})))));
    CHECK(r.latency_ms == 1.5);
    CHECK(r.values_ms.size() == 3);
    CHECK(r.key == "refkey");
}

TEST_CASE("reference network: a fixed graph, the same key every time, exported with its weights") {
    Scratch s("refmodel");
    const auto g = reference_graph();
    CHECK(network_key(g) == network_key(reference_graph()));
    CHECK(g.num_nodes() == 8);
    write_reference_model(s.dir / "ref.onnx");
    CHECK(network_key(io::import_onnx(s.dir / "ref.onnx")) == network_key(g));
}

TEST_CASE("sidecar: host and references round-trip, an old sidecar loads as an unknown host") {
    Scratch s("sidecar");
    const auto path = s.dir / "r.device.json";
    auto i = info(host("AMD EPYC 9R14"), {ref(1.5, 0.01, {1.49, 1.51})});
    i.runner_device = R"({"runtime":"onnxruntime"})";
    i.settings = HarnessOptions{}.to_json();
    write_store_info(path, i);
    const auto back = read_store_info(path);
    REQUIRE(back);
    REQUIRE(back->host);
    CHECK(back->host->cpu == "AMD EPYC 9R14");
    CHECK(back->host->hostname == "vm-a");
    REQUIRE(back->references.size() == 1);
    CHECK(back->references[0].values_ms == std::vector<double>{1.49, 1.51});
    CHECK(json::parse(back->settings).find("rounds")->number == 5);
    {  // as written before fingerprints (data/measured/*.device.json)
        std::ofstream(s.dir / "old.device.json")
            << "{\n  \"format\": \"dnncost-results-1\",\n  \"device\": \"d\",\n  \"runners\": [\"r\"],\n"
               "  \"runner_device\": {\"cpu\":\"x\"},\n  \"settings\": {\"rounds\": 5}\n}\n";
    }
    const auto old = read_store_info(s.dir / "old.device.json");
    REQUIRE(old);
    CHECK(!old->host);
    CHECK(old->references.empty());
    CHECK(old->runner_device == R"({"cpu":"x"})");
}

TEST_CASE("mixing stores: a reference beyond the noise, another fingerprint, an unknown host are flagged") {
    const auto h = host("AMD EPYC 9R14");
    SUBCASE("references within the noise: not flagged") {
        CHECK(check_mix({{"a.csv", info(h, {ref(1.50, 0.005)})}, {"b.csv", info(h, {ref(1.54, 0.005)})}}).empty());
    }
    SUBCASE("references beyond the noise: flagged, naming the store and both latencies") {
        const auto flags = check_mix({{"a.csv", info(h, {ref(1.50, 0.005)})}, {"b.csv", info(h, {ref(1.65, 0.005)})}});
        REQUIRE(flags.size() == 1);
        CHECK(flags[0].kind == MixFlag::Kind::other_reference);
        CHECK(flags[0].store == "b.csv");
        CHECK(flags[0].message.find("1.6500 ms against 1.5000 ms") != std::string::npos);
    }
    SUBCASE("a noisy reference widens the bound: 10 % apart with a 4 % spread is noise") {
        CHECK(check_mix({{"a.csv", info(h, {ref(1.50, 0.04)})}, {"b.csv", info(h, {ref(1.65, 0.005)})}}).empty());
    }
    SUBCASE("another fingerprint: flagged with the fields that differ") {
        auto other = h;
        other.cpu = "Intel Xeon Platinum 8488C";
        other.hostname = "vm-b";
        const auto flags =
            check_mix({{"a.csv", info(h, {ref(1.50, 0.005)})}, {"b.csv", info(other, {ref(1.51, 0.005)})}});
        REQUIRE(flags.size() == 1);
        CHECK(flags[0].kind == MixFlag::Kind::other_host);
        CHECK(flags[0].message.find("Intel Xeon") != std::string::npos);
    }
    SUBCASE("a store without a fingerprint: unknown host, still listed once") {
        const auto flags = check_mix({{"old.csv", std::nullopt}, {"a.csv", info(h, {ref(1.5, 0.005)})}});
        CHECK(kinds(flags) == std::vector<MixFlag::Kind>{MixFlag::Kind::unknown_host});
        CHECK(flags[0].message.find("unknown host") != std::string::npos);
        CHECK(check_mix({{"only.csv", std::nullopt}}).empty());  // alone, nothing to mix
    }
    SUBCASE("one store whose runs disagree") {
        const auto flags = check_mix({{"a.csv", info(h, {ref(1.50, 0.005), ref(1.80, 0.005)})}});
        CHECK(kinds(flags) == std::vector<MixFlag::Kind>{MixFlag::Kind::drifting_store});
    }
    SUBCASE("from files: the sidecars beside the stores") {
        Scratch s("mixfiles");
        write_store_info(sidecar_path(s.dir / "a.csv"), info(h, {ref(1.50, 0.005)}));
        write_store_info(sidecar_path(s.dir / "b.csv"), info(h, {ref(1.90, 0.005)}));
        const auto flags = check_mix(std::vector<fs::path>{s.dir / "a.csv", s.dir / "b.csv"});
        CHECK(kinds(flags) == std::vector<MixFlag::Kind>{MixFlag::Kind::other_reference});
    }
}

TEST_CASE("appending to a store from another host is refused unless allowed") {
    const auto h = host("AMD EPYC 9R14");
    auto other = h;
    other.kernel = "5.15.0";
    CHECK(check_append("r.csv", info(h, {}), h, false).empty());
    CHECK_THROWS_WITH_AS(check_append("r.csv", info(h, {}), other, false), doctest::Contains("another host"),
                         config_error);
    CHECK(check_append("r.csv", info(h, {}), other, true).size() == 1);
    const auto unknown = check_append("r.csv", StoreInfo("d", {"r"}), h, false);
    REQUIRE(unknown.size() == 1);
    CHECK(unknown[0].find("unknown host") != std::string::npos);
}

TEST_CASE("machine load: /proc text parsed, other processes' CPU time by difference") {
    const auto busy = parse_proc_stat("cpu  10 0 10 500 0 0 0 0 0 0\ncpu0 1 2 3 100 7 4 5 6 0 0\n"
                                      "cpu1 10 0 0 100 0 0 0 0 0 0\nintr 1 2 3\n");
    CHECK(busy == std::vector<std::uint64_t>{1 + 2 + 3 + 4 + 5 + 6, 10});
    const auto p = parse_pid_stat("42 (a (b) c) S 1 42 42 0 -1 0 0 0 0 0 70 30 5 5 20 0 1 0", true);
    REQUIRE(p);
    CHECK(p->first == 42);
    CHECK(p->second == 110);
    CHECK(parse_pid_stat("42 (a) S 1 42 42 0 -1 0 0 0 0 0 70 30 5 5", false)->second == 100);
    CHECK(!parse_pid_stat("garbage", false));
    LoadSample a, b;
    a.seconds = 10, b.seconds = 12;
    a.busy = {100, 100}, b.busy = {300, 260};  // 360 ticks in 2 s
    a.own = 50, b.own = 210;                   // 160 of them ours
    a.load_average = 0.5, b.load_average = 1.5;
    const auto m = load_between(a, b, 100, 0);
    CHECK(m.other_cpus == doctest::Approx(1.0));  // (360 - 160) / 100 / 2
    CHECK(m.load_average == 1.5);
    CHECK(m.other_share_of_cpu == doctest::Approx(0.2));  // cpu0: (200 - 160) / 100 / 2
    CHECK(std::isnan(load_between(LoadSample{}, b, 100).other_cpus));
    CHECK(sample_machine({}).valid());  // this is Linux
}

TEST_CASE("machine load: the time a runner's short-lived children took counts as the runner's") {
    // a process group like a runner that starts a process per request: a shell whose children
    // burn CPU and are gone when the second sample is taken
    Scratch s("children");
    const auto pid_file = (s.dir / "pid").string(), go = (s.dir / "go").string(), done = (s.dir / "done").string();
    const std::string script = "echo $$ > '" + pid_file + "'; while [ ! -f '" + go +
                               "' ]; do sleep 0.05; done; for i in 1 2; do awk 'BEGIN { for (i = 0; i < 1e7; i++) "
                               "s += i }'; done; touch '" +
                               done + "'; sleep 60";
    std::ofstream(s.dir / "runner.sh") << script << '\n';
    REQUIRE(std::system(("setsid bash '" + (s.dir / "runner.sh").string() + "' > /dev/null 2>&1 &").c_str()) == 0);
    const auto wait_for = [](const std::string& path) {
        for (int i = 0; i < 1200 && !fs::exists(path); ++i) ::usleep(50000);
        return fs::exists(path);
    };
    REQUIRE(wait_for(pid_file));
    pid_t group = 0;
    for (int i = 0; i < 100 && group <= 0; ++i) {  // written, perhaps not yet flushed
        std::ifstream(pid_file) >> group;
        if (group <= 0) ::usleep(20000);
    }
    REQUIRE(group > 0);
    const auto before = sample_machine({group});
    std::ofstream(go).put('\n');
    const bool finished = wait_for(done);
    const auto after = sample_machine({group});
    ::kill(-group, SIGKILL);
    REQUIRE(finished);
    REQUIRE((before.valid() && after.valid()));
    // two loops of ten million additions take well over 0.2 s of CPU on any machine
    CHECK(after.own - before.own >= static_cast<std::uint64_t>(0.2 * double(::sysconf(_SC_CLK_TCK))));
}

TEST_CASE("run conditions: disturbed by reference drift or by other processes, with the reason") {
    RunConditions c;
    c.reference = ref(1.0, 0.002, {1.0, 1.01});
    c.load.other_cpus = 0.2;
    judge_conditions(c, 1, 2);
    CHECK(!c.disturbed);
    c.load.other_cpus = 0.9;  // a compiler on the other core of two
    judge_conditions(c, 1, 2);
    CHECK(c.disturbed);
    CHECK(c.reasons.at(0).find("0.90 of the 2 CPUs") != std::string::npos);
    judge_conditions(c, 1, 64);  // the same on 64 CPUs leaves plenty free
    CHECK(!c.disturbed);
    c.cpu = 1;  // pinned: what counts is the runners' own CPU
    c.load.other_share_of_cpu = 0.02;
    judge_conditions(c, 1, 2);
    CHECK(!c.disturbed);
    c.load.other_share_of_cpu = 0.3;
    judge_conditions(c, 1, 2);
    CHECK(c.disturbed);
    CHECK(c.reasons.at(0).find("30.0 % of CPU 1") != std::string::npos);
    c = RunConditions{};
    c.reference = ref(1.0, 0.002, {1.0, 1.2});
    judge_conditions(c, 1, 2);
    CHECK(c.disturbed);
    CHECK(c.reasons.at(0).find("drifted by 20.0 %") != std::string::npos);
    const auto j = to_json(c);
    CHECK(j.find("disturbed")->boolean);
    CHECK(j.find("reference")->find("latency_ms")->number == 1.0);
}

TEST_CASE("harness: the reference network is measured at the start, between batches and at the end") {
    Scratch s("refrun");
    HarnessOptions ho;
    ho.rounds = 2;
    ho.warmup = 0;
    ho.repeats = 3;
    ProvenanceOptions po;
    po.reference_model = s.dir / "lat1.5ref.onnx";
    po.reference_key = "refkey";
    po.every = 2;
    po.every_seconds = 0;
    RunnerPool pool({s.runner("good")});
    ResultsStore store(s.dir / "r.csv");
    Harness h(pool, ho, po);
    h.set_load_sampler(planted_load(0));
    const auto sum = h.run(store, {{"k1", "lat2.onnx", s.dir / "lat2.onnx"},
                                   {"k2", "lat3.onnx", s.dir / "lat3.onnx"},
                                   {"k3", "lat4.onnx", s.dir / "lat4.onnx"}});
    CHECK(sum.measured == 3);
    // 6 network requests in batches of 2, 1 per round: start, after 2, after 2 + 1 + 2, end; and
    // before the first, one unrecorded request that fixes the reference's runs per request
    CHECK(s.requests_of("lat1.5ref.onnx") == 5);
    REQUIRE(sum.conditions.reference);
    CHECK(sum.conditions.reference->latency_ms == 1.5);
    CHECK(sum.conditions.reference->values_ms.size() == 4);
    CHECK(sum.conditions.reference->key == "refkey");
    CHECK(!sum.conditions.disturbed);
    CHECK(sum.conditions.host.runtime.empty());  // the fake's device line names no runtime
    CHECK(sum.conditions.host.logical_cpus > 0);
    CHECK(store.result("k3")->latency_ms == 4);
    // nothing left to measure: no reference either
    const auto again = h.run(store, {{"k1", "lat2.onnx", s.dir / "lat2.onnx"}});
    CHECK(again.skipped == 1);
    CHECK(!again.conditions.reference);
    CHECK(s.requests_of("lat1.5ref.onnx") == 5);
}

TEST_CASE("harness: a drifting reference or a busy machine marks the run disturbed") {
    Scratch s("disturbed");
    HarnessOptions ho;
    ho.rounds = 1;
    ho.warmup = 0;
    ho.repeats = 2;
    ProvenanceOptions po;
    po.reference_model = s.dir / "lat1noisyref.onnx";  // 1.0, 1.2, 1.4, ... request by request
    RunnerPool pool({s.runner("noisy")});
    {
        ResultsStore store(s.dir / "a.csv");
        Harness h(pool, ho, po);
        h.set_load_sampler(planted_load(0));
        const auto sum = h.run(store, {{"k1", "lat2.onnx", s.dir / "lat2.onnx"}});
        CHECK(sum.conditions.disturbed);
        REQUIRE(sum.conditions.reasons.size() == 1);
        CHECK(sum.conditions.reasons[0].find("drifted") != std::string::npos);
    }
    {
        po.reference_model = s.dir / "lat1ref.onnx";
        ResultsStore store(s.dir / "b.csv");
        Harness h(pool, ho, po);
        h.set_load_sampler(planted_load(1e6));  // far more than any machine has
        const auto sum = h.run(store, {{"k1", "lat2.onnx", s.dir / "lat2.onnx"}});
        CHECK(sum.conditions.disturbed);
        CHECK(sum.conditions.reasons.at(0).find("other processes") != std::string::npos);
        h.set_load_sampler(planted_load(0));
        CHECK(!h.run(store, {{"k2", "lat3.onnx", s.dir / "lat3.onnx"}}).conditions.disturbed);
    }
}

namespace {
// four networks of 2-5 ms, two rounds each, all interleaved, the reference after every `every`
// requests (with four, spans 1 and 2 hold round 1 and round 2 of every network)
struct SpellRun {
    Scratch s;
    Summary sum;
    SpellRun(const std::string& name, const std::string& spell, std::size_t every = 4) : s(name) {
        std::ofstream(s.dir / "slow_spell") << spell << '\n';
        HarnessOptions ho;
        ho.rounds = 2;
        ho.warmup = 0;
        ho.repeats = 2;
        ho.interleave = 0;
        ProvenanceOptions po;
        po.reference_model = s.dir / "reference.onnx";  // 1 ms on the fake host at its speed
        po.every = every;
        po.every_seconds = 0;
        RunnerPool pool({s.runner("slow_spell")});
        ResultsStore store(s.dir / "r.csv");
        Harness h(pool, ho, po);
        h.set_load_sampler(planted_load(0));
        sum = h.run(store, {{"k2", "lat2.onnx", s.dir / "lat2.onnx"},
                            {"k3", "lat3.onnx", s.dir / "lat3.onnx"},
                            {"k4", "lat4.onnx", s.dir / "lat4.onnx"},
                            {"k5", "lat5.onnx", s.dir / "lat5.onnx"}});
        for (const auto& r : sum.results) latencies.push_back(r.latency_ms);
        for (const auto& key : {"k2", "k3", "k4", "k5"}) stored.push_back(store.result(key)->latency_ms);
    }
    std::vector<double> latencies, stored;
};
}  // namespace

TEST_CASE("harness: networks measured only while the host ran slow are measured again after the spell") {
    SUBCASE("a spell over both rounds, seen by the reference between them: one round more each, at full speed") {
        SpellRun run("spell_rounds", "1 8");
        // requests 1-8 and the reference after request 4 run 1.5 times slower; 4 more requests
        CHECK(run.s.requests() == 12);
        CHECK(run.latencies == std::vector<double>{2, 3, 4, 5});
        CHECK(run.stored == std::vector<double>{2, 3, 4, 5});
        const auto& c = run.sum.conditions;
        REQUIRE(c.reference);
        CHECK(c.reference->values_ms == std::vector<double>{1, 1.5, 1, 1});
        CHECK(c.slow_span_networks == 4);
        CHECK(c.slow_span_retaken == 4);
        CHECK(run.sum.slow_span_retaken == 4);
        CHECK(!c.disturbed);  // the drift is covered: a warning, not a reason
        CHECK(c.reference->slow_spans_covered);
        CHECK(reference_from_json(to_json(*c.reference)).slow_spans_covered);
        REQUIRE(!c.warnings.empty());
        CHECK(c.warnings.back().find("the 4 networks measured only while it ran slow were measured again") !=
              std::string::npos);
    }
    SUBCASE("a spell that outlasts the retakes: two rounds more each, then the run is disturbed") {
        SpellRun run("spell_long", "1 1000");
        CHECK(run.s.requests() == 16);
        CHECK(run.latencies == std::vector<double>{3, 4.5, 6, 7.5});
        const auto& c = run.sum.conditions;
        CHECK(c.slow_span_networks == 4);
        CHECK(c.slow_span_retaken == 0);
        CHECK(c.disturbed);
        REQUIRE(!c.reasons.empty());
        CHECK(c.reasons.front().find("4 networks measured only while it ran slow") != std::string::npos);
        CHECK(!c.reference->slow_spans_covered);
        CHECK(!reference_from_json(to_json(*c.reference)).slow_spans_covered);
    }
    SUBCASE("a spell over round 2 only: every network keeps its round 1, summarised from it") {
        // the reference after every two requests; requests 5-8 and the reference after request 6
        // run slow: spans 3 and 4 (round 2) are slow, spans 1 and 2 (round 1) are not
        SpellRun run("spell_second", "5 8", 2);
        // the two rounds disagree by half: the spread rule gives each network a third (requests 9-12)
        CHECK(run.s.requests() == 12);
        CHECK(run.latencies == std::vector<double>{2, 3, 4, 5});
        const auto& c = run.sum.conditions;
        CHECK(c.reference->values_ms == std::vector<double>{1, 1, 1, 1.5, 1, 1, 1});
        CHECK(c.slow_span_networks == 0);
        CHECK(!c.disturbed);
        REQUIRE(!c.warnings.empty());
        CHECK(c.warnings.back().find("every network was also measured while it did not run slow") != std::string::npos);
        // round 2 lies in slow spans: the result is that of rounds 1 and 3
        for (const auto& r : run.sum.results) {
            CHECK(r.rounds == 2);
            CHECK(r.spread == 0);
        }
    }
    SUBCASE("no spell: nothing measured again") {
        SpellRun run("spell_none", "0 0");
        CHECK(run.s.requests() == 8);
        CHECK(run.latencies == std::vector<double>{2, 3, 4, 5});
        CHECK(run.sum.conditions.reference->values_ms.size() == 3);
        CHECK(run.sum.conditions.warnings.empty());
        for (const auto& r : run.sum.results) CHECK(r.rounds == 2);
    }
}

TEST_CASE("harness: the reference is measured again by time as well as by requests") {
    // each request takes at least 0.2 s: with 0.3 s between references, one after every second
    // request at most, whatever the machine's speed (a slower one measures it more often)
    for (const double every_seconds : {0.0, 0.3}) {
        Scratch s(every_seconds > 0 ? "ref_by_time" : "ref_by_count");
        HarnessOptions ho;
        ho.rounds = 2;
        ho.warmup = 0;
        ho.repeats = 1;
        ho.round_ms = 0;
        ProvenanceOptions po;
        po.reference_model = s.dir / "reference.onnx";
        po.every = 1000;
        po.every_seconds = every_seconds;
        RunnerPool pool({s.runner("slow")});
        ResultsStore store(s.dir / "r.csv");
        Harness h(pool, ho, po);
        h.set_load_sampler(planted_load(0));
        const auto sum = h.run(store, {{"k1", "lat2.onnx", s.dir / "lat2.onnx"},
                                       {"k2", "lat3.onnx", s.dir / "lat3.onnx"},
                                       {"k3", "lat4.onnx", s.dir / "lat4.onnx"}});
        CHECK(sum.measured == 3);
        REQUIRE(sum.conditions.reference);
        if (every_seconds > 0)
            CHECK(sum.conditions.reference->values_ms.size() >= 4);  // the start, then after requests 2, 4 and 6
        else
            CHECK(sum.conditions.reference->values_ms.size() == 2);  // the start and the end
    }
}

TEST_CASE("harness: appending to a store whose reference differs beyond the noise stops, unless allowed") {
    Scratch s("append");
    HarnessOptions ho;
    ho.rounds = 1;
    ho.warmup = 0;
    ho.repeats = 2;
    ProvenanceOptions po;
    po.reference_model = s.dir / "lat1.5ref.onnx";
    po.reference_key = "refkey";
    po.store_name = "r.csv";
    po.stored = info(local_host(), {ref(3.0, 0.01)});  // measured at 3 ms, here 1.5 ms
    RunnerPool pool({s.runner("good")});
    ResultsStore store(s.dir / "r.csv");
    {
        Harness h(pool, ho, po);
        h.set_load_sampler(planted_load(0));
        CHECK_THROWS_WITH_AS(h.run(store, {{"k1", "lat2.onnx", s.dir / "lat2.onnx"}}),
                             doctest::Contains("1.5000 ms against 3.0000 ms"), config_error);
        CHECK(s.requests_of("lat2.onnx") == 0);  // stopped before any network
    }
    {
        po.allow_other_host = true;
        Harness h(pool, ho, po);
        h.set_load_sampler(planted_load(0));
        const auto sum = h.run(store, {{"k1", "lat2.onnx", s.dir / "lat2.onnx"}});
        CHECK(sum.measured == 1);
        REQUIRE(sum.conditions.warnings.size() == 1);
        CHECK(sum.conditions.warnings[0].find("appending anyway") != std::string::npos);
    }
    {
        po.allow_other_host = false;
        po.stored = info(local_host(), {ref(1.52, 0.01)});  // within the noise
        Harness h(pool, ho, po);
        h.set_load_sampler(planted_load(0));
        CHECK(h.run(store, {{"k2", "lat3.onnx", s.dir / "lat3.onnx"}}).measured == 1);
        auto elsewhere = local_host();
        elsewhere.kernel = "0.0-another-kernel";
        po.stored = info(elsewhere, {ref(1.5, 0.01)});
        Harness other(pool, ho, po);
        other.set_load_sampler(planted_load(0));
        CHECK_THROWS_WITH_AS(other.run(store, {{"k3", "lat4.onnx", s.dir / "lat4.onnx"}}),
                             doctest::Contains("another host"), config_error);
    }
}

TEST_CASE("process: a runner pinned to a CPU runs there, SCHED_FIFO when permitted, a clear error when not") {
    Scratch s("pin");
    const auto cpus = allowed_cpus();
    REQUIRE(!cpus.empty());
    const int cpu = cpus.back();
    RunnerOptions ro;
    ro.process.cpu = cpu;
    {
        Runner r(s.runner("affinity"), ro);
        const auto o = r.measure({1, "a.onnx", 0, 1}, Millis(60000));
        CHECK(o.failure == Failure::runner_error);
        CHECK(o.detail == "cpus " + std::to_string(cpu));
    }
    CHECK(allowed_cpus() == cpus);  // the calling thread's own mask is restored
    ro.process.cpu = CPU_SETSIZE + 5;
    {
        Runner r(s.runner("affinity"), ro);
        const auto o = r.measure({1, "a.onnx", 0, 1}, Millis(60000));
        CHECK(o.failure == Failure::start_failed);
        CHECK(o.detail.find("does not exist") != std::string::npos);
    }
    RunnerOptions rt;
    rt.process.realtime = true;
    std::string why;
    const bool permitted = realtime_permitted(&why);
    Runner r(s.runner("good"), rt);
    const auto o = r.measure({1, "a.onnx", 0, 1}, Millis(60000));
    if (permitted) {
        CHECK(o.ok());
    } else {
        CHECK(why.find("SCHED_FIFO") != std::string::npos);
        CHECK(o.failure == Failure::start_failed);
        CHECK(o.detail.find("SCHED_FIFO") != std::string::npos);
    }
}
