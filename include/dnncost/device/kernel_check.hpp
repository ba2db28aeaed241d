#pragma once
/// @file kernel_check.hpp
/// The kernel pass (device/kernel_graph.hpp) checked against the kernels a runtime executed: its
/// profile (RuntimeKernel, runner_protocol.hpp) and the nodes of its optimised graph.
///
/// A runtime kernel and a pass kernel are the same kernel when the runtime node writes one of the
/// values the pass kernel passes on (its outputs); tensor names are the network's own, which
/// runtimes keep for the values that survive their rewrites. ONNX Runtime's blocked-layout
/// rewrite names a value or a node "X_nchwc" after the plain value X it replaces, so that
/// suffix is ignored, and the output of a node so named stands for X. What is
/// left over on either side says where the pass and the runtime disagree:
/// - a pass kernel none of whose outputs the runtime wrote was fused by the runtime into another
///   kernel: a fusion the pass misses;
/// - a runtime kernel that writes a value inside a pass kernel runs separately what the pass
///   fuses; one that writes a value of a node the pass gives no kernel (reshape-like, or computed
///   at load) is a kernel the pass does not count; one that writes no value of the network at all
///   (a layout reorder, a cast) was inserted by the runtime.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/measure/runner_protocol.hpp>

namespace dnncost::device {

/// The nodes of an ONNX file's graph (a runtime's optimised model); the file's weights are not
/// kept. @throws io_error when it cannot be read, parse_error when it is not an ONNX model
DNNCOST_FUNC std::vector<measure::RuntimeNode> read_runtime_nodes(const std::string& path);

/// One disagreement, for reports: which kernel, of what, and why.
struct KernelMismatch {
    std::string kernel;  ///< the pass kernel's kind, or the runtime kernel's operator
    std::string name;    ///< the pass kernel's first node, or the runtime node's name
    std::string why;
    double ms = 0;  ///< the runtime kernel's time (runtime side only)
};

struct KernelCheck {
    std::size_t pass_kernels = 0, runtime_kernels = 0, matched = 0;
    std::size_t pass_reorders = 0, runtime_reorders = 0, matched_reorders = 0;
    double runtime_ms = 0, matched_ms = 0;
    /// Pass kernels the runtime fused into others (fusions the pass misses).
    std::vector<KernelMismatch> missing;
    /// Runtime kernels matched by no pass kernel.
    std::vector<KernelMismatch> extra;
    /// Matched pairs by "pass kind -> runtime operator", with their counts.
    std::map<std::string, std::size_t> pairs;
    /// Changes to the rules that the disagreements point at, as rule lines (docs/device_model.md,
    /// "The rule format") with how many kernels each accounts for: "fuse A B ..." or "fold A B
    /// operands=constant" where the runtime ran a pass kernel of A's inside its consumer B's,
    /// "drop fuse A B" where it ran apart what the pass fuses, "execute OP" where it ran a kernel
    /// for an operator the pass treats as free, "rewrite KIND AS,..." where the runtime computed a
    /// pass kernel with kernels of other operators (and "fuse A B" with it where it moved A past
    /// B), "merge-duplicates" where it computed a repeated node once. A starting point for a rule
    /// file, to be checked again; layouts are not found this way.
    std::map<std::string, std::size_t> suggestions;
    /// The fusions of the pass that the runtime ran as one kernel too, "PRODUCER CONSUMER" with
    /// their counts: what speaks against dropping a fusion rule (one "drop fuse" suggestion
    /// counts where a rule fuses a pair in some kernels and is undone in others).
    std::map<std::string, std::size_t> confirmed;
    /// Per kernel of the pass (reorders included, in its order): the runtime kernels (indices into
    /// the profile) that ran it, the one matched first and then any that ran separately a part
    /// the pass fuses into it; empty when none did.
    std::vector<std::vector<std::size_t>> runtime_of;
    /// Matched kernels over the kernels of either side (1: the same kernels).
    double agreement() const {
        const auto all = pass_kernels + runtime_kernels - matched;
        return all ? static_cast<double>(matched) / static_cast<double>(all) : 1.0;
    }
};

/// Compare the kernel graph `kg` of `g` with the runtime's kernels (in execution order) and the
/// nodes of its optimised graph; without nodes, runtime kernels are taken to be named after the
/// network's nodes (a runtime that did not rewrite the graph). With the `rules` `kg` was formed
/// under, a pair of nodes that a rule fuses but that the pass left in two kernels (it undid the
/// fusion: a cycle, or the consumer joined another kernel) and the runtime ran apart too points
/// at dropping that rule ("drop fuse A B"); the rules' other conditions (a sole consumer, the
/// blocked operands) must hold, so only the rule itself stands against the runtime.
DNNCOST_FUNC KernelCheck check_kernels(const graph::Graph& g, const KernelGraph& kg,
                                       const std::vector<measure::RuntimeKernel>& kernels,
                                       const std::vector<measure::RuntimeNode>& nodes,
                                       const FusionRules* rules = nullptr);

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/kernel_check_impl.hpp>
#endif
