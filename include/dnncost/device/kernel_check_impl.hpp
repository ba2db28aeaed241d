#pragma once
/// @file kernel_check_impl.hpp
/// The definitions of kernel_check.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by kernel_check.hpp in header-only mode. Needs libonnx.
#include <algorithm>
#include <set>
#include <unordered_map>

#include <dnncost/device/kernel_check.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx/proto.hpp>

DNNCOST_FUNC auto dnncost::device::read_runtime_nodes(const std::string& path) -> std::vector<measure::RuntimeNode> {
    const auto bytes = io::read_file(path);
    ::onnx::ModelProto model;
    if (!model.ParseFromString(bytes)) raise<parse_error>(path, ": not an ONNX model");
    std::vector<measure::RuntimeNode> nodes;
    nodes.reserve(static_cast<std::size_t>(model.graph().node_size()));
    for (const auto& n : model.graph().node()) {
        measure::RuntimeNode r{n.name(), n.op_type(), n.domain(), {}, {}};
        for (const auto& i : n.input()) r.inputs.push_back(i);
        for (const auto& o : n.output()) r.outputs.push_back(o);
        nodes.push_back(std::move(r));
    }
    return nodes;
}

namespace dnncost::device::detail {
/// A value's (or node's) name without the suffix of ONNX Runtime's blocked-layout rewrite.
inline std::string plain_value(const std::string& name) {
    static const std::string suffix = "_nchwc";
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        return name.substr(0, name.size() - suffix.size());
    return name;
}
inline bool is_runtime_reorder(const std::string& op) {
    return op == "ReorderInput" || op == "ReorderOutput" || op == "Transpose_nchwc";
}
}  // namespace dnncost::device::detail

