// The measuring layer: the runner protocol and process control against fake runners that
// misbehave on purpose (tests/measure/fake_runner.sh), the runner pool, the results store
// (every truncation of a file still loads), the harness (rounds, re-measuring, resuming).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <dnncost/device/kernel_check.hpp>
#include <dnncost/graph/hash.hpp>
#include <dnncost/measure/candidates.hpp>
#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/json.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/measure/runner.hpp>
#include <dnncost/measure/runner_pool.hpp>
#include <dnncost/measure/store.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/spaces/synthetic.hpp>

#include "measure/scratch.hpp"

namespace fs = std::filesystem;
using namespace dnncost;
using namespace dnncost::measure;

namespace {

/// A fresh scratch directory per test.
struct Scratch : measure_tests::Scratch {
    explicit Scratch(const std::string& name) : measure_tests::Scratch("dnncost_test_measure", name) {}
};

Request req(const std::string& model, int repeats = 3) { return {1, model, 0, repeats}; }

/// No child process of this test program is left unreaped.
bool no_children() {
    int status = 0;
    return ::waitpid(-1, &status, WNOHANG) < 0 && errno == ECHILD;
}
/// A process is gone or a zombie (an orphan reparented to an init that has not reaped it yet).
/// The process may be reaped between opening its stat file and reading it; the read then fails
/// (ESRCH), which means gone as much as a missing file does. The file is a single short line that
/// one read returns whole.
bool dead(pid_t pid) {
    const std::string path = "/proc/" + std::to_string(pid) + "/stat";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return true;
    std::array<char, 4096> buffer{};
    ssize_t got = -1;
    do got = ::read(fd, buffer.data(), buffer.size());
    while (got < 0 && errno == EINTR);
    ::close(fd);
    if (got <= 0) return true;
    const std::string_view text(buffer.data(), static_cast<std::size_t>(got));
    const auto close = text.rfind(')');
    return close != std::string::npos && close + 2 < text.size() && (text[close + 2] == 'Z' || text[close + 2] == 'X');
}
/// Whether a process killed with SIGKILL dies: the kernel delivers the signal when the process is
/// next scheduled, which a loaded machine may delay, so this waits for it; a minute is far beyond
/// any delivery and is exceeded only when the signal was never sent.
bool dies(pid_t pid) {
    for (int k = 0; k < 6000; ++k) {
        if (dead(pid)) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return dead(pid);
}
}  // namespace

TEST_CASE("json: values, NaN tokens, errors with offsets") {
    const auto v = json::parse(R"( {"id": 3, "x": [1.5, -2e3, true, null], "s": "a\"b\u00e9\n", "o": {}} )");
    REQUIRE(v.is_object());
    CHECK(v.find("id")->number == 3);
    CHECK(v.find("x")->items.size() == 4);
    CHECK(v.find("x")->items[1].number == -2000);
    CHECK(v.find("s")->string == "a\"b\xc3\xa9\n");
    CHECK(json::dump(v) == R"({"id":3,"x":[1.5,-2000,true,null],"s":"a\"b)"
                           "\xc3\xa9"
                           R"(\n","o":{}})");
    CHECK(std::isnan(json::parse("[NaN]").items[0].number));
    CHECK(std::isinf(json::parse("-Infinity").number));
    CHECK_THROWS_AS(json::parse("{\"a\": 1} x"), parse_error);
    CHECK_THROWS_AS(json::parse("{\"a\": 1"), parse_error);
    CHECK_THROWS_AS(json::parse("[01]"), parse_error);
    CHECK_THROWS_AS(json::parse("\"abc"), parse_error);
    CHECK_THROWS_AS(json::parse(std::string(100, '[') + std::string(100, ']')), parse_error);
    CHECK(json::quote("a\tb\x01") == "\"a\\tb\\u0001\"");
    // building values: set() replaces a member of the same name, dump_lines puts members on lines
    auto o = json::Value::object();
    o.set("a", json::Value::of(1.5)).set("b", json::Value::of("x\"y")).set("a", json::Value::of(true));
    o.set("list", json::Value::array().push(json::Value::of(2.0)).push(json::Value{}));
    CHECK(json::dump(o) == R"({"a":true,"b":"x\"y","list":[2,null]})");
    CHECK(json::dump_lines(o) == "{\n  \"a\": true,\n  \"b\": \"x\\\"y\",\n  \"list\": [2,null]\n}\n");
    CHECK(json::dump(json::parse(json::dump_lines(o))) == json::dump(o));
    CHECK(json::parse_object("", "x").is_null());
    CHECK_THROWS_WITH_AS(json::parse_object("[1]", "the thing"), doctest::Contains("the thing: not a JSON object"),
                         parse_error);
}

TEST_CASE("decode_reply: every kind of answer gets its verdict") {
    CHECK(decode_reply(R"({"id":7,"latency_ms":[1.5,2]})", 7).kind == Reply::Kind::answer);
    const auto mem = decode_reply(R"({"id":7,"latency_ms":[1],"peak_memory_bytes":10,"energy_mj":0.5})", 7);
    CHECK(mem.outcome.answer.peak_memory_bytes == 10);
    CHECK(mem.outcome.answer.energy_mj == 0.5);
    CHECK(decode_reply(R"({"device":{"name":"x"}})", 7).kind == Reply::Kind::device);
    CHECK(decode_reply(R"({"device":{"name":"x"}})", 7).device == R"({"name":"x"})");
    const auto verdict = [](const char* line) { return decode_reply(line, 7).outcome.failure; };
    CHECK(verdict("hello") == Failure::garbage);
    CHECK(verdict("[1,2]") == Failure::garbage);
    CHECK(verdict(R"({"id":7,"latency_ms":[NaN]})") == Failure::bad_latency);
    CHECK(verdict(R"({"id":7,"latency_ms":[Infinity]})") == Failure::bad_latency);
    CHECK(verdict(R"({"id":7,"latency_ms":[-1]})") == Failure::bad_latency);
    CHECK(verdict(R"({"id":7,"latency_ms":[0]})") == Failure::bad_latency);
    CHECK(verdict(R"({"id":7,"latency_ms":[]})") == Failure::bad_latency);
    CHECK(verdict(R"({"id":7,"latency_ms":"fast"})") == Failure::bad_latency);
    CHECK(verdict(R"({"id":7})") == Failure::bad_latency);
    CHECK(verdict(R"({"id":8,"latency_ms":[1]})") == Failure::bad_answer);
    CHECK(verdict(R"({"latency_ms":[1]})") == Failure::bad_answer);
    CHECK(verdict(R"({"id":7,"latency_ms":[1],"peak_memory_bytes":-3})") == Failure::bad_answer);
    // a petabyte of memory or a terajoule is kept; beyond it is no board's reading, and the bound
    // is the one a data set keeps
    CHECK(verdict(R"({"id":7,"latency_ms":[1],"peak_memory_bytes":1e15,"energy_mj":1e15})") == Failure::none);
    CHECK(train::max_measured_value == 1e15);
    const auto huge = decode_reply(R"({"id":7,"latency_ms":[1],"peak_memory_bytes":1e308})", 7);
    CHECK(huge.outcome.failure == Failure::bad_answer);
    CHECK(huge.outcome.detail.find("peak_memory_bytes") != std::string::npos);
    CHECK(verdict(R"({"id":7,"latency_ms":[1],"energy_mj":2e15})") == Failure::bad_answer);
    const auto err = decode_reply(R"({"id":7,"error":"out of memory"})", 7);
    CHECK(err.outcome.failure == Failure::runner_error);
    CHECK(err.outcome.detail == "out of memory");
    const auto prof = decode_reply(
        R"({"id":7,"latency_ms":[1],"kernels":[{"name":"n1","op":"Conv","ms":0.5},{"name":"n2","ms":0}],)"
        R"("optimized_model":"/m.optimized.onnx"})",
        7);
    REQUIRE(prof.outcome.ok());
    REQUIRE(prof.outcome.answer.kernels.size() == 2);
    CHECK(prof.outcome.answer.kernels[0].name == "n1");
    CHECK(prof.outcome.answer.kernels[0].op == "Conv");
    CHECK(prof.outcome.answer.kernels[0].ms == 0.5);
    CHECK(prof.outcome.answer.kernels[1].op.empty());
    CHECK(prof.outcome.answer.optimized_model == "/m.optimized.onnx");
    CHECK(decode_reply(R"({"id":7,"latency_ms":[1]})", 7).outcome.answer.kernels.empty());
    CHECK(decode_reply(R"({"id":7,"latency_ms":[1],"kernels":[]})", 7).outcome.ok());
    for (const char* bad : {R"("kernels":{"n":1})", R"("kernels":[3])", R"("kernels":[{"op":"Conv","ms":1}])",
                            R"("kernels":[{"name":"","ms":1}])", R"("kernels":[{"name":"a","op":7,"ms":1}])",
                            R"("kernels":[{"name":"a","ms":-1}])", R"("kernels":[{"name":"a","ms":NaN}])",
                            R"("kernels":[{"name":"a","ms":"1"}])", R"("optimized_model":5)",
                            R"("optimized_model":"")"}) {
        CAPTURE(bad);
        const auto o = decode_reply(std::string(R"({"id":7,"latency_ms":[1],)") + bad + "}", 7).outcome;
        CHECK(o.failure == Failure::bad_answer);
        CHECK((o.detail.find("kernel") != std::string::npos || o.detail.find("optimized_model") != std::string::npos));
    }
    Request profiled{3, "/m.onnx", 0, 1};
    profiled.profile = true;
    CHECK(encode_request(profiled) == "{\"id\":3,\"model\":\"/m.onnx\",\"warmup\":0,\"repeats\":1,\"profile\":true}\n");
    CHECK(encode_request({12, "/a \"b\".onnx", 2, 5}) ==
          "{\"id\":12,\"model\":\"/a \\\"b\\\".onnx\",\"warmup\":2,\"repeats\":5}\n");
}

