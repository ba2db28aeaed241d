#pragma once
/// @file store.hpp
/// The results store: one CSV file per (device, runner configuration), plus a sidecar JSON file
/// describing the device.
///
/// Columns: key (graph::canonical_hash of the measured graph), id (a network name,
/// spaces/network_name.hpp, or an ONNX path, relative to the file's directory when it lies below
/// it), latency_ms (the network's statistic), spread (relative spread of its round statistics), rounds, status (`ok`,
/// a failure reason, or `round`), time (UTC, ISO 8601), peak_memory_bytes, energy_mj (empty when
/// the runner reports none) and detail (the failure's message). A `round` row is one finished
/// round of a network still being measured (latency_ms is that round's statistic, rounds its
/// number, spread the spread of its timed runs): it makes an interrupted run resumable without
/// losing or repeating any round. The last `ok` or failure row of a key is its result; a later
/// run re-measures keys whose result failed, and `compact()` keeps one row per key.
///
/// Durability: every row is appended with one write() and fsync'd; rewrites (compaction,
/// repairing a torn last line) go to a temporary file that is fsync'd and renamed over the
/// store, then the directory is fsync'd. A process killed at any moment therefore leaves a
/// file whose rows up to the last newline are complete; a trailing partial line is ignored
/// when read and cut off when the store is next opened for writing.
///
/// The sidecar (`results.device.json` beside `results.csv`) holds the device name given by the
/// user, the runner commands, the runner's own device line and the harness settings.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/io/csv.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/measure/json.hpp>
#include <dnncost/measure/runner_protocol.hpp>
#include <dnncost/measure/sidecar.hpp>
#include <dnncost/train/dataset.hpp>

namespace dnncost::measure {

/// What a row of the store is: a finished round of a network still being measured, or a result
/// (ok, or the failure that ended it). Written as the status column: `round`, `ok` or the
/// failure's name (to_string(Failure)).
struct Status {
    Failure failure = Failure::none;
    bool round = false;

    static Status ok() { return {}; }
    static Status in_round() { return {Failure::none, true}; }
    static Status failed(Failure f) { return {f, false}; }
    bool operator==(const Status&) const = default;
};

inline std::string_view to_string(Status s) { return s.round ? std::string_view("round") : to_string(s.failure); }
inline std::ostream& operator<<(std::ostream& os, Status s) { return os << to_string(s); }

/// The status a status column names, or nullopt.
inline std::optional<Status> parse_status(std::string_view text) {
    if (text == "round") return Status::in_round();
    if (const auto f = parse_failure(text)) return Status::failed(*f);
    return std::nullopt;
}

/// One row of the store.
struct Record {
    std::string key;
    std::string id;
    double latency_ms = std::nan("");
    double spread = std::nan("");
    int rounds = 0;
    Status status;
    std::string time;
    std::optional<double> peak_memory_bytes;
    std::optional<double> energy_mj;
    std::string detail;
    std::size_t line = 0;  ///< 1-based line in the file (0: not read from a file)

    bool ok() const { return status == Status::ok(); }
    bool is_round() const { return status.round; }
    /// An ok or failed result (not a round).
    bool is_final() const { return !is_round(); }
};

/// The columns dnncost writes, in order; the first seven are required when reading.
inline const std::vector<std::string>& store_columns() {
    static const std::vector<std::string> c{"key",    "id",   "latency_ms",        "spread",    "rounds",
                                            "status", "time", "peak_memory_bytes", "energy_mj", "detail"};
    return c;
}
inline constexpr std::size_t required_store_columns = 7;

/// Now, as UTC ISO 8601 to the second.
DNNCOST_FUNC std::string utc_now();

namespace detail {
DNNCOST_FUNC std::string csv_field(std::string s);
inline std::string format_number(double v, const char* fmt) {
    if (!std::isfinite(v)) return "";
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, v);
    return buf;
}

/// fsync a directory so that a rename or a new file in it survives a power loss.
inline void sync_directory(const std::filesystem::path& dir) {
    const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
}

DNNCOST_FUNC void write_all(int fd, std::string_view data, const std::filesystem::path& path);

/// Replace `path` by `data` atomically and durably (temporary file, fsync, rename, fsync dir).
DNNCOST_FUNC void write_durable(const std::filesystem::path& path, std::string_view data);
}  // namespace detail

