#pragma once
/// @file csv.hpp
/// A small, strict CSV reader (RFC 4180) whose errors name the file and line, and locale-free
/// number parsing.
#include <charconv>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/io/file.hpp>

namespace dnncost::io {

struct CsvOptions {
    /// Record rows with a wrong number of fields in `issues` and skip them instead of throwing.
    bool skip_bad_rows = false;
};

/// A problem with one row that was skipped rather than thrown.
struct CsvIssue {
    std::size_t line = 0;  ///< 1-based line where the record starts
    std::string message;
};

/// A parsed CSV file: header, records (all of header size) and their line numbers.
struct CsvTable {
    std::string source;  ///< file name used in messages
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
    std::vector<std::size_t> lines;  ///< 1-based line where rows[i] starts
    std::vector<CsvIssue> issues;    ///< rows skipped under CsvOptions::skip_bad_rows

    std::size_t size() const { return rows.size(); }
    std::optional<std::size_t> find_column(std::string_view name) const {
        for (std::size_t i = 0; i < header.size(); ++i)
            if (header[i] == name) return i;
        return std::nullopt;
    }
    /// Column index by name; throws parse_error listing the available columns.
    std::size_t column(std::string_view name) const {
        if (auto c = find_column(name)) return *c;
        std::string cols;
        for (const auto& h : header) cols += (cols.empty() ? "" : ", ") + h;
        raise<parse_error>(source, ": no column '", name, "' (columns: ", cols, ")");
    }
    /// "file:line" of a row, for messages.
    std::string where(std::size_t row) const { return source + ":" + std::to_string(lines.at(row)); }
};

/// Parse CSV text. @throws parse_error naming `source` and the line.
///
/// Comma-separated, fields optionally enclosed in double quotes, a doubled quote inside a quoted
/// field is a literal quote, quoted fields may span lines. The first record is the header. LF and
/// CRLF line ends are both accepted, a final line end is optional, and lines that are completely
/// empty are skipped.
///
/// Strictness: a quote inside an unquoted field, text after a closing quote, an unterminated
/// quote, a duplicate or empty column name and a record whose field count differs from the
/// header are errors that name the file and line. With `CsvOptions::skip_bad_rows` a record
/// with the wrong field count is recorded in `CsvTable::issues` and skipped instead; lexical
/// errors (quotes) always throw, because after one the rest of the file cannot be trusted.
/// Numbers are parsed with std::from_chars (locale independent, exact round trip).
DNNCOST_FUNC CsvTable parse_csv(std::string_view text, std::string source = "<memory>", const CsvOptions& options = {});

/// Read and parse a CSV file. @throws io_error if unreadable, parse_error if malformed.
inline CsvTable read_csv(const std::filesystem::path& path, const CsvOptions& options = {}) {
    return parse_csv(read_file(path), path.string(), options);
}

/// Outcome of parsing one numeric field.
enum class NumberStatus { ok, empty, malformed, nan, infinite };

DNNCOST_FUNC std::string_view to_string(NumberStatus s);

struct ParsedNumber {
    double value = 0.0;
    NumberStatus status = NumberStatus::empty;
    bool ok() const { return status == NumberStatus::ok; }
};

/// Parse a decimal or scientific number; surrounding spaces and a leading '+' are allowed,
/// anything else left over makes it malformed. NaN and infinities are reported as such.
DNNCOST_FUNC ParsedNumber parse_number(std::string_view s);

/// Parse a field that must be a finite number. @throws parse_error "file:line: column 'c': ...".
DNNCOST_FUNC double require_number(const CsvTable& t, std::size_t row, std::size_t col);

}  // namespace dnncost::io

#if !defined(DNNCOST_COMPILED)
#include <dnncost/io/csv_impl.hpp>
#endif
