#pragma once
/// @file kernel_sampler_impl.hpp
/// The definitions of kernel_sampler.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by kernel_sampler.hpp in header-only mode.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_kind.hpp>
#include <dnncost/device/kernel_sampler.hpp>
#include <dnncost/device/kind_spec.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/graph/hash.hpp>
#include <dnncost/spaces/registry.hpp>

namespace dnncost::device {

DNNCOST_FUNC graph::Graph kernel_sample_graph(const KernelConfig& c, bool in_network) {
    using Ints = std::vector<std::int64_t>;
    const auto kind = KindSpec::parse(c.kind);
    const std::string_view base = kind.anchor;
    if (!sampleable_family(base)) raise<config_error>("kernel sampler: cannot build a graph of kind '", c.kind, "'");
    // a configuration read from a file may hold anything: a zero stride or group count divides below
    for (const auto& [name, v] : {std::pair{"n", c.n}, {"c", c.c}, {"h", c.h}, {"w", c.w}, {"k", c.k}, {"kh", c.kh},
                                  {"kw", c.kw}, {"sh", c.sh}, {"sw", c.sw}, {"groups", c.groups}})
        if (v < 1) raise<shape_error>("kernel sampler: kind '", c.kind, "': size ", name, " = ", v, " is not positive");
    graph::Graph g("kernel:" + c.kind);
    const bool add = kind.fuses(fused_add), act = kind.fuses(fused_act);
    const graph::Shape image{c.n, c.c, c.h, c.w}, seq{c.n, c.h, c.c};
    const auto& xs = c.tokens ? seq : image;
    int y = -1;
    const auto activation = [&](int t, const std::string& op) {
        const auto s = g.tensor(t).shape;
        if (op == "Clip") {
            const int lo = g.add_weight("act.min", {}), hi = g.add_weight("act.max", {});
            g.set_data(lo, {0.0});
            g.set_data(hi, {6.0});
            return g.add_op("Clip", "act", {t, lo, hi}, s);
        }
        return g.add_op(op, "act", {t}, s);
    };
    if (base == "Conv" || base == "DepthwiseConv") {
        const int x = g.add_input("x", image);
        const auto groups = base == "DepthwiseConv" ? c.c : c.groups;
        const graph::Shape out{c.n, c.k, detail::conv_out(c.h, c.kh, c.sh), detail::conv_out(c.w, c.kw, c.sw)};
        const int wt = g.add_weight("conv.w", {c.k, c.c / groups, c.kh, c.kw});
        y = g.add_op("Conv", "conv", {x, wt, g.add_weight("conv.b", {c.k})}, out,
                     {{"kernel_shape", Ints{c.kh, c.kw}},
                      {"strides", Ints{c.sh, c.sw}},
                      {"pads", Ints{c.kh / 2, c.kw / 2, c.kh / 2, c.kw / 2}},
                      {"group", groups}});
        if (c.batch_norm) {
            std::vector<int> in{y};
            for (const char* p : {"bn.scale", "bn.bias", "bn.mean", "bn.var"}) in.push_back(g.add_weight(p, {c.k}));
            y = g.add_op("BatchNormalization", "bn", in, out);
        }
        if (add) y = g.add_op("Add", "add", {y, g.add_input("residual", out)}, out);
        if (act) y = activation(y, c.act);
    } else if (base == "Gemm") {
        const int x = g.add_input("x", {c.h, c.c});
        y = g.add_op("Gemm", "gemm", {x, g.add_weight("gemm.w", {c.k, c.c}), g.add_weight("gemm.b", {c.k})}, {c.h, c.k},
                     {{"transB", std::int64_t{1}}});
        if (act) y = activation(y, c.act);
    } else if (base == "MatMul") {
        const int x = g.add_input("x", {c.n, c.h, c.c});
        const int b = c.weight_operand ? g.add_weight("matmul.w", {c.c, c.k}) : g.add_input("y", {c.n, c.c, c.k});
        const graph::Shape out{c.n, c.h, c.k};
        y = g.add_op("MatMul", "matmul", {x, b}, out);
        if (add) y = g.add_op("Add", "bias", {y, g.add_weight("matmul.b", {c.k})}, out);
        if (act) y = activation(y, c.act);
    } else if (base == "Pool") {
        const int x = g.add_input("x", image);
        y = g.add_op(c.op.empty() ? "MaxPool" : c.op, "pool", {x},
                     {c.n, c.c, detail::conv_out(c.h, c.kh, c.sh), detail::conv_out(c.w, c.kw, c.sw)},
                     {{"kernel_shape", Ints{c.kh, c.kw}},
                      {"strides", Ints{c.sh, c.sw}},
                      {"pads", Ints{c.kh / 2, c.kw / 2, c.kh / 2, c.kw / 2}}});
        if (act) y = activation(y, c.act);
    } else if (base == "GlobalPool") {
        y = g.add_op(c.op.empty() ? "GlobalAveragePool" : c.op, "pool", {g.add_input("x", image)}, {c.n, c.c, 1, 1});
    } else if (base == "Elementwise") {
        y = g.add_op(c.op.empty() ? "Add" : c.op, "binary", {g.add_input("a", xs), g.add_input("b", xs)}, xs);
        if (act) y = activation(y, c.act);
    } else if (base == "Activation") {
        y = activation(g.add_input("x", xs), c.op.empty() ? "Relu" : c.op);
    } else if (base == "BatchNorm") {
        std::vector<int> in{g.add_input("x", image)};
        for (const char* p : {"bn.scale", "bn.bias", "bn.mean", "bn.var"}) in.push_back(g.add_weight(p, {c.c}));
        y = g.add_op("BatchNormalization", "bn", in, image);
        if (act) y = activation(y, c.act);
    } else if (base == "LayerNorm") {
        const int x = g.add_input("x", seq);
        const graph::Shape r{c.n, c.h, 1};
        const Ints axes{-1};
        const auto scalar = [&](const char* name, double v) {
            const int t = g.add_weight(name, {});
            g.set_data(t, {v});
            return t;
        };
        const int mean = g.add_op("ReduceMean", "ln.mean", {x}, r, {{"axes", axes}});
        const int d = g.add_op("Sub", "ln.sub", {x, mean}, seq);
        const int sq = g.add_op("Pow", "ln.pow", {d, scalar("ln.two", 2.0)}, seq);
        const int var = g.add_op("ReduceMean", "ln.var", {sq}, r, {{"axes", axes}});
        const int ve = g.add_op("Add", "ln.eps", {var, scalar("ln.epsilon", 1e-5)}, r);
        const int sd = g.add_op("Sqrt", "ln.sqrt", {ve}, r);
        const int nrm = g.add_op("Div", "ln.div", {d, sd}, seq);
        const int sc = g.add_op("Mul", "ln.scale", {nrm, g.add_weight("ln.gamma", {c.c})}, seq);
        y = g.add_op("Add", "ln.shift", {sc, g.add_weight("ln.beta", {c.c})}, seq);
        if (act) y = activation(y, c.act);
    } else if (base == "Softmax") {
        // attention scores: [n, heads = w, tokens, tokens]
        const graph::Shape s{c.n, c.w, c.h, c.h};
        y = g.add_op("Softmax", "softmax", {g.add_input("x", s)}, s, {{"axis", std::int64_t{-1}}});
    } else if (base == "Reduce") {
        y = g.add_op(c.op.empty() ? "ReduceMean" : c.op, "reduce", {g.add_input("x", seq)}, {c.n, c.h, 1},
                     {{"axes", Ints{-1}}});
    } else if (base == "Concat") {
        y = g.add_op("Concat", "concat", {g.add_input("a", image), g.add_input("b", {c.n, c.k, c.h, c.w})},
                     {c.n, c.c + c.k, c.h, c.w}, {{"axis", std::int64_t{1}}});
    } else {  // DataMovement: a transpose of a token tensor
        y = g.add_op("Transpose", "transpose", {g.add_input("x", seq)}, {c.n, c.c, c.h}, {{"perm", Ints{0, 2, 1}}});
    }
    if (in_network) {
        auto shape = g.tensor(y).shape;
        Ints axes;
        for (std::size_t a = 1; a < shape.size(); ++a) {
            axes.push_back(static_cast<std::int64_t>(a));
            shape[a] = 1;
        }
        if (!axes.empty()) y = g.add_op("ReduceMean", "in_network", {y}, shape, {{"axes", axes}});
    }
    g.mark_output(y);
    g.validate();
    return g;
}

DNNCOST_FUNC std::optional<KernelConfig> kernel_config(const graph::Graph& g, const KernelGraph& kg, const Kernel& k) {
    if (k.is_reorder() || k.input_shapes.empty() || k.output_shapes.empty()) return std::nullopt;
    const auto kind = kernel_kind(g, kg, k);
    if (!kind.warning.empty() || !sampleable_family(KindSpec::anchor_of(kind.key))) return std::nullopt;
    KernelConfig c;
    c.kind = kind.key;
    const auto& a = g.node(k.nodes.front());
    const auto& x = g.tensor(a.inputs.empty() || a.inputs[0] < 0 ? k.inputs.front() : a.inputs[0]).shape;
    const auto& y = g.tensor(a.outputs.front()).shape;
    const bool act = KindSpec::parse(c.kind).fuses(fused_act);
    for (std::size_t i = 1; i < k.nodes.size(); ++i) {
        const auto& op = g.node(k.nodes[i]).op_type;
        if (act && family_of_op(op) == "Activation") c.act = op;
    }
    for (int v : k.folded) c.batch_norm = c.batch_norm || g.node(v).op_type == "BatchNormalization";
    const auto base = KindSpec::anchor_of(c.kind);
    c.op = a.op_type;
    if (c.act != "Relu" && c.act != "Clip" && c.act != "Sigmoid" && c.act != "HardSwish" && c.act != "Tanh")
        return std::nullopt;
    if (base == "Conv" || base == "DepthwiseConv" || base == "Pool") {
        if (x.size() != 4 || y.size() != 4) return std::nullopt;
        const auto ks = a.attr_ints("kernel_shape");
        const auto st = a.attr_ints("strides", {1, 1});
        if (ks.size() != 2 || st.size() != 2) return std::nullopt;
        c.n = x[0], c.c = x[1], c.h = x[2], c.w = x[3], c.k = y[1];
        c.kh = ks[0], c.kw = ks[1], c.sh = st[0], c.sw = st[1];
        c.groups = a.attr_int("group", 1);
        // rebuilt with "same"-style padding whatever the original's: the input, window and
        // stride are the configuration
        if (c.groups > 1 && base == "Conv" && (c.c % c.groups || c.k % c.groups)) return std::nullopt;
    } else if (base == "Gemm") {
        if (x.size() != 2 || y.size() != 2) return std::nullopt;
        const bool ta = a.attr_int("transA", 0) != 0;
        c.h = ta ? x[1] : x[0];
        c.c = ta ? x[0] : x[1];
        c.k = y[1];
    } else if (base == "MatMul") {
        if (x.size() < 2 || y.size() < 2) return std::nullopt;
        c.n = 1;
        for (std::size_t i = 0; i + 2 < y.size(); ++i) c.n *= y[i];
        c.h = x[x.size() - 2], c.c = x.back(), c.k = y.back();
        c.weight_operand = a.inputs.size() > 1 && a.inputs[1] >= 0 && is_constant_tensor(g, kg.roles, a.inputs[1]);
    } else if (base == "Softmax") {
        if (y.size() < 2 || y.back() != y[y.size() - 2]) return std::nullopt;
        c.h = y.back();
        c.n = 1;
        for (std::size_t i = 0; i + 2 < y.size(); ++i) c.n *= y[i];
        c.w = 1;
    } else if (base == "LayerNorm" || base == "Reduce" || base == "DataMovement") {
        if (x.size() < 2) return std::nullopt;
        c.tokens = true;
        c.c = x.back(), c.h = x[x.size() - 2], c.n = 1;
        for (std::size_t i = 0; i + 2 < x.size(); ++i) c.n *= x[i];
        if (base == "DataMovement" && a.op_type != "Transpose") return std::nullopt;
    } else if (base == "Concat") {
        if (x.size() != 4 || y.size() != 4) return std::nullopt;
        c.n = x[0], c.c = x[1], c.h = x[2], c.w = x[3], c.k = y[1] - x[1];
        if (c.k < 1) return std::nullopt;
    } else {  // GlobalPool, Elementwise, Activation, BatchNorm
        if (x.size() == 4) {
            c.n = x[0], c.c = x[1], c.h = x[2], c.w = x[3];
        } else if (x.size() == 3) {
            c.tokens = true;
            c.n = x[0], c.h = x[1], c.c = x[2];
        } else {
            return std::nullopt;
        }
        if (base == "GlobalPool" || base == "BatchNorm") c.tokens = false;
        if ((base == "GlobalPool" || base == "BatchNorm") && x.size() != 4) return std::nullopt;
        if (base == "Elementwise" && (a.inputs.size() != 2 || g.tensor(a.inputs[1]).shape != x)) return std::nullopt;
    }
    if (c.n != 1 && base != "MatMul" && base != "Softmax") c.n = std::min<std::int64_t>(c.n, 64);
    return c;
}

DNNCOST_FUNC std::size_t add_space_prior(KernelSampler& sampler, std::size_t per_space, Rng& rng) {
    std::size_t added = 0;
    for (const auto& space : spaces::all_spaces())
        for (std::size_t i = 0; i < per_space; ++i)
            added += sampler.add_prior(space.build_graph(space.sample(rng), {}));
    return added;
}

DNNCOST_FUNC std::map<std::string, std::size_t> allocate_samples(const std::map<std::string, double>& errors,
                                                                 std::size_t budget, double threshold) {
    if (!(threshold >= 0) || !std::isfinite(threshold))
        raise<config_error>("allocate_samples: the error threshold must be a finite number >= 0, got ", threshold);
    double worst = threshold;
    for (const auto& [kind, e] : errors)
        if (std::isfinite(e)) worst = std::max(worst, e);
    std::map<std::string, double> weight;
    double total = 0;
    for (const auto& [kind, e] : errors) {
        const double w = std::isfinite(e) ? e : std::max(worst, 2 * threshold);
        if (w > threshold) weight[kind] = w, total += w;
    }
    std::map<std::string, std::size_t> out;
    if (weight.empty() || budget == 0) return out;
    std::vector<std::pair<double, std::string>> remainders;
    std::size_t given = 0;
    for (const auto& [kind, w] : weight) {
        const double share = double(budget) * w / total;
        const auto whole = static_cast<std::size_t>(std::floor(share));
        out[kind] = whole;
        given += whole;
        remainders.emplace_back(share - double(whole), kind);
    }
    std::stable_sort(remainders.begin(), remainders.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t i = 0; given < budget && i < remainders.size(); ++i, ++given) ++out[remainders[i].second];
    return out;
}

DNNCOST_FUNC std::map<std::string, double> adaptive_round(KernelSampler& sampler, std::vector<KernelSample>& samples,
                                                          const KindErrors& evaluate, std::size_t budget, Rng& rng,
                                                          double threshold) {
    if (!evaluate) raise<config_error>("adaptive_round: no error callback");
    auto errors = evaluate(samples);
    for (const auto& [kind, n] : allocate_samples(errors, budget, threshold)) {
        if (n == 0 || !is_known_kernel_kind(kind) || !sampleable_family(KindSpec::anchor_of(kind))) continue;
        for (auto& s : sampler.draw(kind, n, rng)) samples.push_back(std::move(s));
    }
    return errors;
}

}  // namespace dnncost::device

