#pragma once
/// @file op_table.hpp
/// A measured operator table: for one device, single-operator latencies keyed by operator
/// configuration (op_config.hpp) on a grid over channel counts, (C, K) or C alone. A table is a
/// CSV file, one measured point per row, so that tables of several devices can be swapped:
///
///     op,kernel,stride,groups,spatial,c,k,latency_ms
///     Conv,3x3,1x1,1,56x56,32,64,0.412
///
/// kernel, stride and spatial are dimensions joined by 'x' ('-' for none), groups an integer or
/// `dw` (depthwise: groups = C = K), k equals c for keys spanning one channel count. The points
/// of a key must form a full grid (every c with every k); a missing point is an error when a
/// query needs it.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/cost/interpolation.hpp>
#include <dnncost/cost/op_config.hpp>
#include <dnncost/io/csv.hpp>
#include <dnncost/io/file.hpp>

namespace dnncost::cost {

/// One measured point of a table.
struct TablePoint {
    OpKey key;
    std::int64_t c = 0;
    std::int64_t k = 0;
    double latency_ms = 0;
};

/// The table columns, in order.
inline const std::vector<std::string>& table_columns() {
    static const std::vector<std::string> c{"op", "kernel", "stride", "groups", "spatial", "c", "k", "latency_ms"};
    return c;
}

class OpTable {
public:
    OpTable() = default;
    /// A free-form device description (e.g. "onnxruntime 1.30.0 all 1 thread, AMD EPYC"), kept in
    /// a `# device: ...` comment line of the file.
    std::string device;

    /// Add (or replace) a point. @throws config_error for a non-positive count, a one-count key
    /// with k != c, or a latency that is not a finite number >= 0
    void add(const TablePoint& p) {
        if (p.c < 1 || p.k < 1) raise<config_error>("table point ", to_string(p.key), ": channel counts must be >= 1");
        if (!spans_two_channel_counts(p.key) && p.k != p.c)
            raise<config_error>("table point ", to_string(p.key), ": k (", p.k, ") must equal c (", p.c,
                                ") for a key that spans one channel count");
        if (!std::isfinite(p.latency_ms) || p.latency_ms < 0)
            raise<config_error>("table point ", to_string(p.key), ": latency_ms must be finite and >= 0");
        m_points[p.key][{p.c, p.k}] = p.latency_ms;
        m_grids.erase(p.key);
    }
    bool contains(const OpKey& key) const { return m_points.count(key) > 0; }
    std::size_t num_keys() const { return m_points.size(); }
    std::size_t num_points() const {
        std::size_t n = 0;
        for (const auto& [k, pts] : m_points) n += pts.size();
        return n;
    }
    std::vector<OpKey> keys() const {
        std::vector<OpKey> out;
        for (const auto& [k, pts] : m_points) out.push_back(k);
        return out;
    }
    std::vector<TablePoint> points() const {
        std::vector<TablePoint> out;
        for (const auto& [key, pts] : m_points)
            for (const auto& [ck, v] : pts) out.push_back({key, ck.first, ck.second, v});
        return out;
    }

    /// The latency (ms) of `key` at (c, k) with its gradient [d/dc, d/dk] (one-count keys: the
    /// whole slope on d/dc, d/dk = 0; k is ignored). A reading below zero (the plane of a cell
    /// whose latencies fall, or a line extrapolated past the table) is 0, the least an operator
    /// can cost, with a zero gradient.
    /// @throws config_error when the table lacks the key, as Grid::query, or for a reading that
    /// is not finite (extrapolated too far)
    GridValue query(const OpKey& key, double c, double k, const QueryOptions& o = {}) const {
        const auto& grid = grid_of(key);
        const bool two = spans_two_channel_counts(key);
        try {
            auto r = grid.query(two ? std::vector<double>{c, k} : std::vector<double>{c}, o);
            if (!two) r.gradient.push_back(0.0);
            if (!std::isfinite(r.value))
                raise<config_error>("the reading ", r.value, " ms is not finite (extrapolated too far from the table)");
            if (r.value < 0) {
                r.value = 0;
                std::fill(r.gradient.begin(), r.gradient.end(), 0.0);
            }
            return r;
        } catch (const config_error& e) {
            raise<config_error>("table query ", to_string(key), " c=", c, two ? dnncost::concat(" k=", k) : std::string(), ": ",
                                e.what());
        }
    }

