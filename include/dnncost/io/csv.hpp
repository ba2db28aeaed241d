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
inline CsvTable parse_csv(std::string_view text, std::string source = "<memory>", const CsvOptions& options = {}) {
    CsvTable table;
    table.source = std::move(source);
    // A UTF-8 byte-order mark would otherwise become part of the first column name.
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);

    std::size_t pos = 0, line = 1;
    const std::size_t n = text.size();
    auto fail = [&](std::size_t at_line, auto&&... msg) {
        raise<parse_error>(table.source, ":", at_line, ": ", msg...);
    };

    bool have_header = false;
    while (pos < n) {
        const std::size_t record_line = line;
        std::vector<std::string> fields;
        std::string field;
        bool record_done = false;
        // Skip completely empty lines (also the final line end).
        if (text[pos] == '\n' || (text[pos] == '\r' && pos + 1 < n && text[pos + 1] == '\n')) {
            pos += text[pos] == '\r' ? 2 : 1;
            ++line;
            continue;
        }
        while (!record_done) {
            field.clear();
            if (pos < n && text[pos] == '"') {
                const std::size_t quote_line = line;
                ++pos;
                for (;;) {
                    if (pos >= n) fail(quote_line, "unterminated quoted field (opened on this line)");
                    const char c = text[pos];
                    if (c == '"') {
                        if (pos + 1 < n && text[pos + 1] == '"') {
                            field += '"';
                            pos += 2;
                            continue;
                        }
                        ++pos;
                        break;
                    }
                    if (c == '\n') ++line;
                    field += c;
                    ++pos;
                }
                if (pos < n && text[pos] != ',' && text[pos] != '\n' && text[pos] != '\r')
                    fail(line, "unexpected character '", text[pos], "' after closing quote of field ",
                         fields.size() + 1);
            } else {
                while (pos < n && text[pos] != ',' && text[pos] != '\n' && text[pos] != '\r') {
                    if (text[pos] == '"')
                        fail(line, "quote inside unquoted field ", fields.size() + 1,
                             " (enclose the whole field in quotes and double the inner quote)");
                    field += text[pos++];
                }
            }
            fields.push_back(field);
            if (pos >= n) {
                record_done = true;
            } else if (text[pos] == ',') {
                ++pos;
            } else if (text[pos] == '\r') {
                if (pos + 1 < n && text[pos + 1] == '\n')
                    ++pos;
                else
                    fail(line, "bare carriage return (expected CRLF or LF line ends)");
                ++pos;
                ++line;
                record_done = true;
            } else {  // '\n'
                ++pos;
                ++line;
                record_done = true;
            }
        }
        if (!have_header) {
            for (std::size_t i = 0; i < fields.size(); ++i) {
                if (fields[i].empty()) fail(record_line, "empty name of column ", i + 1, " in the header");
                for (std::size_t j = 0; j < i; ++j)
                    if (fields[j] == fields[i])
                        fail(record_line, "duplicate column name '", fields[i], "' in the header");
            }
            table.header = std::move(fields);
            have_header = true;
            continue;
        }
        if (fields.size() != table.header.size()) {
            std::string msg =
                "expected " + std::to_string(table.header.size()) + " fields, found " + std::to_string(fields.size());
            if (!options.skip_bad_rows) fail(record_line, msg);
            table.issues.push_back({record_line, std::move(msg)});
            continue;
        }
        table.rows.push_back(std::move(fields));
        table.lines.push_back(record_line);
    }
    if (!have_header) raise<parse_error>(table.source, ": empty CSV file (no header row)");
    return table;
}

/// Read and parse a CSV file. @throws io_error if unreadable, parse_error if malformed.
inline CsvTable read_csv(const std::filesystem::path& path, const CsvOptions& options = {}) {
    return parse_csv(read_file(path), path.string(), options);
}

/// Outcome of parsing one numeric field.
enum class NumberStatus { ok, empty, malformed, nan, infinite };

inline std::string_view to_string(NumberStatus s) {
    switch (s) {
        case NumberStatus::ok:
            return "ok";
        case NumberStatus::empty:
            return "empty value";
        case NumberStatus::malformed:
            return "not a number";
        case NumberStatus::nan:
            return "NaN";
        case NumberStatus::infinite:
            return "infinite value";
    }
    return "?";
}

struct ParsedNumber {
    double value = 0.0;
    NumberStatus status = NumberStatus::empty;
    bool ok() const { return status == NumberStatus::ok; }
};

/// Parse a decimal or scientific number; surrounding spaces and a leading '+' are allowed,
/// anything else left over makes it malformed. NaN and infinities are reported as such.
inline ParsedNumber parse_number(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    if (s.empty()) return {0.0, NumberStatus::empty};
    if (s.front() == '+') s.remove_prefix(1);
    double v = 0.0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    // out of double's range (overflow or underflow) counts as not a usable number
    if (ec != std::errc{} || end != s.data() + s.size()) return {0.0, NumberStatus::malformed};
    if (std::isnan(v)) return {v, NumberStatus::nan};
    if (std::isinf(v)) return {v, NumberStatus::infinite};
    return {v, NumberStatus::ok};
}

/// Parse a field that must be a finite number. @throws parse_error "file:line: column 'c': ...".
inline double require_number(const CsvTable& t, std::size_t row, std::size_t col) {
    const auto& text = t.rows.at(row).at(col);
    const auto r = parse_number(text);
    if (!r.ok())
        raise<parse_error>(t.where(row), ": column '", t.header.at(col), "': ", to_string(r.status), " ('", text, "')");
    return r.value;
}

}  // namespace dnncost::io
