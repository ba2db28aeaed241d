// Binary container and CSV reader: round trips and every failure mode.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dnncost/io/csv.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/serialize.hpp>

#include "messages.hpp"

using namespace dnncost;
using dnncost::test::contains;
using dnncost::test::message_of;

namespace {
std::string sample_payload() {
    io::BinaryWriter w;
    w.put_u32(0xdeadbeef);
    w.put_i64(-42);
    w.put_f64(-0.0);
    w.put_f32(3.5f);
    w.put_bool(true);
    w.put_string("hello");
    const std::vector<double> d{1.0, std::numeric_limits<double>::infinity(), -2.5e-300};
    w.put_f64_vector(d);
    const std::vector<float> f{0.25f, -1.0f};
    w.put_f32_vector(f);
    const std::vector<std::string> s{"a", "", "bc"};
    w.put_string_vector(s);
    return w.bytes();
}
}  // namespace

TEST_CASE("serialize: scalars are little-endian whatever the host") {
    io::BinaryWriter w;
    w.put_u32(0x01020304u);
    const std::string b = w.bytes();
    REQUIRE(b.size() == 4);
    CHECK(b[0] == '\x04');
    CHECK(b[3] == '\x01');
}

TEST_CASE("serialize: CRC-32 matches the standard check value") {
    CHECK(io::crc32("123456789") == 0xCBF43926u);
    CHECK(io::crc32("") == 0u);
}

TEST_CASE("serialize: writer/reader round trip") {
    const auto payload = sample_payload();
    io::BinaryReader r(payload, "p.bin");
    CHECK(r.get_u32() == 0xdeadbeefu);
    CHECK(r.get_i64() == -42);
    const double z = r.get_f64();
    CHECK(z == 0.0);
    CHECK(std::signbit(z));
    CHECK(r.get_f32() == 3.5f);
    CHECK(r.get_bool());
    CHECK(r.get_string() == "hello");
    const auto d = r.get_f64_vector();
    REQUIRE(d.size() == 3);
    CHECK(std::isinf(d[1]));
    CHECK(d[2] == -2.5e-300);
    CHECK(r.get_f32_vector() == std::vector<float>{0.25f, -1.0f});
    CHECK(r.get_string_vector() == std::vector<std::string>{"a", "", "bc"});
    CHECK(r.at_end());
    r.expect_end();
}

TEST_CASE("serialize: reader names the truncated field and the source") {
    const auto payload = sample_payload();
    io::BinaryReader r(std::string_view(payload).substr(0, 6), "model.dnnc");
    r.get_u32("magic word");
    const auto msg = message_of<parse_error>([&] { r.get_i64("layer count"); });
    CHECK(contains(msg, "model.dnnc"));
    CHECK(contains(msg, "layer count"));
    CHECK(contains(msg, "truncated"));
}

TEST_CASE("serialize: a huge declared length fails before allocating") {
    io::BinaryWriter w;
    w.put_u64(std::numeric_limits<std::uint64_t>::max() / 2);
    io::BinaryReader r(w.bytes(), "x.dnnc");
    const auto msg = message_of<parse_error>([&] { r.get_f64_vector("weights"); });
    CHECK(contains(msg, "weights"));
    CHECK(contains(msg, "x.dnnc"));
}

TEST_CASE("serialize: trailing bytes are reported by expect_end") {
    io::BinaryWriter w;
    w.put_u32(1);
    w.put_u8(7);
    io::BinaryReader r(w.bytes(), "t.dnnc");
    r.get_u32();
    CHECK(contains(message_of<parse_error>([&] { r.expect_end("header"); }), "trailing"));
}

TEST_CASE("container: round trip keeps kind, hash and payload") {
    const auto payload = sample_payload();
    const auto bytes = io::write_container("additive", 0x1234567890abcdefULL, payload);
    const auto c = io::read_container(bytes, "additive", "m.dnnc");
    CHECK(c.kind == "additive");
    CHECK(c.config_hash == 0x1234567890abcdefULL);
    CHECK(c.payload == payload);
    CHECK(c.version == io::container_format_version);
    CHECK(io::looks_like_container(bytes));
}