namespace {
graph::Graph small_graph(bool renamed, bool reordered, std::int64_t width = 8, std::int64_t kernel = 3) {
    graph::Graph g(renamed ? "other" : "g");
    const auto p = [&](const char* a, const char* b) { return std::string(renamed ? b : a); };
    const int x = g.add_input(p("x", "input0"), {1, 3, 8, 8});
    const int w1 = g.add_weight(p("w1", "wa"), {width, 3, kernel, kernel});
    const int w2 = g.add_weight(p("w2", "wb"), {width, 3, 1, 1});
    const auto conv = [&](int w, const std::string& name, std::int64_t k) {
        return g.add_op("Conv", name, {x, w}, {1, width, 8, 8},
                        {{"kernel_shape", std::vector<std::int64_t>{k, k}},
                         {"pads", std::vector<std::int64_t>{k / 2, k / 2, k / 2, k / 2}}});
    };
    int a, b;
    if (!reordered) {
        a = conv(w1, p("c1", "n9"), kernel);
        b = conv(w2, p("c2", "n8"), 1);
    } else {
        b = conv(w2, p("c2", "n8"), 1);
        a = conv(w1, p("c1", "n9"), kernel);
    }
    const int y = g.add_op("Add", p("add", "sum"), {a, b}, {1, width, 8, 8});
    g.mark_output(y);
    return g;
}
}  // namespace

TEST_CASE("canonical_hash: names and node order do not matter, structure, shapes, attributes do") {
    const auto h = graph::canonical_hash(small_graph(false, false));
    CHECK(h == graph::canonical_hash(small_graph(true, false)));
    CHECK(h == graph::canonical_hash(small_graph(true, true)));
    CHECK(h != graph::canonical_hash(small_graph(false, false, 16)));    // shapes
    CHECK(h != graph::canonical_hash(small_graph(false, false, 8, 5)));  // kernel: attributes and weight shape
    auto g = small_graph(false, false);
    g.node(0).set_attr("strides", std::vector<std::int64_t>{1, 1});
    CHECK(h != graph::canonical_hash(g));  // an attribute alone
    // weight values do not make another network; integer constants (shape targets) do
    auto weighted = small_graph(false, false);
    weighted.set_data(weighted.find_tensor("w2"), std::vector<double>(24, 0.5));
    CHECK(h == graph::canonical_hash(weighted));
    auto with_shape = [](std::vector<double> target) {
        auto s = small_graph(false, false);
        const int t = s.add_weight("target", {2}, graph::DataType::int64);
        s.set_data(t, std::move(target));
        s.add_op("Reshape", "r", {s.node(2).outputs[0], t}, {8, 64});
        return graph::canonical_hash(s);
    };
    CHECK(with_shape({8, 64}) != with_shape({-1, 64}));
    CHECK(h.hex().size() == 32);
    CHECK(h.hex() == graph::canonical_hash(small_graph(true, true)).hex());
    // the 15,625 NB201 strings name 15,625 different eager graphs (spot check on a slice)
    std::set<std::string> keys;
    for (std::int64_t i = 0; i < 200; ++i) keys.insert(network_key(nb201::build_graph(nb201::from_index(i * 78))));
    CHECK(keys.size() == 200);
}

TEST_CASE("write_model_for_runner: the file imports back to a graph with the same key") {
    Scratch s("model");
    const auto g =
        nb201::build_graph("|nor_conv_3x3~0|+|skip_connect~0|none~1|+|avg_pool_3x3~0|nor_conv_1x1~1|skip_connect~2|");
    write_model_for_runner(g, s.dir / "m.onnx", 1);
    CHECK(network_key(io::import_onnx(s.dir / "m.onnx")) == network_key(g));
}

TEST_CASE("candidates: network names and strings of a space, every id building its network again") {
    Scratch s("candidates");
    const std::string nb = "|nor_conv_3x3~0|+|none~0|skip_connect~1|+|avg_pool_3x3~0|none~1|nor_conv_1x1~2|";
    std::ofstream(s.dir / "archs.txt") << "# a comment\n"
                                       << nb << "@batch=4\n\n"
                                       << "  |none~0|+|none~0|none~1|+|none~0|none~1|nor_conv_3x3~2|  \n"
                                       << "cnn:r64-s16-basic-Relu-w16d1s2k3\n";
    const auto options = spaces::space_options("batch=2");
    const auto c = read_arch_file((s.dir / "archs.txt").string(), "nb201", options);
    REQUIRE(c.size() == 3);
    CHECK(c[0].id == nb + "@batch=4");  // the line's own options win
    CHECK(c[0].graph == nb201::build_graph(nb, {.batch = 4}));
    CHECK(c[1].id == "|none~0|+|none~0|none~1|+|none~0|none~1|nor_conv_3x3~2|@batch=2");
    CHECK(c[2].id == "cnn:r64-s16-basic-Relu-w16d1s2k3");
    CHECK(c[2].opset == synthetic::onnx_opset);
    // read back from its id alone, whatever options the reader gives
    for (const auto& one : c) {
        CAPTURE(one.id);
        CHECK(network_key(candidate_from_id(one.id, s.dir, {}).graph) == network_key(one.graph));
        CHECK(network_key(candidate_from_id(one.id, s.dir, spaces::space_options("batch=8")).graph) ==
              network_key(one.graph));
    }
    // a space's own strings are named with the options they were built with
    CHECK(named_candidate(nb, "nb201", {}).id == nb);
    Rng rng(1);
    const auto fb = "fbnet:" + spaces::find_space("fbnet").sample(rng);
    CHECK(named_candidate(fb, "", options).id == fb + "@batch=2");
    std::ofstream(s.dir / "bad.txt") << nb << "\nresnet18\n";
    CHECK_THROWS_WITH_AS(read_arch_file((s.dir / "bad.txt").string(), "", {}),
                         doctest::Contains("bad.txt:2: 'resnet18' names no search space"), parse_error);
    std::ofstream(s.dir / "bad_cnn.txt") << "cnn:r64-s16-basic-Relu\n";
    CHECK_THROWS_WITH_AS(read_arch_file((s.dir / "bad_cnn.txt").string(), "", {}),
                         doctest::Contains("bad_cnn.txt:1: cnn: bad architecture string"), parse_error);
}

