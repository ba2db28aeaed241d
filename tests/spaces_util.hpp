#pragma once
// Helpers shared by the search-space tests: the MAC and parameter conventions of the data
// folders' SPEC.md files, and the `arch` column of a latency table.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <dnncost/cost/analytic.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/csv.hpp>

namespace spaces_test {

// SPEC.md §1.5: multiply-accumulates of Conv and Linear (Gemm) layers only.
inline std::int64_t spec_macs(const dnncost::graph::Graph& g) {
    std::int64_t macs = 0;
    for (std::size_t i = 0; i < g.num_nodes(); ++i) {
        const auto& op = g.node(static_cast<int>(i)).op_type;
        if (op == "Conv" || op == "Gemm") macs += dnncost::cost::node_cost(g, static_cast<int>(i)).macs;
    }
    return macs;
}

// SPEC.md §1.5: conv weights (and SE biases), BN gamma and beta, FC weight and bias; BN running
// statistics and graph constants excluded.
inline std::int64_t spec_params(const dnncost::graph::Graph& g) {
    std::int64_t params = 0;
    for (const auto& nd : g.nodes()) {
        std::size_t slots = 0;
        if (nd.op_type == "Conv" || nd.op_type == "Gemm") slots = nd.inputs.size();
        if (nd.op_type == "BatchNormalization") slots = 3;  // x, scale, bias
        for (std::size_t s = 1; s < slots; ++s) params += g.tensor(nd.inputs[s]).elements();
    }
    return params;
}

inline std::vector<std::string> arch_column(const std::string& space) {
    const auto table = dnncost::io::read_csv(std::filesystem::path(DNNCOST_DATA_DIR) / space / "latency_ms.csv");
    const auto col = table.column("arch");
    std::vector<std::string> archs;
    for (const auto& row : table.rows) archs.push_back(row[col]);
    return archs;
}

inline int count_op(const dnncost::graph::Graph& g, const std::string& op) {
    int n = 0;
    for (const auto& nd : g.nodes()) n += nd.op_type == op;
    return n;
}

}  // namespace spaces_test