TEST_CASE("container: every failure mode gives a clear message naming the file") {
    const auto bytes = io::write_container("additive", 7, sample_payload());

    SUBCASE("wrong magic") {
        std::string bad = bytes;
        bad[1] = 'X';
        const auto msg = message_of<parse_error>([&] { io::read_container(bad, std::nullopt, "a.dnnc"); });
        CHECK(contains(msg, "a.dnnc"));
        CHECK(contains(msg, "magic"));
        CHECK(contains(message_of<parse_error>([&] { io::read_container("arch,latency\n", std::nullopt, "b.csv"); }),
                       "not a dnncost model"));
    }
    SUBCASE("newer version") {
        std::string bad = bytes;
        bad[8] = static_cast<char>(io::container_format_version + 1);
        const auto msg = message_of<parse_error>([&] { io::read_container(bad, std::nullopt, "v.dnnc"); });
        CHECK(contains(msg, "v.dnnc"));
        CHECK(contains(msg, "newer"));
    }
    SUBCASE("checksum mismatch") {
        std::string bad = bytes;
        bad[bad.size() - 10] ^= 0x20;  // a payload byte
        const auto msg = message_of<parse_error>([&] { io::read_container(bad, std::nullopt, "c.dnnc"); });
        CHECK(contains(msg, "c.dnnc"));
        CHECK(contains(msg, "checksum"));
    }
    SUBCASE("truncation, at every length") {
        for (std::size_t len = 0; len < bytes.size(); ++len) {
            const auto msg =
                message_of<parse_error>([&] { io::read_container(std::string_view(bytes).substr(0, len), std::nullopt, "t.dnnc"); });
            INFO("length " << len << ": " << msg);
            CHECK(contains(msg, "t.dnnc"));
            // Before the magic is complete the file cannot be told from a foreign one.
            if (len >= 8) CHECK(contains(msg, "truncated"));
        }
    }
    SUBCASE("a flipped bit in a length field") {
        // the payload length (u64 after magic, version, kind length, kind and config hash):
        // the walk runs past the end, and the message says the file is corrupt or truncated
        std::string bad = bytes;
        bad[8 + 4 + 4 + 8 + 8 + 5] ^= 0x01;
        const auto msg = message_of<parse_error>([&] { io::read_container(bad, std::nullopt, "f.dnnc"); });
        CHECK(contains(msg, "f.dnnc: corrupt or truncated file (the checksum does not match): truncated: 'payload'"));
        // an intact file cut short says the same, since the checksum is gone with its end
        CHECK(contains(message_of<parse_error>([&] {
                           io::read_container(std::string_view(bytes).substr(0, bytes.size() - 1), std::nullopt,
                                              "f.dnnc");
                       }),
                       "corrupt or truncated"));
    }
    SUBCASE("trailing garbage") {
        const auto msg = message_of<parse_error>([&] { io::read_container(bytes + "xx", std::nullopt, "g.dnnc"); });
        CHECK(contains(msg, "unexpected bytes"));
    }
    SUBCASE("unexpected kind") {
        const auto msg = message_of<parse_error>([&] { io::read_container(bytes, "hifisage", "k.dnnc"); });
        CHECK(contains(msg, "'additive'"));
        CHECK(contains(msg, "'hifisage'"));
    }
}

