#pragma once
/// @file block_costs.hpp
/// The block-cost file: one mapping instance anyone can write by hand or export from a tool.
///
///     block,cu,dvfs,t_comp,e_comp,t_in,t_out,e_in,e_out
///     0,GPU,maxn,1.25,30.1,0.001,0.001,0.004,0.004
///     0,DLA,maxn,2.10,14.9,0.001,0.001,0.004,0.004
///     ...
///
/// `block` is the 0-based position of the block in the network, `cu` and `dvfs` are names; the
/// columns may come in any order; costs are in ms and mJ. A missing (block, cu) row means the CU
/// does not run that block; a CU that runs a block needs a row for every DVFS setting of the
/// file. Blank lines and lines starting with '#' are skipped. Every problem is a parse_error
/// "FILE:LINE: ..." naming the line: a missing, unknown or repeated column, a wrong number of
/// fields, a value that is not a number, NaN or infinite, a negative cost, a CU not in the
/// declared list, a repeated row, a block position that no row gives (no CU supports it) or a
/// missing DVFS row.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/search/mapping/cost_table.hpp>
#include <dnncost/search/mapping/mapping_cost.hpp>
#include <dnncost/search/mapping/platform.hpp>

namespace dnncost::search::mapping {

/// Options of the block-cost reader.
struct BlockCostFileOptions {
    /// The platform's compute units; a row naming another CU is an error. Empty: the CUs are
    /// the names the file uses, in order of first appearance.
    std::vector<std::string> cus;
    /// Largest block position accepted (a guard against a stray huge number).
    std::size_t max_blocks = 1u << 20;
    /// Largest cost accepted, in ms or mJ (a guard against a stray huge number: the sums and
    /// products of a mapping's costs must stay finite).
    double max_cost = 1e9;
};

/// A parsed block-cost file: the platform it describes and a CostTable with one axis, "block".
struct BlockCostFile {
    std::string source;  ///< file name (or what the caller called the text)
    Platform platform;   ///< CUs and DVFS settings (in order of first appearance)
    std::size_t num_blocks = 0;
    CostTable table;

    /// The mapping instance at DVFS setting `dvfs` (index into platform.dvfs).
    DNNCOST_FUNC MappingInstance instance(std::size_t dvfs) const;
};

namespace detail {

DNNCOST_FUNC std::string_view trim(std::string_view s);

DNNCOST_FUNC std::vector<std::string_view> split_fields(std::string_view line);

/// Shortest text that reads back as the same double.
DNNCOST_FUNC std::string shortest(double v);

}  // namespace detail

/// Parse a block-cost file's text. `source` names it in messages.
/// @throws parse_error "SOURCE:LINE: ..." (see the file comment for every check).
DNNCOST_FUNC BlockCostFile parse_block_costs(std::string_view text, const std::string& source,
                                             const BlockCostFileOptions& options = {});

/// Read and parse a block-cost file. @throws io_error if it cannot be read, parse_error if bad.
DNNCOST_FUNC BlockCostFile load_block_costs(const std::filesystem::path& path,
                                            const BlockCostFileOptions& options = {});

/// Block-cost CSV text of one instance per DVFS setting: instances[d] is written with the name
/// dvfs_names[d]. Numbers are written in their shortest exact form, so a file reads back equal.
DNNCOST_FUNC std::string block_costs_csv(std::span<const MappingInstance> instances,
                                         std::span<const std::string> dvfs_names);

}  // namespace dnncost::search::mapping

#if !defined(DNNCOST_COMPILED)
#include <dnncost/search/mapping/block_costs_impl.hpp>
#endif