TEST_CASE("runner: a well-behaved runner answers, its device line is kept") {
    Scratch s("good");
    {
        Runner r(s.runner("good"));
        const auto o = r.measure(req("lat2.5.onnx", 4), Millis(10000));
        REQUIRE(o.ok());
        CHECK(o.answer.latency_ms == std::vector<double>(4, 2.5));
        CHECK(r.device().find("\"fake\"") != std::string::npos);
        CHECK(r.measure(req("b.onnx"), Millis(10000)).answer.latency_ms == std::vector<double>(3, 1.0));
        CHECK(r.starts() == 1);
    }
    CHECK(no_children());
}

TEST_CASE("runner: a profiled request gets kernels from a runner that profiles, plain latencies from one that does not") {
    Scratch s("profile");
    {
        Request r = req("lat2.5.onnx", 2);
        r.profile = true;
        Runner plain(s.runner("good"));
        const auto o = plain.measure(r, Millis(10000));
        REQUIRE(o.ok());
        CHECK(o.answer.latency_ms == std::vector<double>(2, 2.5));
        CHECK(o.answer.kernels.empty());
        CHECK(o.answer.optimized_model.empty());

        Runner profiling(s.runner("profile"));
        const auto p = profiling.measure(r, Millis(10000));
        REQUIRE(p.ok());
        REQUIRE(p.answer.kernels.size() == 2);
        CHECK(p.answer.kernels[0].name == "c1");
        CHECK(p.answer.kernels[1].op == "Add");
        CHECK(p.answer.kernels[0].ms == 1.25);
        CHECK(p.answer.optimized_model == "lat2.5.optimized.onnx");
        const auto unprofiled = profiling.measure(req("lat2.5.onnx", 2), Millis(10000));
        REQUIRE(unprofiled.ok());
        CHECK(unprofiled.answer.kernels.empty());

        Runner bad(s.runner("bad_kernels"));
        const auto b = bad.measure(r, Millis(10000));
        CHECK(b.failure == Failure::bad_answer);
        CHECK(b.detail.find("kernel 0 has no finite non-negative \"ms\"") != std::string::npos);
    }
    CHECK(no_children());
}

TEST_CASE("runner: every misbehaviour is a failure with its reason, and the next request works") {
    Scratch s("bad");
    struct Case {
        const char* mode;
        Failure failure;
        const char* detail;
    };
    const Case cases[] = {
        {"garbage", Failure::garbage, "Loading model"},
        {"partial", Failure::partial_line, "inside a line"},
        {"nan", Failure::bad_latency, "NaN"},
        {"negative", Failure::bad_latency, "not positive"},
        {"missing", Failure::bad_latency, "neither"},
        {"wrong_id", Failure::bad_answer, "while waiting for id"},
        {"error", Failure::runner_error, "cannot load"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.mode);
        Runner r(s.runner(c.mode));
        for (int k = 0; k < 2; ++k) {  // twice: the runner is restarted (or still usable) after a failure
            const auto o = r.measure(req("a.onnx"), Millis(10000));
            CHECK(o.failure == c.failure);
            CHECK(o.detail.find(c.detail) != std::string::npos);
        }
    }
    CHECK(no_children());
}

TEST_CASE("runner: crash by exit status and by signal, with the runner's stderr in the reason") {
    Scratch s("crash");
    {
        Runner r(s.runner("crash"));
        CHECK(r.measure(req("a.onnx"), Millis(10000)).ok());
        const auto o = r.measure(req("a.onnx"), Millis(10000));
        CHECK(o.failure == Failure::crash);
        CHECK(o.detail.find("status 3") != std::string::npos);
        CHECK(o.detail.find("simulated crash on request 2") != std::string::npos);
        CHECK(r.measure(req("a.onnx"), Millis(10000)).ok());  // restarted
        CHECK(r.starts() == 2);
    }
    {
        Runner r(s.runner("crash_model"));
        const auto o = r.measure(req("crash.onnx"), Millis(10000));
        CHECK(o.failure == Failure::crash);
        CHECK(o.detail.find("signal 11") != std::string::npos);
        CHECK(r.measure(req("a.onnx"), Millis(10000)).ok());
    }
    CHECK(no_children());
}

TEST_CASE("runner: a hang is killed after the timeout, with the whole process group") {
    Scratch s("hang");
    {
        // The runner starts its child before its device line, and the first start waits for
        // that line (as long as it takes), so the child exists before the request is sent.
        RunnerOptions ro;
        ro.startup_timeout = Millis(600000);
        Runner r(s.runner("hang_model"), ro);
        const auto o = r.measure(req("hang.onnx"), Millis(1500));
        CHECK(o.failure == Failure::timeout);
        CHECK(o.detail.find("no answer within 1.5 s") != std::string::npos);
        CHECK(!r.running());
        std::ifstream pid_file(s.dir / "hang_child.pid");
        pid_t child = 0;
        pid_file >> child;
        REQUIRE(child > 0);
        CHECK(dies(child));  // the sleeping grandchild went with the group
        CHECK(r.measure(req("a.onnx"), Millis(10000)).ok());
    }
    CHECK(no_children());
}

TEST_CASE("runner: one-shot runners are restarted per request, a slow or missing device line is fine") {
    Scratch s("restart");
    {
        Runner r(s.runner("oneshot"));
        for (int k = 0; k < 4; ++k) CHECK(r.measure(req("a.onnx"), Millis(10000)).ok());
        CHECK(r.starts() > 1);
    }
    {
        Runner r(s.runner("exit_mid"));  // exits silently when the second request arrives
        for (int k = 0; k < 3; ++k) CHECK(r.measure(req("a.onnx"), Millis(10000)).ok());
    }
    {
        RunnerOptions ro;
        ro.startup_timeout = Millis(300);
        Runner r(s.runner("slow_device"), ro);  // device line after 2 s, after the startup wait
        CHECK(r.measure(req("a.onnx"), Millis(20000)).ok());
        CHECK(r.device().find("slow_device") != std::string::npos);
    }
    {
        RunnerOptions ro;
        ro.startup_timeout = Millis(300);
        Runner r(s.runner("silent"), ro);
        CHECK(r.measure(req("a.onnx"), Millis(10000)).ok());
        CHECK(r.device().empty());
    }
    {
        Runner r("/nonexistent/runner --x");
        const auto o = r.measure(req("a.onnx"), Millis(10000));
        CHECK(o.failure == Failure::start_failed);
        CHECK(o.detail.find("127") != std::string::npos);
    }
    CHECK(no_children());
}

TEST_CASE("runner pool: runners work at the same time, one request each, retries, a broken command stops") {
    Scratch s("pool");
    {
        RunnerPool pool({s.runner("barrier"), s.runner("barrier")});
        std::vector<Request> batch(6, req("a.onnx"));
        std::size_t calls = 0;
        const auto out = pool.run(batch, [&](std::size_t, const Outcome&) { ++calls; });
        CHECK(calls == 6);
        std::set<double> pids;
        for (const auto& o : out) {
            CHECK(o.ok());
            if (o.answer.energy_mj) pids.insert(*o.answer.energy_mj);
        }
        CHECK(pids.size() == 2);  // both runners measured
        CHECK(!pool.device().empty());
    }
    {
        PoolOptions po;
        po.retries = 1;
        RunnerPool pool({s.runner("crash")}, po);
        const auto out = pool.run(std::vector<Request>(3, req("a.onnx")));
        for (const auto& o : out) CHECK(o.ok());
        CHECK(out[1].attempts == 2);  // the crash on the second request was retried
    }
    {
        PoolOptions po;
        po.retries = 0;
        RunnerPool pool({s.runner("crash")}, po);
        const auto out = pool.run(std::vector<Request>(2, req("a.onnx")));
        CHECK(out[0].ok());
        CHECK(out[1].failure == Failure::crash);
    }
    {
        RunnerPool pool({"exec /nonexistent/runner"});
        CHECK_THROWS_WITH_AS(pool.run({req("a.onnx")}), doctest::Contains("cannot be started"), config_error);
    }
    CHECK(no_children());
}