DNNCOST_FUNC auto dnncost::device::check_kernels(const graph::Graph& g, const KernelGraph& kg,
                                                 const std::vector<measure::RuntimeKernel>& kernels,
                                                 const std::vector<measure::RuntimeNode>& nodes) -> KernelCheck {
    using detail::plain_value;
    KernelCheck c;
    // Which pass kernel writes each value, and whether the value leaves it.
    struct Owner {
        int kernel = -1;  ///< -1: a node without a kernel
        bool boundary = false;
        int node = -1;
    };
    std::unordered_map<std::string, Owner> owner;
    for (std::size_t n = 0; n < g.num_nodes(); ++n)
        for (int t : g.node(static_cast<int>(n)).outputs) owner[g.tensor(t).name] = {-1, false, static_cast<int>(n)};
    // reorders by (value, to blocked)
    std::map<std::pair<std::string, bool>, int> reorders;
    for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
        const auto& kernel = kg.kernels[k];
        const int ki = static_cast<int>(k);
        if (kernel.is_layout_reorder()) {
            ++c.pass_reorders;
            if (!kernel.inputs.empty()) reorders[{g.tensor(kernel.inputs[0]).name, kernel.layout.blocked()}] = ki;
            continue;
        }
        ++c.pass_kernels;
        for (int n : kernel.nodes)
            for (int t : g.node(n).outputs) owner[g.tensor(t).name] = {ki, false, n};
        for (int n : kernel.folded)
            for (int t : g.node(n).outputs) owner[g.tensor(t).name] = {ki, false, n};
        for (int t : kernel.outputs) owner[g.tensor(t).name].boundary = true;
    }
    // a node the pass computes in another's kernel (a repeat of it): its values are that kernel's
    for (std::size_t n = 0; n < g.num_nodes() && n < kg.kernel_of_node.size(); ++n)
        if (const int k = kg.kernel_of_node[n]; k >= 0)
            for (int t : g.node(static_cast<int>(n)).outputs)
                if (auto& o = owner[g.tensor(t).name]; o.kernel < 0) o = {k, true, static_cast<int>(n)};
    std::unordered_map<std::string, const measure::RuntimeNode*> node_of;
    // ONNX Runtime's blocked-layout nodes write values of their own names ("reorder_token_7") and
    // are named after the plain value they replace ("<value>_nchwc"): their outputs stand for it
    std::unordered_map<std::string, std::string> alias;
    for (const auto& n : nodes) {
        node_of[n.name] = &n;
        const auto plain = plain_value(n.name);
        if (plain != n.name && n.outputs.size() == 1) alias[n.outputs.front()] = plain;
    }
    const auto value_of = [&](const std::string& v) {
        const auto a = alias.find(v);
        return a != alias.end() ? a->second : plain_value(v);
    };
    std::unordered_map<std::string, int> network_node;
    for (std::size_t n = 0; n < g.num_nodes(); ++n)
        network_node.emplace(g.node(static_cast<int>(n)).name, static_cast<int>(n));

    std::vector<int> runtime_of(kg.kernels.size(), -1);
    // For matching by position: the pass kernels that read each network value, the runtime
    // kernel that wrote each runtime value, and the pass kernel each runtime kernel matched.
    std::unordered_map<std::string, std::vector<int>> readers;
    for (std::size_t k = 0; k < kg.kernels.size(); ++k)
        for (int t : kg.kernels[k].inputs) readers[g.tensor(t).name].push_back(static_cast<int>(k));
    std::unordered_map<std::string, std::size_t> written_by;
    std::vector<int> match_of(kernels.size(), -1);
    // A runtime kernel that wrote no value a pass kernel passes on (a rewrite's Gemm or reshape,
    // whose values the runtime names itself) is the unmatched pass kernel of its kind that reads
    // what it reads: a network value, or the value of the pass kernel matched to its producer.
    // One missing from the optimised graph (a function the runtime expanded later) reads, as far
    // as can be told, what the kernel matched just before it wrote. Kernels a rewrite inserted
    // (no node) may run in another order than the pass's chain of them, so the search goes on
    // through them.
    int previous = -1;  // the pass kernel matched to the runtime kernel before this one
    const auto first_of_kind = [&](const std::string& op, std::vector<int> candidates) {
        for (std::size_t i = 0; i < candidates.size(); ++i) {
            const int k = candidates[i];
            const auto& kernel = kg.kernels[static_cast<std::size_t>(k)];
            if (kernel.kind == op && !kernel.is_layout_reorder() && runtime_of[static_cast<std::size_t>(k)] < 0)
                return k;
            if (kernel.nodes.empty() && !kernel.is_layout_reorder() && candidates.size() < 64)
                for (int s : kg.successors(k))
                    if (std::find(candidates.begin(), candidates.end(), s) == candidates.end()) candidates.push_back(s);
        }
        return -1;
    };
    const auto by_position = [&](const std::string& op, const std::vector<std::string>& inputs) {
        if (inputs.empty() && previous >= 0)
            if (const int k = first_of_kind(op, kg.successors(previous)); k >= 0) return k;
        for (const auto& in : inputs) {
            std::vector<int> candidates;
            if (const auto w = written_by.find(in); w != written_by.end()) {
                if (match_of[w->second] >= 0) candidates = kg.successors(match_of[w->second]);
            } else if (const auto rd = readers.find(value_of(in)); rd != readers.end()) {
                candidates = rd->second;
            }
            if (const int k = first_of_kind(op, std::move(candidates)); k >= 0) return k;
        }
        return -1;
    };
    // runtime kernels not matched by a pass kernel's output, in execution order
    struct Pending {
        std::size_t r;
        std::string op;
        int inside, unkernelled;
        bool duplicate, unknown;
        int inside_node = -1;  ///< the node of `inside` whose value it wrote
    };
    std::vector<Pending> pending;
    // whether node m reads a value of node n
    const auto reads_from = [&](int m, int n) {
        for (int t : g.node(m).inputs)
            if (t >= 0 && g.tensor(t).producer == n) return true;
        return false;
    };
    // a pass kernel the runtime ran inside the runtime kernel of a consumer of its: the rule that
    // joins its last node with the consumer's node reading it. Only where that runtime kernel is
    // of the producer's operator (a convolution that also computes its BatchNormalization or
    // Relu): a consumer's kernel that took in a producer the runtime rewrote (a HardSwish run as
    // HardSigmoid and Mul) is no fusion.
    const auto suggest_fusion = [&](std::size_t k) {
        const int producer = kg.kernels[k].nodes.back();
        for (const auto& e : kg.edges) {
            if (e.src != static_cast<int>(k) || e.dst < 0 || runtime_of[static_cast<std::size_t>(e.dst)] < 0) continue;
            const auto& into = kernels[static_cast<std::size_t>(runtime_of[static_cast<std::size_t>(e.dst)])];
            if (into.op != g.node(producer).op_type) continue;
            for (int m : kg.kernels[static_cast<std::size_t>(e.dst)].nodes) {
                if (!reads_from(m, producer)) continue;
                const auto& consumer = g.node(m);
                bool constant = false, activation = false;
                for (int t : consumer.inputs) {
                    if (t < 0 || g.tensor(t).producer == producer) continue;
                    (g.tensor(t).kind == graph::TensorKind::weight ? constant : activation) = true;
                }
                const std::string pair = g.node(producer).op_type + " " + consumer.op_type;
                if (consumer.op_type == "BatchNormalization" && !activation)
                    ++c.suggestions["fold " + pair + " operands=constant"];
                else
                    ++c.suggestions["fuse " + pair + " operands=" +
                                    (activation ? "activation"
                                     : constant ? "constant"
                                                : "none")];
                return;
            }
        }
    };
    const auto describe = [&](int k) {
        const auto& kernel = kg.kernels[static_cast<std::size_t>(k)];
        if (!kernel.nodes.empty()) return g.node(kernel.nodes.front()).name;
        return kernel.inputs.empty() ? std::string() : g.tensor(kernel.inputs.front()).name;
    };
    for (std::size_t r = 0; r < kernels.size(); ++r) {
        const auto& rk = kernels[r];
        c.runtime_ms += rk.ms;
        std::vector<std::string> outputs, inputs;
        std::string op = rk.op;
        if (const auto it = node_of.find(rk.name); it != node_of.end()) {
            outputs = it->second->outputs;
            inputs = it->second->inputs;
            if (op.empty()) op = it->second->op;
        }
        // A runtime node that kept a network node's name (rewritten in place, or any node when
        // there is no optimised graph) stands for that node's outputs too.
        if (const auto n = network_node.find(rk.name); n != network_node.end()) {
            for (int t : g.node(n->second).outputs) outputs.push_back(g.tensor(t).name);
            if (inputs.empty())
                for (int t : g.node(n->second).inputs)
                    if (t >= 0) inputs.push_back(g.tensor(t).name);
        }
        for (const auto& out : outputs)
            if (owner.find(value_of(out)) == owner.end()) written_by[out] = r;
        if (detail::is_runtime_reorder(op)) {
            ++c.runtime_reorders;
            const bool to_blocked = op != "ReorderOutput";
            const auto it = inputs.empty() ? reorders.end() : reorders.find({value_of(inputs[0]), to_blocked});
            if (it != reorders.end() && runtime_of[static_cast<std::size_t>(it->second)] < 0) {
                runtime_of[static_cast<std::size_t>(it->second)] = static_cast<int>(r);
                match_of[r] = it->second;
                ++c.matched_reorders;
            }
            previous = match_of[r];
            continue;
        }
        ++c.runtime_kernels;
        int matched = -1, inside = -1, unkernelled = -1, inside_node = -1;
        bool duplicate = false;
        for (const auto& out : outputs) {
            const auto o = owner.find(value_of(out));
            if (o == owner.end()) continue;
            if (o->second.kernel < 0) {
                unkernelled = o->second.node;
            } else if (!o->second.boundary) {
                inside = o->second.kernel;
                inside_node = o->second.node;
            } else if (runtime_of[static_cast<std::size_t>(o->second.kernel)] >= 0) {
                duplicate = true;
            } else {
                matched = o->second.kernel;
                break;
            }
        }
        if (matched < 0 && inside < 0 && unkernelled < 0) matched = by_position(op, inputs);
        if (matched >= 0) {
            runtime_of[static_cast<std::size_t>(matched)] = static_cast<int>(r);
            match_of[r] = matched;
            previous = matched;
            ++c.matched;
            c.matched_ms += rk.ms;
            ++c.pairs[kg.kernels[static_cast<std::size_t>(matched)].kind + " -> " + op];
            continue;
        }
        previous = -1;
        pending.push_back({r, op, inside, unkernelled, duplicate, outputs.empty(), inside_node});
    }
    // A runtime kernel that writes a value inside a pass kernel whose outputs no runtime kernel
    // wrote is that kernel: ONNX Runtime names a blocked-layout convolution after its own output
    // even when it also computes the sum and activation that follow it.
    for (auto& p : pending) {
        if (p.inside < 0 || runtime_of[static_cast<std::size_t>(p.inside)] >= 0) continue;
        runtime_of[static_cast<std::size_t>(p.inside)] = static_cast<int>(p.r);
        ++c.matched;
        c.matched_ms += kernels[p.r].ms;
        ++c.pairs[kg.kernels[static_cast<std::size_t>(p.inside)].kind + " -> " + p.op];
        p.r = kernels.size();
    }
    c.runtime_of.assign(kg.kernels.size(), {});
    for (std::size_t k = 0; k < kg.kernels.size(); ++k)
        if (runtime_of[k] >= 0) c.runtime_of[k].push_back(static_cast<std::size_t>(runtime_of[k]));
    for (const auto& p : pending) {
        if (p.r == kernels.size()) continue;
        // its time is the pass kernel's too: the pass prices the parts it fuses as one kernel
        if (p.inside >= 0 && !p.duplicate) c.runtime_of[static_cast<std::size_t>(p.inside)].push_back(p.r);
        std::string why;
        if (p.duplicate)
            why = "writes a value of a pass kernel already matched";
        else if (p.inside >= 0)
            why = "runs separately what the pass fuses into " + kg.kernels[static_cast<std::size_t>(p.inside)].kind +
                  " (" + describe(p.inside) + ")";
        else if (p.unkernelled >= 0)
            why =
                "a kernel for " + g.node(p.unkernelled).op_type + ", which the pass treats as free or computed at load";
        else if (p.unknown)
            why = "not in the optimised graph";
        else
            why = "inserted by the runtime (writes no value of the network)";
        c.extra.push_back({p.op, kernels[p.r].name, why, kernels[p.r].ms});
        if (p.duplicate) continue;
        if (p.inside >= 0 && p.inside_node >= 0) {
            // the runtime wrote a value the pass keeps inside a kernel: it did not fuse its
            // producer with the node of that kernel that reads it
            const auto& kernel = kg.kernels[static_cast<std::size_t>(p.inside)];
            for (int m : kernel.nodes)
                if (reads_from(m, p.inside_node)) {
                    ++c.suggestions["drop fuse " + g.node(p.inside_node).op_type + " " + g.node(m).op_type];
                    break;
                }
        } else if (p.unkernelled >= 0) {
            ++c.suggestions["execute " + g.node(p.unkernelled).op_type];
        }
    }
    for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
        const auto& kernel = kg.kernels[k];
        if (kernel.is_layout_reorder() || runtime_of[k] >= 0) continue;
        // the runtime kernel that took it in: the one matched to a consumer of its outputs
        std::string into;
        for (const auto& e : kg.edges)
            if (e.src == static_cast<int>(k) && runtime_of[static_cast<std::size_t>(e.dst)] >= 0) {
                const auto& rk = kernels[static_cast<std::size_t>(runtime_of[static_cast<std::size_t>(e.dst)])];
                into = rk.op + " (" + rk.name + ")";
                break;
            }
        c.missing.push_back(
            {kernel.kind, describe(static_cast<int>(k)),
             into.empty() ? "the runtime wrote none of its outputs" : "fused by the runtime into " + into});
        if (!into.empty() && !kernel.nodes.empty()) suggest_fusion(k);
    }
    return c;
}
