#pragma once
/// @file op_table_build_impl.hpp
/// The definitions of op_table_build.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by op_table_build.hpp in header-only mode.
#include <dnncost/measure/op_table_build.hpp>

DNNCOST_FUNC auto dnncost::measure::table_models(const std::vector<graph::Graph>& graphs, const GridSpec& grid,
                                                 bool sink) -> std::vector<TableModel> {
    struct Plan {
        const graph::Graph* g = nullptr;
        int node = -1;
        std::set<std::int64_t> cs, ks;
    };
    std::map<cost::OpKey, Plan> plans;
    for (const auto& g : graphs)
        for (std::size_t i = 0; i < g.num_nodes(); ++i) {
            const auto cfg = cost::op_config(g, static_cast<int>(i));
            if (!cfg) continue;
            auto& p = plans[cfg->key];
            if (!p.g) {
                p.g = &g;
                p.node = static_cast<int>(i);
            }
            const auto multiple = cfg->key.groups > 1 ? cfg->key.groups : 1;
            for (auto c : grid.points(cfg->c, multiple)) p.cs.insert(c);
            if (cost::spans_two_channel_counts(cfg->key))
                for (auto k : grid.points(cfg->k, multiple)) p.ks.insert(k);
        }
    std::size_t count = 0;  // counted before any is built
    for (const auto& [key, p] : plans) count += p.cs.size() * (cost::spans_two_channel_counts(key) ? p.ks.size() : 1);
    if (count > max_table_models)
        raise<config_error>("table build: grid '", grid.kind == GridSpec::Kind::uniform ? "uniform:" : "proportional:",
                            grid.step, "' makes ", count, " single-operator models, more than the limit of ",
                            max_table_models, "; choose a coarser grid");
    std::vector<TableModel> out;
    out.reserve(count);
    for (const auto& [key, p] : plans) {
        const bool two = cost::spans_two_channel_counts(key);
        for (auto c : p.cs)
            for (auto k : two ? p.ks : std::set<std::int64_t>{c}) {
                TableModel m{key, c, k, cost::single_op_graph(*p.g, p.node, c, k, sink), {}, {}, {}};
                m.store_key = network_key(m.graph);
                if (sink) {
                    const auto& out = m.graph.tensor(m.graph.node(0).outputs[0]);
                    m.sink = cost::sink_graph(out.shape, out.dtype);
                    m.sink_key = network_key(m.sink);
                }
                out.push_back(std::move(m));
            }
    }
    return out;
}

DNNCOST_FUNC auto dnncost::measure::table_from_store(const std::vector<TableModel>& models, const ResultsStore& store,
                                                     std::vector<std::string>* missing) -> cost::OpTable {
    cost::OpTable t;
    for (const auto& m : models) {
        const auto* r = store.result(m.store_key);
        const auto* s = m.sink_key.empty() ? nullptr : store.result(m.sink_key);
        const bool sink_ok = m.sink_key.empty() || (s && s->ok());
        if (r && r->ok() && sink_ok) {
            t.add({m.key, m.c, m.k, std::max(0.0, r->latency_ms - (s ? s->latency_ms : 0.0))});
        } else if (missing) {
            const auto* bad = r && r->ok() ? s : r;
            missing->push_back(cost::to_string(m.key) + " c=" + std::to_string(m.c) + " k=" + std::to_string(m.k) +
                               ": " + (bad ? std::string(to_string(bad->status)) : std::string("not measured")));
        }
    }
    return t;
}

DNNCOST_FUNC auto dnncost::measure::table_networks(const std::vector<TableModel>& models, const ResultsStore& store,
                                                   const std::filesystem::path& dir, std::uint64_t seed, bool force)
    -> std::vector<Network> {
    std::vector<Network> out;
    std::set<std::string> seen;
    const auto add = [&](const graph::Graph& g, const std::string& key, std::string id) {
        if (!seen.insert(key).second) return;  // sinks are shared by operators of one output shape
        Network n{key, std::move(id), {}};
        const auto* r = store.result(key);
        if (force || !(r && r->ok())) {
            n.model = dir / (key + ".onnx");
            if (!std::filesystem::exists(n.model)) write_model_for_runner(g, n.model, seed);
        }
        out.push_back(std::move(n));
    };
    for (const auto& m : models) {
        add(m.graph, m.store_key,
            "op_table:" + cost::to_string(m.key) + " c=" + std::to_string(m.c) + " k=" + std::to_string(m.k));
        if (!m.sink_key.empty()) {
            const auto& x = m.sink.tensor(m.sink.inputs().at(0));
            add(m.sink, m.sink_key, "op_table:sink " + graph::to_string(x.shape));
        }
    }
    return out;
}