namespace {
// A container assembled field by field, as format `version` lays it out; from version 2 on, its
// metadata section holds `count` and then `entries` as given (no validation).
std::string assemble(std::uint32_t version, std::string_view kind, std::uint64_t hash, std::string_view payload,
                     std::uint32_t count = 0, const io::Metadata& entries = {}) {
    io::BinaryWriter w;
    for (char c : io::container_magic) w.put_u8(static_cast<std::uint8_t>(c));
    w.put_u32(version);
    w.put_u32(static_cast<std::uint32_t>(kind.size()));
    std::string bytes = w.bytes();
    bytes.append(kind);
    io::BinaryWriter rest;
    rest.put_u64(hash);
    rest.put_string(payload);
    if (version >= 2) {
        rest.put_u32(count);
        for (const auto& [k, v] : entries) {
            rest.put_string(k);
            rest.put_string(v);
        }
    }
    bytes += rest.bytes();
    io::BinaryWriter crc;
    crc.put_u32(io::crc32(bytes));
    return bytes + crc.bytes();
}
std::string version1_container(std::string_view kind, std::uint64_t hash, std::string_view payload) {
    return assemble(1, kind, hash, payload);
}
std::string raw_metadata_container(const io::Metadata& entries, std::uint32_t count) {
    return assemble(2, "k", 0, "payload", count, entries);
}
}  // namespace

TEST_CASE("container metadata: round trip in order, lookup, replacement, version-1 files load without any") {
    const auto payload = sample_payload();
    const io::Metadata meta{{"target", "pixel3"}, {"space", "nb201"}, {"note", ""}};
    const auto bytes = io::write_container("additive", 99, payload, meta);
    const auto c = io::read_container(bytes, "additive", "m.dnnc");
    CHECK(c.version == 2);
    CHECK(bytes == assemble(2, "additive", 99, payload, 3, meta));  // the documented layout, byte for byte
    CHECK(c.payload == payload);
    CHECK(c.metadata == meta);
    CHECK(c.meta("target") == std::optional<std::string>("pixel3"));
    CHECK(c.meta("note") == std::optional<std::string>(""));
    CHECK_FALSE(c.meta("seed").has_value());

    const auto replaced = io::with_metadata(bytes, {{"target", "gold_6240"}}, "m.dnnc");
    const auto r = io::read_container(replaced, "additive", "m.dnnc");
    CHECK(r.payload == payload);
    CHECK(r.config_hash == 99);
    CHECK(r.meta("target") == std::optional<std::string>("gold_6240"));
    CHECK_FALSE(r.meta("space").has_value());

    const auto old = io::read_container(version1_container("additive", 5, payload), "additive", "old.dnnc");
    CHECK(old.version == 1);
    CHECK(old.payload == payload);
    CHECK(old.metadata.empty());
    // and a version-1 file gains metadata without touching its payload
    CHECK(
        io::read_container(io::with_metadata(version1_container("additive", 5, payload), meta), "additive").metadata ==
        meta);
}

TEST_CASE("container metadata: bad keys are refused when written and reported when read") {
    CHECK_THROWS_AS(io::write_container("k", 0, "p", {{"", "x"}}), config_error);
    CHECK_THROWS_AS(io::write_container("k", 0, "p", {{"a", "1"}, {"a", "2"}}), config_error);
    CHECK(contains(message_of<parse_error>([] {
                       io::read_container(raw_metadata_container({{"a", "1"}, {"a", "2"}}, 2), std::nullopt, "d.dnnc");
                   }),
                   "d.dnnc: corrupt metadata: key 'a' given twice"));
    CHECK(contains(message_of<parse_error>([] {
                       io::read_container(raw_metadata_container({{"", "1"}}, 1), std::nullopt, "e.dnnc");
                   }),
                   "e.dnnc: corrupt metadata: empty key"));
    const auto huge =
        message_of<parse_error>([] { io::read_container(raw_metadata_container({}, 0xffffffffu), std::nullopt, "h.dnnc"); });
    CHECK(contains(huge, "h.dnnc: corrupt metadata"));
    // a count larger than what follows is a truncation, not a crash
    CHECK(contains(message_of<parse_error>([] {
                       io::read_container(raw_metadata_container({{"a", "1"}}, 3), std::nullopt, "t.dnnc");
                   }),
                   "truncated"));
    // truncation anywhere in a metadata section
    const auto bytes = io::write_container("k", 0, "p", {{"target", "pixel3"}});
    for (std::size_t len = 8; len < bytes.size(); ++len)
        CHECK(contains(
            message_of<parse_error>([&] { io::read_container(std::string_view(bytes).substr(0, len), std::nullopt, "t.dnnc"); }),
            "truncated"));
}

