#pragma once
/// @file block_costs_impl.hpp
/// The definitions of block_costs.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by block_costs.hpp in header-only mode.
#include <charconv>
#include <fstream>
#include <iterator>
#include <map>
#include <system_error>
#include <tuple>

#include <dnncost/search/mapping/block_costs.hpp>

namespace dnncost::search::mapping {

DNNCOST_FUNC MappingInstance BlockCostFile::instance(std::size_t dvfs) const {
    if (dvfs >= platform.num_dvfs()) raise<config_error>(source, ": DVFS setting ", dvfs, " of ", platform.num_dvfs());
    std::vector<std::string> blocks;
    for (std::size_t b = 0; b < num_blocks; ++b) blocks.push_back(std::to_string(b));
    MappingInstance inst(platform.cus, blocks);
    for (std::size_t b = 0; b < num_blocks; ++b)
        for (std::size_t c = 0; c < platform.num_cus(); ++c)
            if (auto cost = table.get({b}, c, dvfs)) inst.set(b, c, *cost);
    return inst;
}

DNNCOST_FUNC std::string_view detail::trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

DNNCOST_FUNC std::vector<std::string_view> detail::split_fields(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = line.find(',', start);
        out.push_back(
            trim(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return out;
}

DNNCOST_FUNC std::string detail::shortest(double v) {
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

DNNCOST_FUNC BlockCostFile parse_block_costs(std::string_view text, const std::string& source,
                                             const BlockCostFileOptions& options) {
    using detail::trim;
    static constexpr const char* expected[] = {"block", "cu",    "dvfs", "t_comp", "e_comp",
                                               "t_in",  "t_out", "e_in", "e_out"};
    static constexpr std::size_t ncol = std::size(expected);
    auto fail = [&](std::size_t line, auto&&... what) -> void {
        if (line) raise<parse_error>(source, ":", line, ": ", what...);
        raise<parse_error>(source, ": ", what...);
    };
    const std::string expected_header = "block,cu,dvfs,t_comp,e_comp,t_in,t_out,e_in,e_out";

    struct Row {
        std::size_t line, block, cu, dvfs;
        BlockCost cost;
    };
    std::vector<Row> rows;
    std::vector<std::string> cus = options.cus, dvfs;
    const bool cus_declared = !cus.empty();
    std::size_t column[ncol];
    bool have_header = false;
    std::size_t header_fields = 0;

    std::size_t line_no = 0, pos = 0;
    while (pos <= text.size()) {
        const std::size_t nl = text.find('\n', pos);
        const std::string_view raw = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
        ++line_no;
        const std::string_view line = trim(raw);
        if (line.empty() || line.front() == '#') continue;
        const auto f = detail::split_fields(line);
        if (!have_header) {
            std::fill(std::begin(column), std::end(column), ncol);
            for (std::size_t i = 0; i < f.size(); ++i) {
                std::size_t k = 0;
                while (k < ncol && f[i] != expected[k]) ++k;
                if (k == ncol)
                    fail(line_no, "unknown column '", f[i], "' in the header (expected ", expected_header, ")");
                if (column[k] != ncol) fail(line_no, "column '", f[i], "' appears twice in the header");
                column[k] = i;
            }
            std::string missing;
            for (std::size_t k = 0; k < ncol; ++k)
                if (column[k] == ncol) missing += (missing.empty() ? "" : ", ") + std::string(expected[k]);
            if (!missing.empty())
                fail(line_no, "missing column(s) ", missing, " in the header (expected ", expected_header, ")");
            have_header = true;
            header_fields = f.size();
            continue;
        }
        if (f.size() != header_fields) fail(line_no, f.size(), " field(s), the header has ", header_fields);
        Row r{line_no, 0, 0, 0, {}};
        {
            const auto s = f[column[0]];
            std::size_t b = 0;
            const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), b);
            if (s.empty() || ec != std::errc() || end != s.data() + s.size())
                fail(line_no, "block '", s, "' is not a non-negative integer");
            if (b >= options.max_blocks)
                fail(line_no, "block ", b, " is beyond the limit of ", options.max_blocks, " blocks");
            r.block = b;
        }
        {
            const std::string cu(f[column[1]]);
            if (cu.empty()) fail(line_no, "empty compute unit name");
            auto it = std::find(cus.begin(), cus.end(), cu);
            if (it == cus.end()) {
                if (cus_declared)
                    fail(line_no, "unknown compute unit '", cu, "' (the platform has ", Platform::joined(cus), ")");
                cus.push_back(cu);
                it = cus.end() - 1;
                if (cus.size() > 255) fail(line_no, "more than 255 compute units");
            }
            r.cu = static_cast<std::size_t>(it - cus.begin());
        }
        {
            const std::string d(f[column[2]]);
            if (d.empty()) fail(line_no, "empty DVFS setting name (write e.g. 'default')");
            auto it = std::find(dvfs.begin(), dvfs.end(), d);
            if (it == dvfs.end()) {
                dvfs.push_back(d);
                it = dvfs.end() - 1;
                if (dvfs.size() > 4096) fail(line_no, "more than 4096 DVFS settings");
            }
            r.dvfs = static_cast<std::size_t>(it - dvfs.begin());
        }
        for (std::size_t k = 0; k < BlockCost::fields; ++k) {
            const auto s = f[column[3 + k]];
            const char* name = BlockCost::field_names[k];
            double v = 0.0;
            const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
            if (s.empty()) fail(line_no, name, " is empty");
            if (ec == std::errc::result_out_of_range) fail(line_no, name, " '", s, "' is out of the range of a double");
            if (ec != std::errc() || end != s.data() + s.size()) fail(line_no, name, " '", s, "' is not a number");
            if (std::isnan(v)) fail(line_no, name, " is NaN");
            if (!std::isfinite(v)) fail(line_no, name, " is infinite");
            if (v < 0.0) fail(line_no, "negative ", name, " (", s, "); costs are >= 0");
            if (v > options.max_cost)
                fail(line_no, name, " ", s, " is beyond the limit of ", options.max_cost, " (ms or mJ)");
            r.cost.set_field(k, v);
        }
        rows.push_back(r);
    }
    if (!have_header) fail(0, "empty file: no header line (expected ", expected_header, ")");
    if (rows.empty()) fail(0, "no data rows after the header");

    std::size_t num_blocks = 0;
    for (const auto& r : rows) num_blocks = std::max(num_blocks, r.block + 1);
    // first and last line of each block, to name lines around a block that has no row
    std::vector<std::size_t> first_line(num_blocks, 0), last_line(num_blocks, 0);
    std::map<std::tuple<std::size_t, std::size_t, std::size_t>, std::size_t> seen;
    for (const auto& r : rows) {
        const auto [it, fresh] = seen.emplace(std::make_tuple(r.block, r.cu, r.dvfs), r.line);
        if (!fresh)
            fail(r.line, "repeated row for block ", r.block, " on ", cus[r.cu], " at DVFS setting '", dvfs[r.dvfs],
                 "' (first on line ", it->second, ")");
        if (!first_line[r.block]) first_line[r.block] = r.line;
        last_line[r.block] = r.line;
    }
    for (std::size_t b = 0; b < num_blocks; ++b) {
        if (first_line[b]) continue;
        std::size_t before = 0, after = 0;
        for (std::size_t k = b; k-- > 0;)
            if (last_line[k]) {
                before = last_line[k];
                break;
            }
        for (std::size_t k = b + 1; k < num_blocks; ++k)
            if (first_line[k]) {
                after = first_line[k];
                break;
            }
        fail(after, "block ", b, " has no row, so no compute unit supports it (blocks are numbered 0 to ",
             num_blocks - 1, "; the last row of an earlier block is line ", before, ")");
    }
    // a CU that runs a block must give it a cost at every DVFS setting
    for (const auto& r : rows) {
        if (r.dvfs != 0) continue;
        for (std::size_t d = 1; d < dvfs.size(); ++d)
            if (!seen.count({r.block, r.cu, d}))
                fail(r.line, "block ", r.block, " on ", cus[r.cu], " has no row for DVFS setting '", dvfs[d],
                     "' (a compute unit that runs a block needs one row per DVFS setting)");
    }
    for (const auto& [key, line] : seen) {
        const auto [b, c, d] = key;
        if (d != 0 && !seen.count({b, c, 0}))
            fail(line, "block ", b, " on ", cus[c], " has no row for DVFS setting '", dvfs[0],
                 "' (a compute unit that runs a block needs one row per DVFS setting)");
    }

    BlockCostFile out;
    out.source = source;
    out.platform.name = std::filesystem::path(source).filename().string();
    out.platform.cus = cus;
    out.platform.dvfs.clear();
    for (const auto& d : dvfs) out.platform.dvfs.push_back({d, {}});
    out.num_blocks = num_blocks;
    try {
        out.table = CostTable({Axis{"block",
                                    [&] {
                                        std::vector<std::string> v;
                                        for (std::size_t b = 0; b < num_blocks; ++b) v.push_back(std::to_string(b));
                                        return v;
                                    }()}},
                              out.platform);
    } catch (const config_error& e) {
        fail(0, e.what());
    }
    for (const auto& r : rows) out.table.set({r.block}, r.cu, r.dvfs, r.cost);
    return out;
}

DNNCOST_FUNC BlockCostFile load_block_costs(const std::filesystem::path& path, const BlockCostFileOptions& options) {
    std::error_code ec;
    const auto st = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(st)) raise<io_error>("cannot open '", path.string(), "': no such file");
    if (!std::filesystem::is_regular_file(st)) raise<io_error>("cannot read '", path.string(), "': not a regular file");
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > (std::uintmax_t{1} << 30))
        raise<io_error>("cannot read '", path.string(), "': larger than 1 GiB");
    std::ifstream in(path, std::ios::binary);
    if (!in) raise<io_error>("cannot open '", path.string(), "' for reading");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) raise<io_error>("error while reading '", path.string(), "'");
    return parse_block_costs(text, path.string(), options);
}

DNNCOST_FUNC std::string block_costs_csv(std::span<const MappingInstance> instances,
                                         std::span<const std::string> dvfs_names) {
    if (instances.size() != dvfs_names.size())
        raise<config_error>("block_costs_csv: ", instances.size(), " instances, ", dvfs_names.size(), " DVFS names");
    std::string s = "block,cu,dvfs,t_comp,e_comp,t_in,t_out,e_in,e_out\n";
    if (instances.empty()) return s;
    const auto& first = instances.front();
    for (std::size_t b = 0; b < first.num_blocks(); ++b)
        for (std::size_t c = 0; c < first.num_cus(); ++c)
            for (std::size_t d = 0; d < instances.size(); ++d) {
                if (!instances[d].supports(b, c)) continue;
                const auto& k = instances[d].cost(b, c);
                s += std::to_string(b) + ',' + first.cu_names()[c] + ',' + dvfs_names[d];
                for (std::size_t f = 0; f < BlockCost::fields; ++f) s += ',' + detail::shortest(k.field(f));
                s += '\n';
            }
    return s;
}

}  // namespace dnncost::search::mapping