namespace {
Record rec(std::string key, std::string id, double latency, int rounds, std::string_view status) {
    Record r;
    r.key = std::move(key);
    r.id = std::move(id);
    r.latency_ms = latency;
    r.spread = 0.01;
    r.rounds = rounds;
    r.status = parse_status(status).value();
    return r;
}
std::vector<Record> sample_records() {
    std::vector<Record> rs;
    for (int i = 0; i < 5; ++i) {
        Record r;
        r.key = "k";
        r.key += std::to_string(i);  // not "k" + ...: GCC 12 at -O2 and above warns falsely on that
        r.id = i == 2 ? "model, with \"quotes\".onnx" : "|skip_connect~0|+|none~0|none~1|+|none~0|none~1|none~2|";
        r.latency_ms = 1.25 + i;
        r.spread = 0.01 * i;
        r.rounds = 3;
        r.status = i == 3 ? Status::failed(Failure::timeout) : i == 4 ? Status::in_round() : Status::ok();
        if (i == 3) {
            r.latency_ms = std::nan("");
            r.detail = "no answer within 2 s, \"killed\"\nsecond line";
        }
        if (i == 1) r.peak_memory_bytes = 123456;
        r.time = "2024-01-01T00:00:0" + std::to_string(i) + "Z";
        rs.push_back(r);
    }
    return rs;
}
}  // namespace

TEST_CASE("store: rows round-trip, every truncation of the file loads to a prefix of its rows") {
    Scratch s("store");
    const auto path = s.dir / "results.csv";
    const auto rows = sample_records();
    {
        ResultsStore store(path);
        for (const auto& r : rows) store.append(r);
    }
    const auto text = io::read_file(path);
    const auto back = read_store(path);
    REQUIRE(back.records.size() == rows.size());
    CHECK(back.issues.empty());
    CHECK(back.records[2].id == rows[2].id);
    CHECK(back.records[3].detail == "no answer within 2 s, \"killed\" second line");
    CHECK(back.records[1].peak_memory_bytes == 123456);
    CHECK(back.records[0].latency_ms == doctest::Approx(1.25));
    CHECK(!back.records[0].peak_memory_bytes);
    for (std::size_t len = 0; len <= text.size(); ++len) {
        CAPTURE(len);
        const auto part = parse_store(std::string_view(text).substr(0, len), "cut.csv");
        CHECK(part.issues.empty());
        REQUIRE(part.records.size() <= rows.size());
        for (std::size_t i = 0; i < part.records.size(); ++i) CHECK(part.records[i].key == rows[i].key);
        if (len % 5 == 0 || len == text.size()) {  // opening for writing cuts the torn tail off
            const auto cut = s.dir / "cut.csv";
            { std::ofstream(cut, std::ios::binary) << text.substr(0, len); }
            ResultsStore st(cut);
            CHECK(st.records().size() == part.records.size());
            const auto fixed = io::read_file(cut);
            CHECK((fixed.empty() || fixed.back() == '\n'));
            st.append(rows[0]);  // a new row after a repaired tail is read back intact
            CHECK(read_store(cut).records.back().key == rows[0].key);
        }
    }
}

TEST_CASE("store: results, rounds in progress, compaction, sidecar, refusing foreign files") {
    Scratch s("store2");
    const auto path = s.dir / "r.csv";
    ResultsStore store(path);
    Record a = rec("a", "x", 1, 1, "round");
    store.append(a);
    a.status = Status::failed(Failure::crash);
    store.append(a);  // a failed result...
    a.status = Status::in_round();
    a.latency_ms = 2;
    store.append(a);  // ...then a new measurement in progress
    Record b = rec("b", "y", 3, 3, "ok");
    store.append(b);
    CHECK(store.result("a")->status == Status::failed(Failure::crash));
    CHECK(store.rounds_in_progress("a").size() == 1);
    CHECK(store.rounds_in_progress("a")[0].latency_ms == 2);
    CHECK(store.result("b")->ok());
    CHECK(store.result("c") == nullptr);
    store.compact();
    const auto c = read_store(path);
    CHECK(c.records.size() == 3);  // a's result, b's result, a's round in progress
    CHECK(final_records(c.records).size() == 2);
    store.append(b);
    CHECK(read_store(path).records.size() == 4);

    StoreInfo info{"ort-cpu", {"run --threads 1"}, R"({"runtime":"onnxruntime"})", R"({"rounds":3})"};
    write_store_info(sidecar_path(path), info);
    CHECK(sidecar_path(path).filename() == "r.device.json");
    const auto back = read_store_info(sidecar_path(path));
    REQUIRE(back);
    CHECK(back->device == "ort-cpu");
    CHECK(back->runners == info.runners);
    CHECK(back->runner_device == info.runner_device);
    CHECK(!read_store_info(s.dir / "none.json"));

    { std::ofstream(s.dir / "other.csv") << "arch,pixel3\nx,1\n"; }
    CHECK_THROWS_AS(ResultsStore(s.dir / "other.csv"), parse_error);
    CHECK(!is_results_file(s.dir / "other.csv"));
    CHECK(is_results_file(path));
}

TEST_CASE("store as a data set: ok results only, by id, the space from the ids") {
    Scratch s("dataset");
    const auto path = s.dir / "r.csv";
    const std::string a1 = "|nor_conv_3x3~0|+|skip_connect~0|none~1|+|avg_pool_3x3~0|nor_conv_1x1~1|skip_connect~2|";
    const std::string a2 = "|skip_connect~0|+|none~0|none~1|+|none~0|none~1|none~2|";
    const std::string a3 = "|nor_conv_1x1~0|+|nor_conv_1x1~0|none~1|+|none~0|none~1|none~2|";
    {
        ResultsStore store(path);
        store.append(rec("k1", a1, 4, 3, "ok"));
        store.append(rec("k2", a2, 1, 3, "timeout"));
        store.append(rec("k3", a3, 2, 2, "round"));
        store.append(rec("k1", a1, 5, 3, "ok"));
    }
    const auto ds = load_results_dataset(path);
    REQUIRE(ds.size() == 1);
    CHECK(ds.key(0) == a1);
    CHECK(ds.column("latency_ms")[0] == 5);  // the last result of a key
    CHECK(ds.graph(0)->num_nodes() > 0);
    CHECK(ds.source() == path.string());
    CHECK(ds.line(0) == 5);  // the store's own line of the result, not its place among the ok rows
    {
        ResultsStore store(path);
        store.append(rec("k4", "|bogus~0|+|none~0|none~1|+|none~0|none~1|none~2|", 1, 1, "ok"));
    }
    const auto skipped = load_results_dataset(path).skipped();
    REQUIRE(skipped.size() == 1);
    CHECK(skipped[0].line == 6);
    CHECK_THROWS_WITH_AS(load_results_dataset(path, {}, true), doctest::Contains("r.csv:6: bad architecture"),
                         parse_error);
    { std::ofstream(s.dir / "empty.csv") << "key,id,latency_ms,spread,rounds,status,time\nk,x,,,0,crash,t\n"; }
    CHECK_THROWS_WITH_AS(load_results_dataset(s.dir / "empty.csv"), doctest::Contains("no network with status ok"),
                         parse_error);
    // every ok row unreadable: the error says which line and why, not only that none is left
    { std::ofstream(s.dir / "nan.csv") << "key,id,latency_ms,spread,rounds,status,time\nk,x,nan,0,3,ok,t\n"; }
    CHECK_THROWS_WITH_AS(load_results_dataset(s.dir / "nan.csv"),
                         doctest::Contains("1 row left out; line 2: column 'latency_ms': NaN ('nan')"), parse_error);
}