TEST_CASE("csv: RFC 4180 quoting, CRLF and a missing final newline") {
    const auto t = io::parse_csv("name,value\r\n\"a,b\",1\r\n\"say \"\"hi\"\"\",2\r\n\"two\nlines\",3", "q.csv");
    REQUIRE(t.size() == 3);
    CHECK(t.rows[0][0] == "a,b");
    CHECK(t.rows[1][0] == "say \"hi\"");
    CHECK(t.rows[2][0] == "two\nlines");
    CHECK(t.rows[2][1] == "3");
    CHECK(t.lines == std::vector<std::size_t>{2, 3, 4});
    CHECK(t.column("value") == 1);
    CHECK(contains(message_of<parse_error>([&] { (void)t.column("latency"); }), "no column 'latency'"));
}

TEST_CASE("csv: blank lines and a trailing newline are tolerated") {
    const auto t = io::parse_csv("a,b\n1,2\n\n3,4\n\n", "blank.csv");
    CHECK(t.size() == 2);
    CHECK(t.lines == std::vector<std::size_t>{2, 4});
}

TEST_CASE("csv: malformed input names file and line") {
    CHECK(contains(message_of<parse_error>([] { io::parse_csv("a,b\n1,2\n3\n", "f.csv"); }), "f.csv:3"));
    CHECK(contains(message_of<parse_error>([] { io::parse_csv("a,b\n1,2\n\"3,4\n", "f.csv"); }), "f.csv:3: unterminated"));
    CHECK(contains(message_of<parse_error>([] { io::parse_csv("a,b\n1,x\"y\n", "f.csv"); }), "f.csv:2: quote inside"));
    CHECK(contains(message_of<parse_error>([] { io::parse_csv("a,b\n\"1\"x,2\n", "f.csv"); }), "after closing quote"));
    CHECK(contains(message_of<parse_error>([] { io::parse_csv("a,a\n1,2\n", "f.csv"); }), "duplicate column"));
    CHECK(contains(message_of<parse_error>([] { io::parse_csv("", "e.csv"); }), "e.csv: empty"));
}

TEST_CASE("csv: skip_bad_rows records the row instead of throwing") {
    const auto t = io::parse_csv("a,b\n1,2\n3\n4,5\n", "s.csv", {.skip_bad_rows = true});
    CHECK(t.size() == 2);
    REQUIRE(t.issues.size() == 1);
    CHECK(t.issues[0].line == 3);
}

TEST_CASE("csv: numbers via from_chars with NaN / inf / empty detection") {
    CHECK(io::parse_number("1.5").value == 1.5);
    CHECK(io::parse_number(" +2e3 ").value == 2000.0);
    CHECK(io::parse_number("").status == io::NumberStatus::empty);
    CHECK(io::parse_number("  ").status == io::NumberStatus::empty);
    CHECK(io::parse_number("nan").status == io::NumberStatus::nan);
    CHECK(io::parse_number("NaN").status == io::NumberStatus::nan);
    CHECK(io::parse_number("-inf").status == io::NumberStatus::infinite);
    CHECK(io::parse_number("1.5ms").status == io::NumberStatus::malformed);
    CHECK(io::parse_number("1,5").status == io::NumberStatus::malformed);
    CHECK(io::parse_number("1e999").status == io::NumberStatus::malformed);
    const auto t = io::parse_csv("arch,lat\nx,abc\n", "n.csv");
    const auto msg = message_of<parse_error>([&] { io::require_number(t, 0, 1); });
    CHECK(contains(msg, "n.csv:2"));
    CHECK(contains(msg, "column 'lat'"));
}

