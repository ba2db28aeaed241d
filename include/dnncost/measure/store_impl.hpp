#pragma once
/// @file store_impl.hpp
/// The definitions of store.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by store.hpp in header-only mode.
#include <dnncost/measure/store.hpp>

DNNCOST_FUNC std::string dnncost::measure::utc_now() {
    const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

DNNCOST_FUNC std::string dnncost::measure::detail::csv_field(std::string s) {
    for (auto& c : s)
        if (c == '\n' || c == '\r') c = ' ';
    if (s.find_first_of(",\"") == std::string::npos) return s;
    std::string q = "\"";
    for (const char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

DNNCOST_FUNC void dnncost::measure::detail::write_all(int fd, std::string_view data,
                                                      const std::filesystem::path& path) {
    while (!data.empty()) {
        const auto w = ::write(fd, data.data(), data.size());
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) raise<io_error>("cannot write '", path.string(), "': ", std::strerror(errno));
        data.remove_prefix(static_cast<std::size_t>(w));
    }
}

DNNCOST_FUNC void dnncost::measure::detail::write_durable(const std::filesystem::path& path, std::string_view data) {
    const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    std::random_device rd;
    const auto tmp = dir / ("." + path.filename().string() + ".tmp" + std::to_string(rd()));
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        raise<io_error>("cannot write '", path.string(), "': cannot create a temporary file in '", dir.string(), "'");
    try {
        write_all(fd, data, path);
        if (::fsync(fd) != 0)
            raise<io_error>("cannot write '", path.string(), "': fsync failed: ", std::strerror(errno));
    } catch (...) {
        ::close(fd);
        std::error_code ec;
        std::filesystem::remove(tmp, ec);
        throw;
    }
    ::close(fd);
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        const auto reason = ec.message();
        std::filesystem::remove(tmp, ec);
        raise<io_error>("cannot write '", path.string(), "': rename failed: ", reason);
    }
    sync_directory(dir);
}

DNNCOST_FUNC std::string dnncost::measure::format_record(const Record& r, const std::vector<std::string>& header) {
    std::string line;
    for (std::size_t c = 0; c < header.size(); ++c) {
        const auto& h = header[c];
        std::string f;
        if (h == "key")
            f = r.key;
        else if (h == "id")
            f = r.id;
        else if (h == "latency_ms")
            f = detail::format_number(r.latency_ms, "%.6g");
        else if (h == "spread")
            f = detail::format_number(r.spread, "%.4g");
        else if (h == "rounds")
            f = std::to_string(r.rounds);
        else if (h == "status")
            f = to_string(r.status);
        else if (h == "time")
            f = r.time;
        else if (h == "peak_memory_bytes")
            f = r.peak_memory_bytes ? detail::format_number(*r.peak_memory_bytes, "%.0f") : "";
        else if (h == "energy_mj")
            f = r.energy_mj ? detail::format_number(*r.energy_mj, "%.6g") : "";
        else if (h == "detail")
            f = r.detail;
        if (c) line += ',';
        line += detail::csv_field(f);
    }
    return line + "\n";
}

DNNCOST_FUNC bool dnncost::measure::is_results_header(std::string_view text) {
    const auto nl = text.find('\n');
    auto first = text.substr(0, nl);
    if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
    try {
        const auto t = io::parse_csv(first, "<header>");
        for (std::size_t c = 0; c < required_store_columns; ++c)
            if (!t.find_column(store_columns()[c])) return false;
        return true;
    } catch (const parse_error&) {
        return false;
    }
}

DNNCOST_FUNC bool dnncost::measure::is_results_file(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return false;
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return false;
    char buf[4096];
    const auto n = std::fread(buf, 1, sizeof buf, f);
    std::fclose(f);
    return is_results_header(std::string_view(buf, n));
}

DNNCOST_FUNC auto dnncost::measure::parse_store(std::string_view text, const std::string& source) -> StoreContents {
    StoreContents s;
    const auto last_nl = text.rfind('\n');
    s.complete_bytes = last_nl == std::string_view::npos ? 0 : last_nl + 1;
    s.torn_bytes = text.size() - s.complete_bytes;
    const auto complete = text.substr(0, s.complete_bytes);
    if (complete.empty()) return s;  // nothing but (part of) a header: an empty store
    const auto t = io::parse_csv(complete, source, io::CsvOptions{.skip_bad_rows = true});
    s.header = t.header;
    std::vector<std::size_t> col;
    for (std::size_t c = 0; c < required_store_columns; ++c) col.push_back(t.column(store_columns()[c]));
    const auto peak = t.find_column("peak_memory_bytes"), energy = t.find_column("energy_mj"),
               det = t.find_column("detail");
    s.issues = t.issues;
    for (std::size_t r = 0; r < t.size(); ++r) {
        const auto& row = t.rows[r];
        Record rec;
        rec.line = t.lines[r];
        rec.key = row[col[0]];
        rec.id = row[col[1]];
        rec.time = row[col[6]];
        std::string problem;
        const auto status = parse_status(row[col[5]]);
        if (rec.key.empty())
            problem = "empty key";
        else if (row[col[5]].empty())
            problem = "empty status";
        else if (!status)
            problem = "unknown status '" + row[col[5]] + "'";
        if (status) rec.status = *status;
        const auto number = [&](std::size_t c, bool required) -> std::optional<double> {
            const auto p = io::parse_number(row[c]);
            if (p.ok()) return p.value;
            if (required && problem.empty())
                problem =
                    "column '" + t.header[c] + "': " + std::string(io::to_string(p.status)) + " ('" + row[c] + "')";
            return std::nullopt;
        };
        const bool measured = rec.ok() || rec.is_round();
        if (auto v = number(col[2], measured)) rec.latency_ms = *v;
        if (auto v = number(col[3], false)) rec.spread = *v;
        if (auto v = number(col[4], measured)) rec.rounds = static_cast<int>(*v);
        if (peak) rec.peak_memory_bytes = number(*peak, false);
        if (energy) rec.energy_mj = number(*energy, false);
        if (det) rec.detail = row[*det];
        if (measured && problem.empty() && !(rec.latency_ms > 0)) problem = "non-positive latency_ms";
        if (!problem.empty()) {
            s.issues.push_back({rec.line, problem});
            continue;
        }
        s.records.push_back(std::move(rec));
    }
    return s;
}

DNNCOST_FUNC auto dnncost::measure::final_records(const std::vector<Record>& records) -> std::vector<Record> {
    std::map<std::string, std::size_t> index;
    std::vector<Record> out;
    for (const auto& r : records) {
        if (!r.is_final()) continue;
        const auto [it, inserted] = index.try_emplace(r.key, out.size());
        if (inserted)
            out.push_back(r);
        else
            out[it->second] = r;
    }
    return out;
}

DNNCOST_FUNC auto dnncost::measure::load_results_dataset(const std::filesystem::path& path,
                                                         std::vector<std::string> columns, bool strict,
                                                         train::GraphLoader loader, spaces::SpaceOptions space_options)
    -> train::Dataset {
    const auto text = io::read_file(path);
    if (!is_results_header(text))
        raise<parse_error>(path.string(),
                           ": not a dnncost results store (header lacks key,id,latency_ms,spread,rounds,status,time)");
    const auto contents = parse_store(text, path.string());
    if (strict && !contents.issues.empty())
        raise<parse_error>(path.string(), ":", contents.issues.front().line, ": ", contents.issues.front().message);
    train::DatasetOptions opt;
    std::string csv = "id,latency_ms,spread,rounds,peak_memory_bytes,energy_mj\n";
    for (const auto& r : final_records(contents.records)) {
        if (!r.ok()) continue;
        opt.row_lines.push_back(r.line);  // messages name the store's lines, not the rows' places here
        csv += detail::csv_field(r.id) + "," + detail::format_number(r.latency_ms, "%.17g") + "," +
               detail::format_number(r.spread, "%.17g") + "," + std::to_string(r.rounds) + "," +
               (r.peak_memory_bytes ? detail::format_number(*r.peak_memory_bytes, "%.17g") : "") + "," +
               (r.energy_mj ? detail::format_number(*r.energy_mj, "%.17g") : "") + "\n";
    }
    if (opt.row_lines.empty()) {
        // say why when rows were there but none could be read, not only that none is left
        if (!contents.issues.empty())
            raise<parse_error>(path.string(), ": no network with status ok in this results store (",
                               contents.issues.size(), contents.issues.size() == 1 ? " row" : " rows",
                               " left out; line ", contents.issues.front().line, ": ", contents.issues.front().message,
                               ")");
        raise<parse_error>(path.string(), ": no network with status ok in this results store");
    }
    for (const auto& issue : contents.issues) opt.left_out.push_back({issue.line, issue.message});
    opt.space = train::onnx_keys;  // ids that are not architecture strings are model paths
    opt.space_options = std::move(space_options);
    opt.columns = columns.empty() ? std::vector<std::string>{"latency_ms"} : std::move(columns);
    opt.key_column = "id";
    opt.strict = strict;
    opt.loader = std::move(loader);
    const auto base = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    return train::load_dataset_text(csv, path.string(), base, opt);
}

namespace dnncost::measure {

DNNCOST_FUNC ResultsStore::ResultsStore(std::filesystem::path path) : m_path(std::move(path)) {
    io::check_writable(m_path);
    std::error_code ec;
    if (std::filesystem::exists(m_path, ec)) {
        const auto text = io::read_file(m_path);
        if (!text.empty() && !is_results_header(text) && text.find('\n') != std::string::npos)
            raise<parse_error>(m_path.string(), ": exists and is not a dnncost results store (its header lacks ",
                               "key,id,latency_ms,spread,rounds,status,time); refusing to append to it");
        m_contents = parse_store(text, m_path.string());
        if (m_contents.torn_bytes > 0) {
            m_torn_repaired = m_contents.torn_bytes;
            detail::write_durable(m_path, std::string_view(text).substr(0, m_contents.complete_bytes));
            m_contents.torn_bytes = 0;
        }
    }
    if (m_contents.header.empty()) m_contents.header = store_columns();
    m_fd = ::open(m_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (m_fd < 0) raise<io_error>("cannot open '", m_path.string(), "' for appending: ", std::strerror(errno));
    struct stat st {};
    if (::fstat(m_fd, &st) == 0 && st.st_size == 0) {
        write_synced(format_header());
        detail::sync_directory(parent());
    }
}

DNNCOST_FUNC auto ResultsStore::result(std::string_view key) const -> const Record* {
    const Record* found = nullptr;
    for (const auto& r : m_contents.records)
        if (r.key == key && r.is_final()) found = &r;
    return found;
}

DNNCOST_FUNC auto ResultsStore::rounds_in_progress(std::string_view key) const -> std::vector<Record> {
    std::vector<Record> out;
    for (const auto& r : m_contents.records) {
        if (r.key != key) continue;
        if (r.is_final())
            out.clear();
        else
            out.push_back(r);
    }
    return out;
}

DNNCOST_FUNC void ResultsStore::append(Record r) {
    if (r.time.empty()) r.time = utc_now();
    write_synced(format_record(r, m_contents.header));
    r.line = 0;
    m_contents.records.push_back(std::move(r));
}

DNNCOST_FUNC void ResultsStore::compact() {
    std::vector<Record> kept;
    const auto finals = final_records(m_contents.records);
    kept = finals;
    std::map<std::string, bool> has_final;
    for (const auto& r : finals) has_final[r.key] = true;
    std::map<std::string, std::vector<Record>> progress;
    for (const auto& r : m_contents.records) {
        if (r.is_final())
            progress[r.key].clear();
        else
            progress[r.key].push_back(r);
    }
    for (const auto& [key, rounds] : progress) kept.insert(kept.end(), rounds.begin(), rounds.end());
    std::string text = format_header();
    for (const auto& r : kept) text += format_record(r, m_contents.header);
    if (m_fd >= 0) ::close(m_fd);
    m_fd = -1;
    detail::write_durable(m_path, text);
    m_fd = ::open(m_path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (m_fd < 0) raise<io_error>("cannot reopen '", m_path.string(), "' for appending: ", std::strerror(errno));
    m_contents.records = std::move(kept);
    m_contents.issues.clear();
}

DNNCOST_FUNC std::string ResultsStore::format_header() const {
    std::string h;
    for (std::size_t c = 0; c < m_contents.header.size(); ++c) {
        if (c) h += ',';
        h += detail::csv_field(m_contents.header[c]);
    }
    return h + "\n";
}

DNNCOST_FUNC void ResultsStore::write_synced(const std::string& text) {
    detail::write_all(m_fd, text, m_path);
    if (::fsync(m_fd) != 0)
        raise<io_error>("cannot write '", m_path.string(), "': fsync failed: ", std::strerror(errno));
}

}  // namespace dnncost::measure