namespace {
std::vector<Network> nets(const Scratch& s, std::initializer_list<std::string> names) {
    std::vector<Network> out;
    for (const auto& n : names) out.push_back({"key-" + n, n, s.dir / n});
    return out;
}
}  // namespace

TEST_CASE("harness: rounds, statistic, failures by reason, resume without repeating a round") {
    Scratch s("harness");
    const auto path = s.dir / "r.csv";
    HarnessOptions ho;
    ho.rounds = 3;
    ho.warmup = 1;
    ho.repeats = 4;
    ho.max_rounds = 3;
    {
        RunnerPool pool({s.runner("crash_model")});
        ResultsStore store(path);
        Harness h(pool, ho);
        std::size_t progress_calls = 0;
        HarnessEvents ev;
        ev.on_progress = [&](const Progress& p) {
            ++progress_calls;
            CHECK(p.requests_done <= p.requests_total);
        };
        const auto sum = h.run(store, nets(s, {"lat2.onnx", "lat3.5.onnx", "crash.onnx", "lat2.onnx"}), ev);
        CHECK(sum.measured == 2);
        CHECK(sum.failed == 1);
        CHECK(sum.duplicates == 1);
        CHECK(sum.failed_by_reason.at("crash") == 1);
        CHECK(progress_calls > 3);
        CHECK(store.result("key-lat2.onnx")->latency_ms == 2);
        CHECK(store.result("key-lat2.onnx")->rounds == 3);
        CHECK(store.result("key-lat3.5.onnx")->latency_ms == 3.5);
        CHECK(store.result("key-crash.onnx")->status == Status::failed(Failure::crash));
        CHECK(store.result("key-crash.onnx")->detail.find("signal 11") != std::string::npos);
        // 3 rounds x 2 networks, and the crash tried twice (one retry) in round 1
        CHECK(s.requests() == 8);
    }
    // a second run skips what is there and retries the failed network only
    {
        RunnerPool pool({s.runner("good")});
        ResultsStore store(path);
        Harness h(pool, ho);
        const auto sum = h.run(store, nets(s, {"lat2.onnx", "lat3.5.onnx", "crash.onnx"}));
        CHECK(sum.skipped == 2);
        CHECK(sum.measured == 1);
        CHECK(s.requests() == 8 + 3);
        CHECK(final_records(read_store(path).records).size() == 3);
        CHECK(read_store(path).records.size() == 3);  // compacted: one row per network
    }
    // rounds already in the store are not measured again
    {
        ResultsStore store(path);
        store.append(rec("key-lat4.onnx", "lat4.onnx", 4, 1, "round"));
        store.append(rec("key-lat4.onnx", "lat4.onnx", 4, 2, "round"));
    }
    {
        RunnerPool pool({s.runner("good")});
        ResultsStore store(path);
        Harness h(pool, ho);
        const auto before = s.requests();
        const auto sum = h.run(store, nets(s, {"lat2.onnx", "lat4.onnx"}));
        CHECK(sum.measured == 1);
        CHECK(s.requests() == before + 1);
        CHECK(store.result("key-lat4.onnx")->rounds == 3);
    }
    // --force measures again
    {
        RunnerPool pool({s.runner("good")});
        ResultsStore store(path);
        auto forced = ho;
        forced.force = true;
        Harness h(pool, forced);
        const auto before = s.requests();
        CHECK(h.run(store, nets(s, {"lat2.onnx"})).measured == 1);
        CHECK(s.requests() == before + 3);
    }
    CHECK(no_children());
}

namespace {
/// Settings for the fake "noisy" runner: the median of 3 rounds of 2 runs, re-measured above a
/// spread of 5 % up to `max_rounds`.
HarnessOptions noisy_settings(int max_rounds) {
    HarnessOptions ho;
    ho.statistic = Statistic::median;
    ho.rounds = 3;
    ho.warmup = 0;
    ho.repeats = 2;
    ho.remeasure_spread = 0.05;
    ho.max_rounds = max_rounds;
    return ho;
}
}  // namespace

TEST_CASE("harness: unstable networks get more rounds up to the cap, stable ones do not") {
    Scratch s("remeasure");
    const auto ho = noisy_settings(6);
    RunnerPool pool({s.runner("noisy")});
    ResultsStore store(s.dir / "r.csv");
    Harness h(pool, ho);
    const auto sum = h.run(store, nets(s, {"lat1noisy.onnx", "lat2.onnx"}));
    CHECK(sum.measured == 2);
    CHECK(sum.remeasured == 1);
    const auto* noisy = store.result("key-lat1noisy.onnx");
    CHECK(noisy->rounds == 6);
    CHECK(noisy->spread > 0.05);
    CHECK(noisy->latency_ms == doctest::Approx(1.2));  // rounds 1.2 1.4 1.0 1.2 1.4 1.0
    CHECK(store.result("key-lat2.onnx")->rounds == 3);
    CHECK(store.result("key-lat2.onnx")->spread == 0);
}

TEST_CASE("harness: rounds go round-robin within groups, the runner keeps a session for planned rounds only") {
    CHECK(encode_request({4, "/m.onnx", 1, 2}).find("keep") == std::string::npos);
    CHECK(encode_request({4, "/m.onnx", 1, 2, true}) == "{\"id\":4,\"model\":\"/m.onnx\",\"warmup\":1,\"repeats\":2,\"keep\":true}\n");
    const auto run = [](int interleave, bool keep_sessions) {
        Scratch s("groups");
        auto ho = noisy_settings(4);
        ho.interleave = interleave;
        ho.keep_sessions = keep_sessions;
        RunnerPool pool({s.runner("noisy")});
        ResultsStore store(s.dir / "r.csv");
        Harness h(pool, ho);
        const auto sum = h.run(store, nets(s, {"lat1noisy.onnx", "lat2.onnx", "lat3.onnx", "lat4.onnx", "lat5.onnx"}));
        CHECK(sum.measured == 5);
        CHECK(store.result("key-lat1noisy.onnx")->rounds == 4);
        std::ifstream in(s.dir / "sessions.log");
        std::vector<std::string> lines;
        for (std::string line; std::getline(in, line);) lines.push_back(line);
        return lines;
    };
    // groups of two: {noisy, 2}, {3, 4}, {5}; every planned round but a network's last keeps its
    // session; the unstable network's extra round loads afresh
    const std::vector<std::string> grouped = {
        "lat1noisy.onnx keep",  "lat2.onnx keep",  "lat1noisy.onnx keep", "lat2.onnx keep",
        "lat1noisy.onnx fresh", "lat2.onnx fresh", "lat1noisy.onnx fresh", "lat3.onnx keep",
        "lat4.onnx keep",       "lat3.onnx keep",  "lat4.onnx keep",      "lat3.onnx fresh",
        "lat4.onnx fresh",      "lat5.onnx keep",  "lat5.onnx keep",      "lat5.onnx fresh"};
    CHECK(run(2, true) == grouped);
    // asked for fresh sessions: the same order, nothing kept
    auto fresh = grouped;
    for (auto& line : fresh) line = line.substr(0, line.find(' ')) + " fresh";
    CHECK(run(2, false) == fresh);
    // 0: every pending network in each round
    const auto all = run(0, true);
    REQUIRE(all.size() == 16);
    CHECK(all[0] == "lat1noisy.onnx keep");
    CHECK(all[4] == "lat5.onnx keep");
    CHECK(all[5] == "lat1noisy.onnx keep");
    CHECK(all[10] == "lat1noisy.onnx fresh");
    CHECK(all[14] == "lat5.onnx fresh");
    CHECK(all[15] == "lat1noisy.onnx fresh");
}

