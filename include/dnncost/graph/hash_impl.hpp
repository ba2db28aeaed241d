#pragma once
/// @file hash_impl.hpp
/// The definitions of hash.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by hash.hpp in header-only mode.
#include <dnncost/graph/hash.hpp>

DNNCOST_FUNC auto dnncost::graph::detail::hashing::attribute(Hasher& h, const Attribute& a) -> void {
    h.text(a.name).word(a.value.index());
    std::visit(
        [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::int64_t>)
                h.integer(v);
            else if constexpr (std::is_same_v<T, double>)
                h.real(v);
            else if constexpr (std::is_same_v<T, std::string>)
                h.text(v);
            else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
                h.word(v.size());
                for (auto x : v) h.integer(x);
            } else if constexpr (std::is_same_v<T, std::vector<double>>) {
                h.word(v.size());
                for (auto x : v) h.real(x);
            } else {
                h.word(v.size());
                for (const auto& x : v) h.text(x);
            }
        },
        a.value);
}

DNNCOST_FUNC auto dnncost::graph::canonical_hash(const Graph& g) -> GraphHash {
    using detail::hashing::Hasher;
    const auto order = g.topological_order();
    std::vector<GraphHash> tensor_hash(g.num_tensors()), node_hash(g.num_nodes());
    for (std::size_t t = 0; t < g.num_tensors(); ++t) {
        const auto& ten = g.tensor(static_cast<int>(t));
        if (ten.kind == TensorKind::activation) continue;
        Hasher h(ten.kind == TensorKind::input ? 1 : 2);
        detail::hashing::tensor_type(h, ten);
        if (!detail::hashing::is_floating_point(ten.dtype)) {
            h.word(ten.data.size());
            for (double v : ten.data) h.real(v);
        }
        tensor_hash[t] = h.finish();
    }
    const GraphHash omitted = Hasher(3).finish();
    for (const int v : order) {
        const auto& nd = g.node(v);
        Hasher h(4);
        h.text(nd.op_type);
        std::vector<const Attribute*> attrs;
        for (const auto& a : nd.attributes) attrs.push_back(&a);
        std::sort(attrs.begin(), attrs.end(), [](const Attribute* a, const Attribute* b) { return a->name < b->name; });
        h.word(attrs.size());
        for (const auto* a : attrs) detail::hashing::attribute(h, *a);
        h.word(nd.inputs.size());
        for (const int t : nd.inputs) h.hash(t < 0 ? omitted : tensor_hash[static_cast<std::size_t>(t)]);
        h.word(nd.outputs.size());
        node_hash[static_cast<std::size_t>(v)] = h.finish();
        for (std::size_t slot = 0; slot < nd.outputs.size(); ++slot) {
            const auto t = static_cast<std::size_t>(nd.outputs[slot]);
            Hasher th(5);
            th.hash(node_hash[static_cast<std::size_t>(v)]).word(slot);
            detail::hashing::tensor_type(th, g.tensor(static_cast<int>(t)));
            tensor_hash[t] = th.finish();
        }
    }
    std::vector<GraphHash> nodes = node_hash, outputs, inputs;
    for (const int t : g.outputs()) outputs.push_back(tensor_hash[static_cast<std::size_t>(t)]);
    for (const int t : g.inputs()) inputs.push_back(tensor_hash[static_cast<std::size_t>(t)]);
    std::sort(nodes.begin(), nodes.end());
    std::sort(outputs.begin(), outputs.end());
    std::sort(inputs.begin(), inputs.end());
    Hasher h(6);
    h.text("dnncost-graph-hash-1");
    for (const auto* list : {&nodes, &inputs, &outputs}) {
        h.word(list->size());
        for (const auto& x : *list) h.hash(x);
    }
    return h.finish();
}
