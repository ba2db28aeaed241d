#pragma once
/// @file kernel_check_impl.hpp
/// The definitions of kernel_check.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by kernel_check.hpp in header-only mode. Needs libonnx.
#include <algorithm>
#include <set>
#include <unordered_map>

#include <dnncost/device/kernel_check.hpp>
#include <dnncost/device/kind_spec.hpp>
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

/// What the operands of `consumer` other than the values in `from` are (as a fusion rule classes
/// them): the consumer of a pair the runtime fused, or ran apart.
inline Operands other_operands(const graph::Graph& g, int consumer, const std::vector<int>& from) {
    bool constant = false, activation = false;
    for (int t : g.node(consumer).inputs) {
        if (t < 0 || std::find(from.begin(), from.end(), t) != from.end()) continue;
        (g.tensor(t).kind == graph::TensorKind::weight ? constant : activation) = true;
    }
    return activation ? Operands::activation : constant ? Operands::constant : Operands::none;
}

/// "A,B,C"
inline std::string comma_joined(const std::vector<std::string>& ops) {
    std::string s;
    for (std::size_t i = 0; i < ops.size(); ++i) s += (i ? "," : "") + ops[i];
    return s;
}

/// The rule changes that runtime kernels of other operators than the pass's point at
/// (KernelCheck::suggestions): rewrites, and the common subexpressions the runtime computes once.
/// A pass kernel runs rewritten when the runtime nodes that compute its outputs from its inputs
/// (the optimised graph followed back from its outputs, through values the runtime names itself,
/// to values of the network) are others than its own: `rewrite KIND AS,...`, with `reshape-rank`
/// where they sit between two Reshape nodes (ONNX Runtime's Gemm on a flattened 3-D input). A
/// kernel whose node the optimised graph keeps but no profiled kernel ran was expanded later (a
/// function): it ran as the kernels missing from the optimised graph that follow its producer's.
/// A pass kernel fused by the runtime into its sole consumer's kernel, where the runtime nodes
/// computing both are others than the consumer's operator, was moved past it (the transpose
/// optimiser moves a Transpose past a Split): `fuse A B` and `rewrite A+B AS,...`; where they are
/// one node of the consumer's operator, the consumer took it in (a pooling that pads): `fuse A B`.
inline void suggest_rewrites(const graph::Graph& g, const KernelGraph& kg,
                             const std::vector<measure::RuntimeKernel>& kernels,
                             const std::vector<measure::RuntimeNode>& nodes, const std::vector<int>& runtime_of,
                             KernelCheck& c) {
    std::unordered_map<std::string, int> tensor_of;
    for (std::size_t t = 0; t < g.num_tensors(); ++t)
        tensor_of.emplace(g.tensor(static_cast<int>(t)).name, static_cast<int>(t));
    std::unordered_map<std::string, std::size_t> writer, profiled;
    for (std::size_t n = 0; n < nodes.size(); ++n)
        for (const auto& o : nodes[n].outputs) writer.emplace(plain_value(o), n);
    for (std::size_t r = 0; r < kernels.size(); ++r) profiled.emplace(kernels[r].name, r);
    const auto is_default_domain = [](const std::string& d) { return d.empty() || d == "ai.onnx"; };
    // the runtime nodes (indices into `nodes`, in their order) that compute `outputs` from
    // `inputs` and constants, writing no other network value; empty when there are none
    const auto computing = [&](const std::vector<int>& outputs, const std::vector<int>& inputs) {
        std::vector<std::size_t> found, stack;
        for (int t : outputs)
            if (const auto w = writer.find(g.tensor(t).name); w != writer.end()) stack.push_back(w->second);
        std::set<std::size_t> seen;
        while (!stack.empty()) {
            const auto n = stack.back();
            stack.pop_back();
            if (!seen.insert(n).second) continue;
            if (seen.size() > 16) return std::vector<std::size_t>{};
            const auto& node = nodes[n];
            if (!is_runtime_reorder(node.op)) found.push_back(n);
            for (const auto& o : node.outputs)
                if (const auto t = tensor_of.find(plain_value(o));
                    t != tensor_of.end() && std::find(outputs.begin(), outputs.end(), t->second) == outputs.end())
                    return std::vector<std::size_t>{};
            for (const auto& in : node.inputs) {
                if (in.empty()) continue;
                if (const auto t = tensor_of.find(plain_value(in)); t != tensor_of.end()) {
                    if (g.tensor(t->second).kind != graph::TensorKind::weight &&
                        std::find(inputs.begin(), inputs.end(), t->second) == inputs.end())
                        return std::vector<std::size_t>{};
                    continue;
                }
                if (const auto w = writer.find(plain_value(in)); w != writer.end()) stack.push_back(w->second);
            }
        }
        std::sort(found.begin(), found.end());
        return found;
    };
    const auto joined_ops = [&](const Kernel& kernel) {
        std::string s;
        for (int n : kernel.nodes) KindSpec::append(s, g.node(n).op_type);
        return s;
    };
    // "A,B,C" with the Reshape pair around a single kernel taken off (`rank`: the input's rank)
    const auto rewrite_line = [&](const std::string& kind, std::vector<std::size_t> found, std::size_t rank) {
        const bool reshaped =
            found.size() >= 3 && nodes[found.front()].op == "Reshape" && nodes[found.back()].op == "Reshape";
        if (reshaped) found = {found.begin() + 1, found.end() - 1};
        std::vector<std::string> ops;
        for (const auto n : found) ops.push_back(nodes[n].op);
        return "rewrite " + kind + " " + comma_joined(ops) + (reshaped ? " reshape-rank=" + std::to_string(rank) : "");
    };
    const auto first_input_rank = [&](const Kernel& kernel) {
        const auto& ins = g.node(kernel.nodes.front()).inputs;
        return ins.empty() || ins[0] < 0 ? std::size_t{0} : g.tensor(ins[0]).shape.size();
    };
    // the nodes of each operator and inputs: the runtime keeps one of those that repeat each other
    std::unordered_map<std::string, std::vector<int>> alike;
    const auto key_of = [&](int n) {
        std::string key = g.node(n).op_type;
        for (int t : g.node(n).inputs) key += " " + std::to_string(t);
        return key;
    };
    for (std::size_t n = 0; n < g.num_nodes(); ++n) alike[key_of(static_cast<int>(n))].push_back(static_cast<int>(n));
    const auto repeated = [&](int n) {
        for (int m : alike.at(key_of(n)))
            if (m != n && g.node(m).attributes == g.node(n).attributes &&
                g.node(m).outputs.size() == g.node(n).outputs.size())
                return true;
        return false;
    };
    std::set<std::string> in_graph;
    for (const auto& n : nodes) in_graph.insert(n.name);
    for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
        const auto& kernel = kg.kernels[k];
        if (kernel.nodes.empty() || kernel.kind != joined_ops(kernel)) continue;  // a pattern, or rewritten
        if (runtime_of[k] >= 0) {
            const auto found = computing(kernel.outputs, kernel.inputs);
            if (found.empty()) continue;
            // the runtime's own kernel for it: a fused convolution, a pooling that pads
            if (found.size() == 1 && (!is_default_domain(nodes[found[0]].domain) ||
                                      std::any_of(kernel.nodes.begin(), kernel.nodes.end(),
                                                  [&](int n) { return g.node(n).op_type == nodes[found[0]].op; })))
                continue;
            if (found.size() == kernel.nodes.size()) {
                bool same = true;
                for (std::size_t i = 0; i < found.size(); ++i)
                    same = same && nodes[found[i]].op == g.node(kernel.nodes[i]).op_type;
                if (same) continue;
            }
            ++c.suggestions[rewrite_line(kernel.kind, found, first_input_rank(kernel))];
            continue;
        }
        const auto& node = g.node(kernel.nodes.front());
        // a repeat of an earlier node: the runtime computed it once
        if (kernel.nodes.size() == 1 && repeated(kernel.nodes.front())) {
            ++c.suggestions["merge-duplicates"];
            continue;
        }
        // kept in the optimised graph, run by no profiled kernel: expanded into the kernels
        // missing from the optimised graph that run after its producer's
        if (kernel.nodes.size() == 1 && !kernel.outputs.empty()) {
            const auto w = writer.find(g.tensor(kernel.outputs.front()).name);
            if (w != writer.end() && !profiled.contains(nodes[w->second].name)) {
                int producer = -1;
                for (int p : kg.predecessors(static_cast<int>(k)))
                    producer = std::max(producer, runtime_of[static_cast<std::size_t>(p)]);
                std::vector<std::string> ops;
                for (std::size_t r = static_cast<std::size_t>(producer + 1); r < kernels.size(); ++r) {
                    if (in_graph.contains(kernels[r].name) || ops.size() >= 8) break;
                    ops.push_back(kernels[r].op);
                }
                if (producer >= 0 && !ops.empty()) ++c.suggestions["rewrite " + kernel.kind + " " + comma_joined(ops)];
                continue;
            }
        }
        // moved past its sole consumer's kernel
        const auto next = kg.successors(static_cast<int>(k));
        if (kernel.nodes.size() != 1 || next.size() != 1) continue;
        const auto& consumer = kg.kernels[static_cast<std::size_t>(next[0])];
        if (consumer.nodes.size() != 1 || runtime_of[static_cast<std::size_t>(next[0])] < 0 ||
            consumer.kind != joined_ops(consumer))
            continue;
        std::vector<int> inputs = kernel.inputs;
        for (int t : consumer.inputs)
            if (std::find(kernel.outputs.begin(), kernel.outputs.end(), t) == kernel.outputs.end()) inputs.push_back(t);
        const auto found = computing(consumer.outputs, inputs);
        const auto& b = g.node(consumer.nodes.front());
        // one node of the consumer's operator: it took the producer in (a pooling that pads)
        const bool absorbed = found.size() == 1 && nodes[found[0]].op == b.op_type;
        if (found.size() < 2 && !absorbed) continue;
        ++c.suggestions["fuse " + node.op_type + " " + b.op_type + " operands=" +
                        std::string(to_string(other_operands(g, consumer.nodes.front(), kernel.outputs)))];
        if (!absorbed)
            ++c.suggestions[rewrite_line(node.op_type + KindSpec::separator + b.op_type, found,
                                         first_input_rank(kernel))];
    }
}