    /// Read a table. @throws io_error when unreadable, parse_error naming file and line for a
    /// malformed row (missing column, bad number, bad dimension list, negative latency, a point
    /// given twice)
    static OpTable load(const std::filesystem::path& path) {
        const auto text = io::read_file(path);
        OpTable t;
        // leading comment lines carry the device
        std::string body;
        std::size_t comments = 0;
        {
            std::istringstream in(text);
            std::string line;
            bool header_seen = false;
            while (std::getline(in, line)) {
                if (!header_seen && !line.empty() && line[0] == '#') {
                    ++comments;
                    const std::string tag = "# device: ";
                    if (line.rfind(tag, 0) == 0) t.device = line.substr(tag.size());
                    body += '\n';  // keep line numbers
                    continue;
                }
                header_seen = header_seen || !line.empty();
                body += line + '\n';
            }
        }
        const auto csv = io::parse_csv(body, path.string());
        if (csv.header.empty()) raise<parse_error>(path.string(), ": empty table (expected a header line)");
        std::vector<std::size_t> col;
        for (const auto& name : table_columns()) col.push_back(csv.column(name));
        for (std::size_t r = 0; r < csv.size(); ++r) {
            const auto& row = csv.rows[r];
            const auto where = csv.where(r);
            TablePoint p;
            p.key.op = row[col[0]];
            if (p.key.op.empty()) raise<parse_error>(where, ": empty op");
            p.key.kernel = parse_dims(row[col[1]], where, "kernel");
            p.key.stride = parse_dims(row[col[2]], where, "stride");
            const auto& g = row[col[3]];
            if (g == "dw")
                p.key.groups = depthwise_groups;
            else {
                const auto v = parse_count(g, where, "groups");
                p.key.groups = v;
            }
            p.key.spatial = parse_dims(row[col[4]], where, "spatial");
            p.c = parse_count(row[col[5]], where, "c");
            p.k = parse_count(row[col[6]], where, "k");
            const auto lat = io::parse_number(row[col[7]]);
            if (lat.status != io::NumberStatus::ok)
                raise<parse_error>(where, ": column 'latency_ms': ", io::to_string(lat.status), " value '", row[col[7]],
                                   "'");
            p.latency_ms = lat.value;
            if (p.latency_ms < 0) raise<parse_error>(where, ": column 'latency_ms': negative latency ", p.latency_ms);
            if (t.m_points.count(p.key) && t.m_points.at(p.key).count({p.c, p.k}))
                raise<parse_error>(where, ": the point ", to_string(p.key), " c=", p.c, " k=", p.k, " is given twice");
            try {
                t.add(p);
            } catch (const config_error& e) {
                raise<parse_error>(where, ": ", e.what());
            }
        }
        (void)comments;
        return t;
    }

    /// The table as CSV text (sorted by key, then c, k).
    std::string to_csv() const {
        std::ostringstream os;
        if (!device.empty()) os << "# device: " << device << '\n';
        const auto& cols = table_columns();
        for (std::size_t i = 0; i < cols.size(); ++i) os << (i ? "," : "") << cols[i];
        os << '\n';
        for (const auto& p : points()) {
            char lat[64];
            std::snprintf(lat, sizeof lat, "%.6g", p.latency_ms);
            os << p.key.op << ',' << kernel_string(p.key) << ',' << stride_string(p.key) << ',' << groups_string(p.key)
               << ',' << spatial_string(p.key) << ',' << p.c << ',' << p.k << ',' << lat << '\n';
        }
        return os.str();
    }
    /// Write the table atomically. @throws io_error
    void save(const std::filesystem::path& path) const { io::write_file_atomic(path, to_csv()); }

private:
    static std::vector<std::int64_t> parse_dims(const std::string& s, const std::string& where, const char* what) {
        std::vector<std::int64_t> out;
        if (s == "-") return out;
        std::size_t start = 0;
        for (;;) {
            const auto end = s.find('x', start);
            out.push_back(parse_count(s.substr(start, end - start), where, what));
            if (end == std::string::npos) break;
            start = end + 1;
        }
        return out;
    }
    static std::int64_t parse_count(const std::string& s, const std::string& where, const char* what) {
        std::int64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 1)
            raise<parse_error>(
                where, ": column '", what, "': '", s, "' is not a positive integer",
                std::string(what) == "kernel" || std::string(what) == "stride" || std::string(what) == "spatial"
                    ? " list (e.g. 3x3, or - for none)"
                    : "");
        return v;
    }
    const Grid& grid_of(const OpKey& key) const {
        if (auto it = m_grids.find(key); it != m_grids.end()) return it->second;
        const auto pts = m_points.find(key);
        if (pts == m_points.end()) raise<config_error>("the table has no entry for ", to_string(key));
        std::set<double> cs, ks;
        for (const auto& [ck, v] : pts->second) {
            cs.insert(static_cast<double>(ck.first));
            ks.insert(static_cast<double>(ck.second));
        }
        const bool two = spans_two_channel_counts(key);
        std::vector<std::vector<double>> axes{{cs.begin(), cs.end()}};
        if (two) axes.emplace_back(ks.begin(), ks.end());
        Grid g(axes);
        for (const auto& [ck, v] : pts->second)
            g.set_at(two ? std::vector<double>{static_cast<double>(ck.first), static_cast<double>(ck.second)}
                         : std::vector<double>{static_cast<double>(ck.first)},
                     v);
        return m_grids.emplace(key, std::move(g)).first->second;
    }

    std::map<OpKey, std::map<std::pair<std::int64_t, std::int64_t>, double>> m_points;
    mutable std::map<OpKey, Grid> m_grids;  ///< built on first query
};

}  // namespace dnncost::cost
