#pragma once
/// @file analysis.hpp
/// What a graph compiler can tell about each operator before running it (constant, zero,
/// identity-like, live), found by constant propagation over the operator graph.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::graph {

/// Per-node result of analyse().
///
/// - constant: the output does not depend on any graph input (every input is a weight or a
///   constant), so a compiler folds the operator away;
/// - zero: a constant known to be all zeros. Sources are weights whose data are all zeros;
///   Mul/MatMul with a zero operand, zero-preserving operators (Relu, pooling, Flatten, ...) of
///   a zero, Conv/Gemm of a zero without a (non-zero) bias, and Add/Sum/Concat of zeros stay zero;
/// - identity-like: the output equals one non-constant input (Add of zeros, Identity), so a
///   compiler forwards that input and drops the operator;
/// - live: a non-constant operator that can influence a graph output through non-constant
///   operators; a compiler removes the others as dead code.
///
/// `kept` = live and not identity-like: the operators a graph compiler still runs. For
/// NAS-Bench-201 these are exactly the operators of the pruned graph (tests/test_nb201.cpp).
struct NodeAnalysis {
    bool constant = false;
    bool zero = false;
    bool identity_like = false;
    bool live = false;
    bool kept() const { return live && !identity_like; }
};

namespace detail {
inline bool one_of(std::string_view op, std::initializer_list<std::string_view> set) {
    return std::find(set.begin(), set.end(), op) != set.end();
}
/// Operators f with f(0) = 0 elementwise or by construction (pooling, layout changes).
DNNCOST_FUNC bool preserves_zero(std::string_view op);
}  // namespace detail

/// Constant propagation and dead-code analysis; one entry per node, in node order.
DNNCOST_FUNC std::vector<NodeAnalysis> analyse(const Graph& g);

}  // namespace dnncost::graph

#if !defined(DNNCOST_COMPILED)
#include <dnncost/graph/analysis_impl.hpp>
#endif