/// KernelCheck::confirmed, and the "drop fuse" suggestions for rules the pass undid where the
/// runtime ran the pair apart too (check_kernels).
inline void weigh_fusions(const graph::Graph& g, const KernelGraph& kg, const FusionRules* rules,
                          const std::vector<int>& runtime_of, KernelCheck& c) {
    const auto reads = [&](int m, int t) {
        return std::find(g.node(m).inputs.begin(), g.node(m).inputs.end(), t) != g.node(m).inputs.end();
    };
    for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
        const auto& kernel = kg.kernels[k];
        if (runtime_of[k] < 0 || c.runtime_of[k].size() != 1) continue;  // parts of it ran apart
        for (std::size_t i = 1; i < kernel.nodes.size(); ++i)
            for (std::size_t j = 0; j < i; ++j)
                for (int t : g.node(kernel.nodes[j]).outputs)
                    if (reads(kernel.nodes[i], t))
                        ++c.confirmed[g.node(kernel.nodes[j]).op_type + " " + g.node(kernel.nodes[i]).op_type];
    }
    if (!rules) return;
    for (const auto& e : kg.edges) {
        if (e.src < 0 || e.dst < 0 || e.tensor < 0) continue;
        const auto s = static_cast<std::size_t>(e.src), d = static_cast<std::size_t>(e.dst);
        const auto& src = kg.kernels[s];
        const auto& dst = kg.kernels[d];
        if (src.nodes.empty() || dst.nodes.empty() || runtime_of[s] < 0 || runtime_of[d] < 0 ||
            runtime_of[s] == runtime_of[d])
            continue;
        const int producer = g.tensor(e.tensor).producer;
        const auto& consumers = g.tensor(e.tensor).consumers;
        if (producer < 0 || g.tensor(e.tensor).is_output || consumers.empty() ||
            std::any_of(consumers.begin(), consumers.end(), [&](int m) { return m != consumers[0]; }) ||
            kg.kernel_of_node[static_cast<std::size_t>(consumers[0])] != e.dst)
            continue;
        const int m = consumers[0];
        const auto* rule = rules->find(g.node(producer).op_type, g.node(m).op_type, other_operands(g, m, {e.tensor}),
                                       KindSpec::anchor_of(src.kind));
        if (rule && !rule->blocked_operands)
            ++c.suggestions["drop fuse " + g.node(producer).op_type + " " + g.node(m).op_type];
    }
}
}  // namespace dnncost::device::detail

DNNCOST_FUNC auto dnncost::device::check_kernels(const graph::Graph& g, const KernelGraph& kg,
                                                 const std::vector<measure::RuntimeKernel>& kernels,
                                                 const std::vector<measure::RuntimeNode>& nodes,
                                                 const FusionRules* rules) -> KernelCheck {
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
                const auto operands = detail::other_operands(g, m, g.node(producer).outputs);
                const std::string pair = g.node(producer).op_type + " " + consumer.op_type;
                if (consumer.op_type == "BatchNormalization" && operands != Operands::activation)
                    ++c.suggestions["fold " + pair + " operands=constant"];
                else
                    ++c.suggestions["fuse " + pair + " operands=" + std::string(to_string(operands))];
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
    detail::suggest_rewrites(g, kg, kernels, nodes, runtime_of, c);
    detail::weigh_fusions(g, kg, rules, runtime_of, c);
    return c;
}