TEST_CASE("harness: the minimum by default, and later rounds get enough runs to fill round_ms") {
    Scratch s("calibrate");
    HarnessOptions ho;
    CHECK(ho.statistic == Statistic::minimum);
    ho.rounds = 3;
    ho.warmup = 0;
    ho.repeats = 2;
    ho.round_ms = 10;
    ho.remeasure_spread = 0.05;
    ho.max_rounds = 6;
    {
        RunnerPool pool({s.runner("noisy")});
        ResultsStore store(s.dir / "r.csv");
        Harness h(pool, ho);
        const auto sum = h.run(store, nets(s, {"lat2.onnx", "lat1noisy.onnx"}));
        CHECK(sum.measured == 2);
        // the noisy network's rounds are 1.2 1.4 1.0 ...: its minimum is that of its fastest round
        CHECK(store.result("key-lat1noisy.onnx")->latency_ms == doctest::Approx(1.0));
        CHECK(store.result("key-lat2.onnx")->latency_ms == 2);
    }
    std::vector<std::string> lat2;
    {
        std::ifstream in(s.dir / "repeats.log");
        for (std::string name, n; in >> name >> n;)
            if (name == "lat2.onnx") lat2.push_back(n);
    }
    // round 1 with N = 2 runs; then ceil(10 ms / 2 ms) = 5 runs a round
    CHECK(lat2 == std::vector<std::string>{"2", "5", "5"});

    // the cap on runs a round
    Scratch c("calibrate-cap");
    ho.round_ms = 1000;
    ho.max_repeats = 7;
    RunnerPool pool({c.runner("good")});
    ResultsStore store(c.dir / "r.csv");
    Harness h(pool, ho);
    h.run(store, nets(c, {"lat2.onnx"}));
    std::ifstream in(c.dir / "repeats.log");
    std::vector<std::string> counts;
    for (std::string name, n; in >> name >> n;) counts.push_back(n);
    CHECK(counts == std::vector<std::string>{"2", "7", "7"});

    HarnessOptions bad;
    bad.max_repeats = 1;
    CHECK_THROWS_AS(bad.check(), config_error);
    bad = {};
    bad.round_ms = -1;
    CHECK_THROWS_AS(bad.check(), config_error);
}

TEST_CASE("harness: a resumed unstable network with more than R rounds gets its further rounds") {
    Scratch s("resume-unstable");
    const auto path = s.dir / "r.csv";
    HarnessOptions ho;
    ho.rounds = 3;
    ho.warmup = 0;
    ho.repeats = 2;
    ho.remeasure_spread = 0.05;
    ho.max_rounds = 6;
    {  // an interrupted run left four rounds of an unstable network (relative spread 0.2 / 1.2)
        ResultsStore store(path);
        for (int k = 1; k <= 4; ++k) store.append(rec("key-lat1.onnx", "lat1.onnx", k % 2 ? 1.0 : 1.4, k, "round"));
    }
    RunnerPool pool({s.runner("good")});
    ResultsStore store(path);
    Harness h(pool, ho);
    const auto sum = h.run(store, nets(s, {"lat1.onnx"}));
    CHECK(sum.measured == 1);
    CHECK(sum.failed == 0);
    CHECK(s.requests() == 1);  // round 5 at 1.0: rounds 1.0 1.4 1.0 1.4 1.0 have spread 0
    const auto* r = store.result("key-lat1.onnx");
    REQUIRE(r != nullptr);
    CHECK(r->status == Status::ok());
    CHECK(r->rounds == 5);
    CHECK(r->latency_ms == 1.0);
}

TEST_CASE("harness: statistic and spread of rounds (hand-computed)") {
    CHECK(statistic_of({3, 1, 2}, Statistic::median) == 2);
    CHECK(statistic_of({4, 1, 2, 3}, Statistic::median) == 2.5);
    CHECK(statistic_of({4, 1, 2, 3}, Statistic::minimum) == 1);
    // deviations from 10 of {9, 10, 12}: 1, 0, 2 -> median 1 -> 10 %
    CHECK(relative_spread({9, 10, 12}, 10) == doctest::Approx(0.1));
    CHECK(relative_spread({5}, 5) == 0);
    HarnessOptions bad;
    bad.max_rounds = 1;
    CHECK_THROWS_AS(bad.check(), config_error);
}

TEST_CASE("harness: the noise check re-measures from fresh runners and compares") {
    Scratch s("noise");
    HarnessOptions ho;
    ho.rounds = 2;
    ho.repeats = 2;
    RunnerPool pool({s.runner("good")});
    Harness h(pool, ho);
    const auto list = nets(s, {"lat2.onnx", "lat3.onnx"});
    const auto starts_before = pool.runner(0).starts();
    const auto rep = h.noise_check(list, {2.0, 3.2});
    CHECK(rep.pairs.size() == 2);
    CHECK(rep.failed == 0);
    CHECK(rep.within_5.agreement == 0.5);  // 3.2 vs 3: 6.7 % apart
    CHECK(rep.within_10.agreement == 1.0);
    CHECK(pool.runner(0).starts() == starts_before + 1);
}

TEST_CASE("store: statuses are read into their kinds and written back as the same strings") {
    for (const char* name : {"ok", "round", "timeout", "crash", "garbage", "partial_line", "bad_latency", "bad_answer",
                             "runner_error", "start_failed"}) {
        CAPTURE(name);
        const auto st = parse_status(name);
        REQUIRE(st);
        CHECK(to_string(*st) == name);
        Record r = rec("k", "x", 1, 1, name);
        CHECK(format_record(r).find(std::string(",") + name + ",") != std::string::npos);
    }
    CHECK(parse_status("round")->round);
    CHECK(parse_status("timeout")->failure == Failure::timeout);
    CHECK(!parse_status("killed"));
    CHECK(!parse_status(""));
    const auto c = parse_store("key,id,latency_ms,spread,rounds,status,time\nk,x,1,0,1,ok,t\nj,y,,,0,melted,t\n", "s.csv");
    REQUIRE(c.records.size() == 1);
    REQUIRE(c.issues.size() == 1);
    CHECK(c.issues[0].line == 3);
    CHECK(c.issues[0].message.find("unknown status 'melted'") != std::string::npos);
}

namespace {
/// x -> Conv c1 -> Relu r1 -> Conv c2 -> Relu r2 -> Add(r2, r1) -> Flatten: under "fuse Conv Relu"
/// the pass has three kernels (Conv+Relu twice, Add) and none for the Flatten.
struct CheckFixture {
    graph::Graph g{"chain"};
    int c1, r1, c2, r2, add, flat;
    CheckFixture() {
        const int x = g.add_input("x", {1, 4, 8, 8});
        const auto conv = [&](int in, const char* name, const char* w) {
            return g.add_op("Conv", name, {in, g.add_weight(w, {4, 4, 3, 3})}, {1, 4, 8, 8},
                            {{"kernel_shape", std::vector<std::int64_t>{3, 3}},
                             {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}});
        };
        c1 = conv(x, "c1", "w1");
        r1 = g.add_op("Relu", "r1", {c1}, {1, 4, 8, 8});
        c2 = conv(r1, "c2", "w2");
        r2 = g.add_op("Relu", "r2", {c2}, {1, 4, 8, 8});
        add = g.add_op("Add", "add", {r2, r1}, {1, 4, 8, 8});
        flat = g.add_op("Flatten", "flat", {add}, {1, 256});
        g.mark_output(flat);
    }
    std::string name(int t) const { return g.tensor(t).name; }
    device::KernelGraph kernels() const {
        return device::kernel_graph(
            g, device::FusionRules::parse("dnncost-fusion-rules 1\ndevice t\nfuse Conv Relu operands=none\n"));
    }
};
}  // namespace

