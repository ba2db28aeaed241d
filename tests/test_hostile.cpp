// Hostile inputs at the library level: printable messages, output paths and their checks, the
// signal-time removal of temporary files, and near-linear graph passes on 100,000-node graphs.
#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dnncost/core/error.hpp>
#include <dnncost/cost/memory.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/atomic_write.hpp>
#include <dnncost/io/file.hpp>

using namespace dnncost;
namespace fs = std::filesystem;

namespace {
struct ScratchDir {
    fs::path path;
    ScratchDir() {
        path = fs::temp_directory_path() / ("dnncost-hostile-" + std::to_string(::getpid()));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~ScratchDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    std::vector<std::string> entries() const {
        std::vector<std::string> r;
        for (const auto& e : fs::directory_iterator(path)) r.push_back(e.path().filename().string());
        return r;
    }
};
std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
}  // namespace

TEST_CASE("printable escapes control characters and invalid UTF-8, keeps valid UTF-8") {
    CHECK(printable("plain text") == "plain text");
    CHECK(printable(std::string("a\nb", 3)) == "a\\x0ab");
    CHECK(printable(std::string("cut\0here", 8)) == "cut\\x00here");
    CHECK(printable("\x1b[31m") == "\\x1b[31m");
    CHECK(printable("\x7f") == "\\x7f");
    CHECK(printable("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    CHECK(printable("\xff\xfe") == "\\xff\\xfe");
    CHECK(printable("\xc3") == "\\xc3");                             // truncated sequence
    CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");                    // overlong '/'
    CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");           // UTF-16 surrogate
    CHECK(printable("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
}

TEST_CASE("error messages carry input text on one line") {
    try {
        raise<parse_error>("node '", std::string("evil\ndnncost: error: forged\0tail", 32), "'");
        FAIL("no throw");
    } catch (const parse_error& e) {
        const std::string what = e.what();
        CHECK(what.find('\n') == std::string::npos);
        CHECK(what == "node 'evil\\x0adnncost: error: forged\\x00tail'");
    }
}

TEST_CASE("error messages print each argument as a stream would") {
    enum Plain { zero, one };
    const std::string s = "str";
    const std::string_view v = "view";
    const char* p = "ptr";
    const char* none = nullptr;
    char buffer[8] = "buf";
    const auto message = [](auto&&... args) {
        try {
            raise<config_error>(args...);
        } catch (const config_error& e) {
            return std::string(e.what());
        }
        return std::string("no throw");
    };
    CHECK(message("lit ", s, ' ', v, ' ', p, ' ', buffer, '|', none, '|') == "lit str view ptr buf||");
    CHECK(message(42, ' ', -7L, ' ', 3000000000u, ' ', std::size_t{5}, ' ', static_cast<unsigned char>('x')) ==
          "42 -7 3000000000 5 x");
    CHECK(message(1.5, ' ', 0.1f, ' ', 1e300, ' ', 2.5L, ' ', true, ' ', one) == "1.5 0.1 1e+300 2.5 1 1");
    CHECK(message(fs::path("/a b/c")) == "\"/a b/c\"");
    CHECK(message("0x", std::hex, 255, ' ', 255) == "0xff ff");  // a manipulator holds for the rest
    CHECK(message() == "");
}

TEST_CASE("output paths are checked before the work") {
    ScratchDir dir;
    SUBCASE("a name at the file-system limit is written, one above it is refused early") {
        const auto at_limit = dir.path / std::string(255, 'n');
        io::check_writable(at_limit);
        io::write_file_atomic(at_limit, "data");
        CHECK(slurp(at_limit) == "data");
        CHECK(dir.entries().size() == 1);  // no temporary left
        CHECK_THROWS_WITH_AS(io::check_writable(dir.path / std::string(256, 'n')),
                             doctest::Contains("256 bytes, more than the file system's limit of 255"), io_error);
    }
    SUBCASE("missing directory, directory, empty path") {
        CHECK_THROWS_WITH_AS(io::check_writable(dir.path / "nodir" / "x"), doctest::Contains("does not exist"),
                             io_error);
        CHECK_THROWS_WITH_AS(io::check_writable(dir.path), doctest::Contains("is a directory"), io_error);
        CHECK_THROWS_WITH_AS(io::check_writable(""), doctest::Contains("empty output path"), io_error);
    }
    SUBCASE("two outputs on one file, however spelt") {
        const auto a = dir.path / "out.x";
        const auto b = dir.path / "sub" / ".." / "out.x";
        fs::create_directories(dir.path / "sub");
        CHECK_THROWS_WITH_AS(io::check_distinct_outputs({{"--out", a}, {"--report", b}}),
                             doctest::Contains("--out and --report name the same file"), config_error);
        fs::create_symlink(a, dir.path / "link.x");
        CHECK_THROWS_AS(io::check_distinct_outputs({{"--out", a}, {"--report", dir.path / "link.x"}}), config_error);
        CHECK_NOTHROW(io::check_distinct_outputs({{"--out", a}, {"--report", dir.path / "other.x"}, {"--plot", ""}}));
        CHECK_NOTHROW(io::check_distinct_outputs({{"--out", "/dev/null"}, {"--report", "/dev/null"}}));
        // a directory given for an input is the input's read to name, not a write this check reports
        CHECK_NOTHROW(io::check_distinct_outputs({{"--data", dir.path}, {"--out", a}}));
    }
    SUBCASE("the new file keeps the old one's mode, a new one gets the usual mode") {
        const auto p = dir.path / "mode.x";
        io::write_file_atomic(p, "1");
        const auto fresh = fs::status(p).permissions();
        CHECK((fresh & fs::perms::owner_read) != fs::perms::none);
        CHECK((fresh & fs::perms::owner_write) != fs::perms::none);
        fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
        io::write_file_atomic(p, "2");
        CHECK(fs::status(p).permissions() == (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
        CHECK(slurp(p) == "2");
    }
    SUBCASE("a FIFO without a reader is an error, not a hang") {
        const auto fifo = dir.path / "fifo";
        REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
        CHECK_THROWS_WITH_AS(io::write_file_atomic(fifo, "x"), doctest::Contains("FIFO with no reader"), io_error);
        CHECK(fs::is_fifo(fifo));
    }
}

TEST_CASE("SIGTERM and SIGINT while a temporary exists remove it") {
    ScratchDir dir;
    for (int sig : {SIGTERM, SIGINT}) {
        CAPTURE(sig);
        const auto tmp = dir.path / ".dnncost-test";
        std::ofstream(tmp) << "partial";
        const pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            ::signal(sig, SIG_DFL);  // the test framework's crash handler is not the program's
            io::detail::TempGuard guard(tmp);
            ::raise(sig);
            ::_exit(0);  // not reached: the default action ends the process
        }
        int status = 0;
        REQUIRE(::waitpid(child, &status, 0) == child);
        CHECK(WIFSIGNALED(status));
        CHECK(WTERMSIG(status) == sig);
        CHECK_FALSE(fs::exists(tmp));
    }
}

namespace {
volatile std::sig_atomic_t g_seen = 0;
extern "C" void note_signal(int) { g_seen = 1; }
}  // namespace

TEST_CASE("a handler the program installed keeps the signal, and the temporary") {
    ScratchDir dir;
    const auto tmp = dir.path / ".dnncost-kept";
    std::ofstream(tmp) << "partial";
    struct sigaction mine = {}, before = {};
    mine.sa_handler = note_signal;
    sigemptyset(&mine.sa_mask);
    ::sigaction(SIGINT, &mine, &before);
    g_seen = 0;
    {
        io::detail::TempGuard guard(tmp);
        ::raise(SIGINT);
    }
    CHECK(g_seen == 1);
    CHECK(fs::exists(tmp));
    struct sigaction now = {};
    ::sigaction(SIGINT, nullptr, &now);
    const bool restored = now.sa_handler == &note_signal;  // when the last temporary is gone
    CHECK(restored);
    ::sigaction(SIGINT, &before, nullptr);
}

/// "prefix<i>"; appending avoids GCC 12's false -Wrestrict on `"literal" + std::to_string(i)`
namespace {
std::string indexed(const char* prefix, int i) {
    std::string name(prefix);
    name += std::to_string(i);
    return name;
}
}  // namespace

TEST_CASE("topological order of 100,000-node fan-out, fan-in and chain graphs") {
    constexpr int n = 100000;
    SUBCASE("fan-out: every node reads the one input") {
        graph::Graph g("fanout");
        const int x = g.add_input("x", {1, 4});
        for (int i = 0; i < n; ++i) g.add_op("Relu", indexed("r", i), {x}, {1, 4});
        const auto order = g.topological_order();
        REQUIRE(order.size() == static_cast<std::size_t>(n));
        bool in_order = true;
        for (int i = 0; i < n; ++i) in_order = in_order && order[static_cast<std::size_t>(i)] == i;
        CHECK(in_order);
        CHECK(cost::peak_memory(g).peak_activation_bytes == 32);  // the input and one result at a time
    }
    SUBCASE("fan-out from a node: successors are distinct and in order") {
        graph::Graph g("fanout2");
        const int x = g.add_input("x", {1, 4});
        const int h = g.add_op("Relu", "root", {x}, {1, 4});
        for (int i = 0; i < n; ++i) g.add_op("Add", indexed("a", i), {h, h}, {1, 4});
        const auto s = g.successors(0);
        REQUIRE(s.size() == static_cast<std::size_t>(n));
        bool in_order = true;
        for (int i = 0; i < n; ++i) in_order = in_order && s[static_cast<std::size_t>(i)] == i + 1;
        CHECK(in_order);
        CHECK(g.predecessors(1) == std::vector<int>{0});
        g.validate();
    }
    SUBCASE("chain, nodes added in an order whose smallest-ready rule matters") {
        // two independent chains interleaved: a0 b0 a1 b1 ...; the stable order keeps indices
        graph::Graph g("chains");
        int a = g.add_input("x", {1, 4}), b = a;
        for (int i = 0; i < n / 2; ++i) {
            a = g.add_op("Relu", indexed("a", i), {a}, {1, 4});
            b = g.add_op("Relu", indexed("b", i), {b}, {1, 4});
        }
        const auto order = g.topological_order();
        bool in_order = order.size() == static_cast<std::size_t>(n);
        for (int i = 0; in_order && i < n; ++i) in_order = order[static_cast<std::size_t>(i)] == i;
        CHECK(in_order);
    }
}