namespace dnncost::device {

DNNCOST_FUNC std::size_t KernelSampler::add_prior(const graph::Graph& g) {
    const auto kg = kernel_graph(g, m_rules);
    std::size_t added = 0;
    for (const auto& k : kg.kernels)
        if (auto c = kernel_config(g, kg, k)) {
            m_prior[c->kind].push_back(std::move(*c));
            ++added;
        }
    return added;
}

DNNCOST_FUNC std::vector<std::string> KernelSampler::kinds() const {
    std::vector<std::string> out;
    for (const auto& kind : known_kernel_kinds()) {
        if (!sampleable_family(KindSpec::anchor_of(kind))) continue;
        KernelConfig c;
        c.kind = kind;
        c.c = c.k = 32, c.h = c.w = 8, c.kh = c.kw = 3;
        shape_defaults(c);
        if (verify(c)) out.push_back(kind);
    }
    return out;
}

DNNCOST_FUNC std::vector<KernelSample> KernelSampler::draw(const std::string& kind, std::size_t count, Rng& rng) {
    if (!is_known_kernel_kind(kind) || !sampleable_family(KindSpec::anchor_of(kind)))
        raise<config_error>("kernel sampler: kind '", kind, "' cannot be sampled");
    std::vector<KernelSample> out;
    int misses = 0;
    const auto prior = m_prior.find(kind);
    while (out.size() < count && misses < m_options.attempts) {
        KernelConfig c;
        if (prior != m_prior.end() && !prior->second.empty() && rng.uniform() < m_options.prior_share)
            c = prior->second[static_cast<std::size_t>(rng.uniform() * static_cast<double>(prior->second.size())) %
                              prior->second.size()];
        else
            c = from_ranges(kind, rng);
        fit(c);
        auto s = make(c);
        if (!s || !m_seen.insert(s->key).second) {
            ++misses;
            continue;
        }
        misses = 0;
        out.push_back(std::move(*s));
    }
    return out;
}

DNNCOST_FUNC std::vector<KernelSample> KernelSampler::draw_all(std::size_t per_kind, Rng& rng) {
    std::vector<KernelSample> out;
    for (const auto& kind : kinds()) {
        auto s = draw(kind, per_kind, rng);
        for (auto& x : s) out.push_back(std::move(x));
    }
    return out;
}

DNNCOST_FUNC std::optional<KernelSample> KernelSampler::make(const KernelConfig& c) const {
    if (!verify(c)) return std::nullopt;
    KernelSample s{c, kernel_sample_graph(c), {}, false};
    s.key = graph::canonical_hash(s.graph).hex();
    return s;
}

DNNCOST_FUNC bool KernelSampler::verify(const KernelConfig& c) const {
    try {
        const auto g = kernel_sample_graph(c);
        const auto kg = kernel_graph(g, m_rules);
        int found = 0;
        for (const auto& k : kg.kernels) {
            if (k.is_reorder()) continue;
            const auto kind = kernel_kind(g, kg, k);
            if (kind.key != c.kind || !kind.warning.empty()) return false;
            ++found;
        }
        return found == 1;
    } catch (const error&) {
        return false;
    }
}

DNNCOST_FUNC KernelConfig KernelSampler::from_ranges(const std::string& kind, Rng& rng) const {
    static constexpr std::int64_t batches[] = {1, 1, 1, 1, 1, 1, 2, 4, 8};
    static constexpr std::int64_t acts[] = {0, 0, 0, 1, 2, 3, 4};
    static const char* act_ops[] = {"Relu", "Clip", "Sigmoid", "HardSwish", "Tanh"};
    KernelConfig c;
    c.kind = kind;
    c.n = one_of(rng, batches);
    c.act = act_ops[static_cast<std::size_t>(one_of(rng, acts))];
    const auto base = KindSpec::anchor_of(kind);
    c.h = spatial(rng);
    c.w = rng.bernoulli(0.9) ? c.h : spatial(rng);
    c.c = channels(rng);
    c.k = channels(rng);
    if (base == "Conv" || base == "DepthwiseConv" || base == "Pool") {
        kernel_size(rng, c);
        c.batch_norm = rng.bernoulli(0.5);
        if (base == "DepthwiseConv") {
            c.k = c.groups = c.c;
        } else if (base == "Conv" && rng.bernoulli(0.2)) {  // grouped
            static constexpr std::int64_t gs[] = {2, 4, 8, 16, 32};
            c.groups = one_of(rng, gs);
            c.c = std::max(c.groups, c.c / c.groups * c.groups);
            c.k = std::max(c.groups, c.k / c.groups * c.groups);
        }
        if (base == "Pool") {
            c.op = rng.bernoulli(0.6) ? "MaxPool" : "AveragePool";
            c.kh = std::max<std::int64_t>(c.kh, 2);
            c.kw = std::max<std::int64_t>(c.kw, 2);
        }
    } else if (base == "Gemm") {
        c.h = rng.bernoulli(0.5) ? one_of(rng, batches) : tokens(rng);
        c.c = model_width(rng);
        c.k = rng.bernoulli(0.3) ? pick(rng, 2, 1000) : model_width(rng);
    } else if (base == "MatMul") {
        c.h = tokens(rng);
        c.weight_operand = !rng.bernoulli(0.3);
        if (c.weight_operand) {
            c.c = model_width(rng);
            c.k = rng.bernoulli(0.5) ? model_width(rng) : c.c * one_of(rng, {1, 3, 4});
        } else {  // attention: (batch x heads) [t, d_head] x [d_head, t] or [t, t] x [t, d_head]
            static constexpr std::int64_t heads[] = {1, 2, 3, 4, 6, 8, 12, 16};
            static constexpr std::int64_t dh[] = {32, 48, 64, 80, 96, 128};
            c.n = c.n * one_of(rng, heads);
            if (rng.bernoulli(0.5))
                c.c = one_of(rng, dh), c.k = c.h;
            else
                c.c = c.h, c.k = one_of(rng, dh);
        }
    } else if (base == "Softmax") {
        static constexpr std::int64_t heads[] = {1, 2, 3, 4, 6, 8, 12, 16};
        c.h = tokens(rng);
        c.w = one_of(rng, heads);
    } else if (base == "LayerNorm" || base == "Reduce" || base == "DataMovement" ||
               ((base == "Activation" || base == "Elementwise") && rng.bernoulli(0.3))) {
        c.tokens = true;
        c.h = tokens(rng);
        c.c = model_width(rng);
    }
    if (base == "Activation") c.op = act_ops[static_cast<std::size_t>(pick(rng, 0, 4))];
    if (base == "Elementwise") c.op = rng.bernoulli(0.7) ? "Add" : "Mul";
    if (base == "GlobalPool") c.op = rng.bernoulli(0.8) ? "GlobalAveragePool" : "GlobalMaxPool";
    if (base == "Reduce") c.op = rng.bernoulli(0.7) ? "ReduceMean" : "ReduceSum";
    shape_defaults(c);
    return c;
}

DNNCOST_FUNC void KernelSampler::fit(KernelConfig& c) const {
    const auto base = KindSpec::anchor_of(c.kind);
    const auto macs = [&] {
        const double spatial = double(c.n) * double(c.h) * double(c.w);
        if (base == "Conv")
            return spatial * double(c.c / std::max<std::int64_t>(c.groups, 1)) * double(c.k) * double(c.kh * c.kw) /
                   double(c.sh * c.sw);
        if (base == "Gemm" || base == "MatMul") return double(c.n) * double(c.h) * double(c.c) * double(c.k);
        if (base == "Softmax") return double(c.n) * double(c.w) * double(c.h) * double(c.h);
        return spatial * double(std::max(c.c, c.k)) * double(c.kh * c.kw);
    };
    const auto elements = [&] {
        if (base == "Softmax") return double(c.n) * double(c.w) * double(c.h) * double(c.h);
        return double(c.n) * double(c.h) * double(c.w) * double(std::max(c.c, c.k));
    };
    for (int i = 0; i < 64 && (macs() > double(m_options.max_macs) || elements() > double(m_options.max_elements));
         ++i) {
        if (c.n > 1)
            c.n = (c.n + 1) / 2;
        else if (c.h > 1 && (c.h >= c.w || c.w == 1))
            c.h = (c.h + 1) / 2;
        else if (c.w > 1)
            c.w = (c.w + 1) / 2;
        else if (base == "DepthwiseConv")
            c.c = c.k = c.groups = std::max<std::int64_t>(1, c.c / 2);
        else
            c.c = std::max(c.groups, c.c / 2 / c.groups * c.groups),
            c.k = std::max(c.groups, c.k / 2 / c.groups * c.groups);
    }
}

}  // namespace dnncost::device