/// One row as CSV text (with its newline), in the column order `header`.
DNNCOST_FUNC std::string format_record(const Record& r, const std::vector<std::string>& header = store_columns());

/// What a store file holds: its header, its rows, and the rows or tail that could not be read.
struct StoreContents {
    std::vector<std::string> header;
    std::vector<Record> records;  ///< in file order
    std::vector<io::CsvIssue> issues;
    std::size_t torn_bytes = 0;      ///< bytes after the last newline (an interrupted append)
    std::size_t complete_bytes = 0;  ///< bytes up to and including the last newline
};

/// Whether CSV text starts with a results-store header (the required columns, in any order).
DNNCOST_FUNC bool is_results_header(std::string_view text);

/// Whether `path` is a readable results store (by its header), e.g. to route `--data` to
/// load_results_dataset.
DNNCOST_FUNC bool is_results_file(const std::filesystem::path& path);

/// Parse store text. Rows with a wrong field count or unreadable numbers are reported in
/// `issues`, not thrown; a partial last line is left out (`torn_bytes`).
/// @throws parse_error when the header lacks a required column or the quoting is broken
DNNCOST_FUNC StoreContents parse_store(std::string_view text, const std::string& source);

/// Read a store file without changing it.
inline StoreContents read_store(const std::filesystem::path& path) {
    return parse_store(io::read_file(path), path.string());
}

/// The result of every key (its last ok or failure row), in order of first appearance.
DNNCOST_FUNC std::vector<Record> final_records(const std::vector<Record>& records);

/// A results store open for appending (see the file comment).
class ResultsStore {
public:
    /// Open or create the store at `path`; a torn last line is cut off (atomically) first.
    /// @throws io_error (unwritable), parse_error (an existing file that is not a results store)
    explicit ResultsStore(std::filesystem::path path);
    ~ResultsStore() {
        if (m_fd >= 0) ::close(m_fd);
    }
    ResultsStore(const ResultsStore&) = delete;
    ResultsStore& operator=(const ResultsStore&) = delete;

    const std::filesystem::path& path() const { return m_path; }
    const std::vector<Record>& records() const { return m_contents.records; }
    /// Rows that could not be read (kept in the file until compaction drops them).
    const std::vector<io::CsvIssue>& issues() const { return m_contents.issues; }
    /// Bytes of an interrupted append cut off when the store was opened.
    std::size_t torn_bytes_repaired() const { return m_torn_repaired; }

    /// The current result of `key` (its last ok or failure row), or nullptr.
    const Record* result(std::string_view key) const;
    /// Rounds of `key` finished after its current result (a measurement in progress).
    std::vector<Record> rounds_in_progress(std::string_view key) const;

    /// Append one row durably (one write, then fsync).
    void append(Record r);

    /// Rewrite the store atomically with one row per key (its result) plus the rounds of
    /// measurements still in progress; unreadable rows are dropped.
    void compact();

private:
    std::filesystem::path parent() const {
        return m_path.has_parent_path() ? m_path.parent_path() : std::filesystem::path(".");
    }
    std::string format_header() const;
    void write_synced(const std::string& text);

    std::filesystem::path m_path;
    StoreContents m_contents;
    std::size_t m_torn_repaired = 0;
    int m_fd = -1;
};

/// A results store as a training data set: one item per key whose result is ok, keyed by its
/// id (an architecture string, `SPACE:ARCH` or bare NB201, or an ONNX path resolved against the
/// store's directory; `loader` needed for paths), with the columns latency_ms, spread, rounds,
/// and peak_memory_bytes / energy_mj where measured. `space_options` are the build options the
/// space networks were measured with.
/// @throws parse_error (not a store, no ok rows), and as train::load_dataset_text
DNNCOST_FUNC train::Dataset load_results_dataset(const std::filesystem::path& path,
                                                 std::vector<std::string> columns = {}, bool strict = false,
                                                 train::GraphLoader loader = {},
                                                 spaces::SpaceOptions space_options = {});

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/store_impl.hpp>
#endif