TEST_CASE("serialize: fields that must be finite reject NaN and infinity, naming the field") {
    io::BinaryWriter w;
    w.put_f64(std::numeric_limits<double>::quiet_NaN());
    const std::vector<float> f{1.0f, std::numeric_limits<float>::infinity()};
    w.put_f32_vector(f);
    w.put_f64(2.0);
    {
        io::BinaryReader r(w.bytes(), "m.dnnc");
        const auto msg = message_of<parse_error>([&] { r.get_finite_f64("label scale"); });
        CHECK(contains(msg, "m.dnnc"));
        CHECK(contains(msg, "'label scale'"));
        CHECK(contains(msg, "not a finite number"));
    }
    {
        io::BinaryReader r(w.bytes(), "m.dnnc");
        CHECK(std::isnan(r.get_f64("any")));  // the plain readers keep every value
        const auto msg = message_of<parse_error>([&] { r.get_finite_f32_vector("parameter values"); });
        CHECK(contains(msg, "element 1"));
        CHECK(r.get_finite_f64("next") == 2.0);
    }
}

TEST_CASE("files: special files are refused or written through, symbolic links are followed") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("dnncost_files_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const auto io_message = [](auto&& fn) -> std::string {
        try {
            fn();
        } catch (const io_error& e) {
            return e.what();
        }
        return "<no io_error>";
    };
    // reading: only regular files, up to a limit
    CHECK(contains(io_message([] { io::read_file("/dev/zero"); }), "not a regular file"));
    CHECK(contains(io_message([&] { io::read_file(dir); }), "is a directory"));
    REQUIRE(::mkfifo((dir / "pipe").c_str(), 0600) == 0);
    CHECK(contains(io_message([&] { io::read_file(dir / "pipe"); }), "not a regular file"));  // would block forever
    io::write_file_atomic(dir / "ten", "0123456789");
    CHECK(io::read_file(dir / "ten") == "0123456789");
    CHECK(contains(io_message([&] { io::read_file(dir / "ten", 9); }), "more than the limit of 9"));
    // writing: a FIFO is refused, a device is written through, a directory is an error
    CHECK(contains(io_message([&] { io::write_file_atomic(dir / "pipe", "x"); }), "FIFO"));
    CHECK(fs::is_fifo(dir / "pipe"));
    io::write_file_atomic("/dev/null", "discarded");
    CHECK(fs::is_character_file("/dev/null"));
    CHECK(contains(io_message([&] { io::write_file_atomic(dir, "x"); }), "is a directory"));
    CHECK(contains(io_message([] { io::write_file_atomic("", "x"); }), "empty output path"));
    // a symbolic link stays a link; its target gets the new contents
    fs::create_symlink(dir / "ten", dir / "link");
    io::write_file_atomic(dir / "link", "new");
    CHECK(fs::is_symlink(dir / "link"));
    CHECK(io::read_file(dir / "ten") == "new");
    // ... also when its target does not exist yet (relative target, two links in a chain)
    fs::create_symlink("later.dnnc", dir / "dangling");
    fs::create_symlink("dangling", dir / "chain");
    io::write_file_atomic(dir / "chain", "made");
    CHECK(fs::is_symlink(dir / "chain"));
    CHECK(fs::is_symlink(dir / "dangling"));
    CHECK(io::read_file(dir / "later.dnnc") == "made");
    fs::create_symlink("loop2", dir / "loop1");
    fs::create_symlink("loop1", dir / "loop2");
    CHECK(contains(io_message([&] { io::write_file_atomic(dir / "loop1", "x"); }), "too many levels"));
    // early checks before a long computation
    CHECK_NOTHROW(io::check_writable(dir / "model.dnnc"));
    CHECK(!fs::exists(dir / "model.dnnc"));
    CHECK(contains(io_message([&] { io::check_writable(dir / "missing" / "model.dnnc"); }), "does not exist"));
    CHECK(contains(io_message([&] { io::check_writable(dir); }), "is a directory"));
    std::size_t leftovers = 0;  // no temporary or probe file is left behind
    for (const auto& e : fs::directory_iterator(dir)) leftovers += e.path().filename().string().starts_with(".");
    CHECK(leftovers == 0);
    fs::remove_all(dir);
}