TEST_CASE("check_kernels: matched, fused by the runtime, run separately, inserted, free in the pass") {
    CheckFixture f;
    const auto kg = f.kernels();
    SUBCASE("the runtime's kernels are the pass's") {
        const std::vector<RuntimeNode> nodes = {{"k1", "FusedConv", "com.microsoft", {"x"}, {f.name(f.r1)}},
                                                // a blocked-layout node: named after the value it replaces
                                                {f.name(f.r2) + "_nchwc", "Conv", "com.microsoft.nchwc",
                                                 {f.name(f.r1)}, {"reorder_token_1"}},
                                                {"k3", "Add", "", {"reorder_token_1", f.name(f.r1)}, {f.name(f.add)}}};
        const std::vector<RuntimeKernel> ks = {
            {"k1", "FusedConv", 1.0}, {f.name(f.r2) + "_nchwc", "Conv", 1.0}, {"k3", "Add", 0.5}};
        const auto c = check_kernels(f.g, kg, ks, nodes);
        CHECK(c.pass_kernels == 3);
        CHECK(c.runtime_kernels == 3);
        CHECK(c.matched == 3);
        CHECK(c.agreement() == 1.0);
        CHECK(c.matched_ms == 2.5);
        CHECK(c.missing.empty());
        CHECK(c.extra.empty());
        CHECK(c.pairs.at("Conv+Relu -> FusedConv") == 1);
        CHECK(c.pairs.at("Conv+Relu -> Conv") == 1);
    }
    SUBCASE("disagreements, each with its reason") {
        // c1 and r1 run apart; c2+r2 is fused with the Add; a cast is inserted; the Flatten runs
        const std::vector<RuntimeNode> nodes = {
            {"conv1", "Conv", "", {"x"}, {f.name(f.c1)}},
            {"relu1", "Relu", "", {f.name(f.c1)}, {f.name(f.r1) + "_nchwc"}},
            {"k2", "FusedConv", "com.microsoft", {f.name(f.r1)}, {f.name(f.add)}},
            {"cast", "Cast", "", {f.name(f.add)}, {"cast_out"}},
            {"flat", "Flatten", "", {"cast_out"}, {f.name(f.flat)}}};
        const std::vector<RuntimeKernel> ks = {{"conv1", "Conv", 1.0}, {"relu1", "Relu", 0.25},
                                               {"k2", "FusedConv", 2.0}, {"cast", "Cast", 0.125},
                                               {"flat", "", 0.0}};
        const auto c = check_kernels(f.g, kg, ks, nodes);
        CHECK(c.runtime_kernels == 5);
        CHECK(c.matched == 2);  // relu1 (through the _nchwc name) and k2 (the Add's output)
        CHECK(c.agreement() == doctest::Approx(2.0 / 6.0));
        CHECK(c.matched_ms == 2.25);
        CHECK(c.runtime_ms == 3.375);
        REQUIRE(c.missing.size() == 1);
        CHECK(c.missing[0].kernel == "Conv+Relu");
        CHECK(c.missing[0].name == "c2");
        CHECK(c.missing[0].why == "fused by the runtime into FusedConv (k2)");
        REQUIRE(c.extra.size() == 3);
        CHECK(c.extra[0].name == "conv1");
        CHECK(c.extra[0].why.find("runs separately what the pass fuses into Conv+Relu (c1)") == 0);
        CHECK(c.extra[1].why.find("inserted by the runtime") == 0);
        CHECK(c.extra[2].kernel == "Flatten");  // the operator from the optimised graph
        CHECK(c.extra[2].why.find("a kernel for Flatten, which the pass treats as free") == 0);
    }
    SUBCASE("without the optimised graph, runtime kernels named after the network's nodes") {
        const std::vector<RuntimeKernel> ks = {{"r1", "Relu", 1.0}, {"c2", "Conv", 1.0}, {"nowhere", "Foo", 1.0}};
        const auto c = check_kernels(f.g, kg, ks, {});
        // c2 writes a value inside Conv+Relu (c2, r2), whose output no runtime kernel wrote: that kernel
        CHECK(c.matched == 2);
        CHECK(c.pairs.at("Conv+Relu -> Conv") == 1);
        REQUIRE(c.extra.size() == 1);
        CHECK(c.extra[0].why == "not in the optimised graph");
        REQUIRE(c.missing.size() == 1);
        CHECK(c.missing[0].kernel == "Add");
    }
}

namespace {
/// x [1,4,8] -> MatMul -> Add bias -> HardSwish: a linear layer as a transformer has it, which
/// ONNX Runtime runs as Reshape, Gemm, Reshape, and an activation it expands into two kernels.
struct LinearFixture {
    graph::Graph g{"linear"};
    int x = g.add_input("x", {1, 4, 8});
    int m = g.add_op("MatMul", "mm", {x, g.add_weight("w", {8, 16})}, {1, 4, 16});
    int a = g.add_op("Add", "add", {m, g.add_weight("b", {16})}, {1, 4, 16});
    int r = g.add_op("HardSwish", "hs", {a}, {1, 4, 16});
    LinearFixture() { g.mark_output(r); }
    /// The optimised graph's nodes of MatMul + Add run as Reshape, Gemm, Reshape, under the
    /// runtime's own value names; with `shape_operands`, each Reshape also reads a shape.
    std::vector<RuntimeNode> gemm_nodes(bool shape_operands) const {
        const auto with = [&](std::vector<std::string> in, const char* shape) {
            if (shape_operands) in.push_back(shape);
            return in;
        };
        return {{"gemm_input_reshape", "Reshape", "", with({"x"}, "shape0"), {"rs_in"}},
                {"mm/MatMulAddFusion", "Gemm", "", {"rs_in", "w", "b"}, {"g_out"}},
                {"gemm_output_reshape", "Reshape", "", with({"g_out"}, "shape1"), {g.tensor(a).name}}};
    }
    /// The runtime's kernels: those three, then HardSwish expanded into HardSigmoid and Mul.
    const std::vector<RuntimeKernel> kernels = {{"gemm_input_reshape", "Reshape", 0.25},
                                                {"mm/MatMulAddFusion", "Gemm", 1.0},
                                                {"gemm_output_reshape", "Reshape", 0.25},
                                                {"HardSigmoid_7", "HardSigmoid", 0.5},
                                                {"Mul_8", "Mul", 0.5}};
};
}  // namespace

TEST_CASE("check_kernels: a rewrite's kernels are matched by what they read, an expanded function by its place") {
    // the pass runs MatMul+Add as Reshape, Gemm, Reshape
    LinearFixture f;
    const auto& g = f.g;
    const auto kg = device::kernel_graph(
        g, device::FusionRules::parse("dnncost-fusion-rules 1\nfuse MatMul Add operands=constant\n"
                                      "rewrite MatMul+Add Gemm reshape-rank=3\nrewrite HardSwish HardSigmoid,Mul\n"));
    REQUIRE(kg.kernels.size() == 5);  // Reshape Gemm Reshape HardSigmoid Mul
    // its expanded HardSwish is not in the optimised graph
    const auto c = check_kernels(g, kg, f.kernels, f.gemm_nodes(false));
    CHECK(c.pass_kernels == 5);
    CHECK(c.pass_reorders == 0);
    CHECK(c.runtime_kernels == 5);
    CHECK(c.matched == 5);
    CHECK(c.agreement() == 1.0);
    CHECK(c.pairs.at("Reshape -> Reshape") == 2);
    CHECK(c.pairs.at("Gemm -> Gemm") == 1);
    CHECK(c.pairs.at("HardSigmoid -> HardSigmoid") == 1);
    CHECK(c.pairs.at("Mul -> Mul") == 1);
    CHECK(c.missing.empty());
    CHECK(c.extra.empty());
}

TEST_CASE("check_kernels: the rule changes a runtime's rewrites and merged repeats point at") {
    SUBCASE("MatMul + Add run as Reshape, Gemm, Reshape; HardSwish expanded after the optimised graph") {
        LinearFixture f;
        const auto& g = f.g;
        const int a = f.a, r = f.r;
        // the pass without the rewrites: MatMul+Add, HardSwish
        const auto kg = device::kernel_graph(g, device::FusionRules::parse("dnncost-fusion-rules 1\n"
                                                                           "fuse MatMul Add operands=constant\n"));
        REQUIRE(kg.kernels.size() == 2);
        const auto name = [&](int t) { return g.tensor(t).name; };
        auto nodes = f.gemm_nodes(true);
        nodes.push_back({"", "HardSwish", "", {name(a)}, {name(r)}});  // ran as two kernels of no node
        const auto c = check_kernels(g, kg, f.kernels, nodes);
        CHECK(c.suggestions.size() == 2);
        CHECK(c.suggestions.at("rewrite MatMul+Add Gemm reshape-rank=3") == 1);
        CHECK(c.suggestions.at("rewrite HardSwish HardSigmoid,Mul") == 1);
        SUBCASE("a 2-D input: no reshapes; the runtime's own fused kernel is no rewrite") {
            const std::vector<RuntimeNode> flat = {{"gemm", "Gemm", "", {"x", "w", "b"}, {name(a)}},
                                                   {"hs", "FusedHardSwish", "com.example", {name(a)}, {name(r)}}};
            const auto c2 = check_kernels(g, kg, {{"gemm", "Gemm", 1.0}, {"hs", "FusedHardSwish", 0.5}}, flat);
            CHECK(c2.suggestions.size() == 1);
            CHECK(c2.suggestions.at("rewrite MatMul+Add Gemm") == 1);
        }
    }
    SUBCASE("a pooling that pads is no rewrite; a node repeating another is computed once") {
        graph::Graph g("repeat");
        const int x = g.add_input("x", {1, 4, 8, 8});
        const int p = g.add_op("Pad", "pad", {x}, {1, 4, 10, 10});  // the runtime pads in the pooling
        const int pool =
            g.add_op("AveragePool", "pool", {p}, {1, 4, 8, 8}, {{"kernel_shape", std::vector<std::int64_t>{3, 3}}});
        const int r1 = g.add_op("Relu", "r1", {pool}, {1, 4, 8, 8});
        const int r2 = g.add_op("Relu", "r2", {pool}, {1, 4, 8, 8});
        const auto conv = [&](int in, const char* name, const char* w) {
            return g.add_op("Conv", name, {in, g.add_weight(w, {4, 4, 1, 1})}, {1, 4, 8, 8},
                            {{"kernel_shape", std::vector<std::int64_t>{1, 1}}});
        };
        const int c1 = conv(r1, "c1", "w1");
        const int c2 = conv(r2, "c2", "w2");  // other weights: no repeat
        const int sum = g.add_op("Add", "sum", {c1, c2}, {1, 4, 8, 8});
        g.mark_output(sum);
        const auto kg = device::kernel_graph(g, device::FusionRules::parse("dnncost-fusion-rules 1\n"
                                                                           "fuse Pad AveragePool operands=none\n"));
        REQUIRE(kg.kernels.size() == 6);
        const auto n = [&](int t) { return g.tensor(t).name; };
        const std::vector<RuntimeNode> nodes = {{"pool", "AveragePool", "", {"x"}, {n(pool)}},
                                                {"r1", "Relu", "", {n(pool)}, {n(r1)}},
                                                {"c1", "Conv", "", {n(r1), "w1"}, {n(c1)}},
                                                {"c2", "Conv", "", {n(r1), "w2"}, {n(c2)}},
                                                {"sum", "Add", "", {n(c1), n(c2)}, {n(sum)}}};
        const std::vector<RuntimeKernel> ks = {{"pool", "AveragePool", 1.0},
                                               {"r1", "Relu", 0.5},
                                               {"c1", "Conv", 1.0},
                                               {"c2", "Conv", 1.0},
                                               {"sum", "Add", 0.5}};
        const auto c = check_kernels(g, kg, ks, nodes);
        CHECK(c.matched == 5);
        REQUIRE(c.missing.size() == 1);
        CHECK(c.missing[0].name == "r2");
        CHECK(c.suggestions.size() == 1);
        CHECK(c.suggestions.at("merge-duplicates") == 1);
        CHECK(c.confirmed.at("Pad AveragePool") == 1);
        // without the rule: the pooling took the Pad in
        const auto apart = device::kernel_graph(g, device::FusionRules::parse("dnncost-fusion-rules 1\n"));
        const auto unfused = check_kernels(g, apart, ks, nodes);
        CHECK(unfused.suggestions.size() == 2);
        CHECK(unfused.suggestions.at("fuse Pad AveragePool operands=none") == 1);
        CHECK(unfused.suggestions.at("merge-duplicates") == 1);
    }
}

TEST_CASE("check_kernels: a Transpose moved past a Split, and the fusion rules the pass had to undo") {
    // attention's heads: x -> Transpose t -> Split s -> q, k, v; k -> Transpose kt;
    // MatMul(q, kt) -> Softmax -> MatMul(., v)
    graph::Graph g("heads");
    const int x = g.add_input("x", {3, 2, 4});
    const int t = g.add_op("Transpose", "t", {x}, {3, 4, 2}, {{"perm", std::vector<std::int64_t>{0, 2, 1}}});
    const int q = g.add_tensor("q", {1, 4, 2}), k = g.add_tensor("k", {1, 4, 2}), v = g.add_tensor("v", {1, 4, 2});
    g.add_node("Split", "s", {t}, {q, k, v}, {{"axis", std::int64_t{0}}});
    const int kt = g.add_op("Transpose", "kt", {k}, {1, 2, 4}, {{"perm", std::vector<std::int64_t>{0, 2, 1}}});
    const int sc = g.add_op("MatMul", "scores", {q, kt}, {1, 4, 4});
    const int sm = g.add_op("Softmax", "softmax", {sc}, {1, 4, 4});
    const int out = g.add_op("MatMul", "context", {sm, v}, {1, 4, 2});
    g.mark_output(out);
    // the runtime: one Split before the transposes; the two on k merged into one
    const auto n = [&](int tensor) { return g.tensor(tensor).name; };
    const std::vector<RuntimeNode> nodes = {
        {"s", "Split", "", {"x"}, {"s0", "s1", "s2"}},     {"Transpose_token_1", "Transpose", "", {"s0"}, {n(q)}},
        {"Transpose", "Transpose", "", {"s2"}, {n(v)}},    {"kt", "Transpose", "", {"s1"}, {n(kt)}},
        {"scores", "MatMul", "", {n(q), n(kt)}, {n(sc)}},  {"softmax", "Softmax", "", {n(sc)}, {n(sm)}},
        {"context", "MatMul", "", {n(sm), n(v)}, {n(out)}}};
    std::vector<RuntimeKernel> ks;
    for (const auto& n : nodes) ks.push_back({n.name, n.op, 1.0});
    SUBCASE("rules without the fusion: it and the rewrite are suggested") {
        const auto kg = device::kernel_graph(g, device::FusionRules::parse("dnncost-fusion-rules 1\n"));
        const auto c = check_kernels(g, kg, ks, nodes);
        REQUIRE(c.missing.size() == 1);
        CHECK(c.missing[0].name == "t");
        CHECK(c.suggestions.size() == 2);
        CHECK(c.suggestions.at("fuse Transpose Split operands=none") == 1);
        CHECK(c.suggestions.at("rewrite Transpose+Split Split,Transpose,Transpose") == 1);
    }
    SUBCASE("rules that fuse the Split with its consumers: undone by the pass, run apart by the runtime") {
        const auto rules = device::FusionRules::parse(
            "dnncost-fusion-rules 1\nfuse Split MatMul operands=activation\nfuse Transpose Split operands=none\n");
        const auto kg = device::kernel_graph(g, rules);
        // the Split with both MatMuls would be a cycle through the Softmax: undone
        for (const auto& kernel : kg.kernels) CHECK(kernel.nodes.size() == 1);
        const auto c = check_kernels(g, kg, ks, nodes, &rules);
        CHECK(c.suggestions.at("drop fuse Split MatMul") == 2);
        // without the rules, nothing is said about them
        CHECK(check_kernels(g, kg, ks, nodes).suggestions.count("drop fuse Split MatMul") == 0);
    }
}
