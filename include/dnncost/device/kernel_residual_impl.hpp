#pragma once
/// @file kernel_residual_impl.hpp
/// The definitions of kernel_residual.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by kernel_residual.hpp in header-only mode.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/device/kernel_features.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_residual.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/features/batch.hpp>
#include <dnncost/features/encode.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/nn/activations.hpp>
#include <dnncost/nn/gnn/sage.hpp>
#include <dnncost/nn/linear.hpp>
#include <dnncost/nn/module.hpp>
#include <dnncost/nn/readout/pooling.hpp>

namespace dnncost::device {

DNNCOST_FUNC KernelResidual::KernelResidual(KernelResidualOptions options) : m_o(options) {
    if (options.hidden < 1 || options.hidden > 4096)
        raise<config_error>("KernelResidual: hidden must be in [1, 4096], got ", options.hidden);
    if (options.layers < 1 || options.layers > 16)
        raise<config_error>("KernelResidual: layers must be in [1, 16], got ", options.layers);
    if (!(std::isfinite(options.learning_rate) && options.learning_rate > 0))
        raise<config_error>("KernelResidual: learning_rate must be positive, got ", options.learning_rate);
    if (!(std::isfinite(options.weight_decay) && options.weight_decay >= 0))
        raise<config_error>("KernelResidual: weight_decay must be >= 0, got ", options.weight_decay);
    if (options.max_epochs < 1)
        raise<config_error>("KernelResidual: max_epochs must be >= 1, got ", options.max_epochs);
    if (options.patience < 1) raise<config_error>("KernelResidual: patience must be >= 1, got ", options.patience);
}

DNNCOST_FUNC KernelResidual::KernelResidual(const KernelResidual& other) : m_o(other.m_o) {
    io::BinaryWriter w;
    other.save(w);
    io::BinaryReader r(w.bytes(), "KernelResidual copy");
    *this = load(r);
}

DNNCOST_FUNC KernelResidual::KernelResidual(KernelResidual&&) noexcept = default;
DNNCOST_FUNC KernelResidual& KernelResidual::operator=(KernelResidual&&) noexcept = default;
DNNCOST_FUNC KernelResidual::~KernelResidual() = default;

DNNCOST_FUNC estimators::FitResult KernelResidual::fit(const std::vector<KernelGraphSample>& train,
                                                       std::span<const double> train_ms,
                                                       const std::vector<KernelGraphSample>& validation,
                                                       std::span<const double> validation_ms,
                                                       const estimators::FitOptions& options) {
    if (!detail::kernel_residual_training)
        raise<config_error>(
            "KernelResidual::fit: the residual's training is not compiled into this program; include "
            "<dnncost/device/kernel_residual_training.hpp> (header-only mode) or link dnncost::compiled");
    return detail::kernel_residual_training(*this, train, train_ms, validation, validation_ms, options);
}

DNNCOST_FUNC double KernelResidual::factor(const KernelGraphSample& s) const {
    if (is_zero()) return 1.0;
    check_sample(s, 0, "predicted", m_in);
    if (s.features.rows() == 0) return 1.0;
    const auto e = encode(s);
    const features::EncodedGraph* p = &e;
    const double r = residuals(std::span<const features::EncodedGraph* const>(&p, 1)).front();
    return std::clamp(std::exp(r), 0.25, 4.0);  // exp(+-log 4) may round just outside
}

DNNCOST_FUNC std::vector<double> KernelResidual::factors(const std::vector<KernelGraphSample>& samples) const {
    std::vector<double> out(samples.size(), 1.0);
    if (is_zero()) return out;
    std::vector<features::EncodedGraph> enc;
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i < samples.size(); ++i) {
        check_sample(samples[i], i, "predicted", m_in);
        if (samples[i].features.rows() == 0) continue;
        enc.push_back(encode(samples[i]));
        at.push_back(i);
    }
    const auto r = residuals(enc);
    for (std::size_t j = 0; j < r.size(); ++j) out[at[j]] = std::clamp(std::exp(r[j]), 0.25, 4.0);
    return out;
}

DNNCOST_FUNC void KernelResidual::save(io::BinaryWriter& w) const {
    w.put_u32(format_version);
    w.put_i32(m_o.hidden);
    w.put_i32(m_o.layers);
    w.put_f64(m_o.learning_rate);
    w.put_f64(m_o.weight_decay);
    w.put_i32(m_o.max_epochs);
    w.put_i32(m_o.patience);
    w.put_u64(m_o.seed);
    w.put_bool(fitted());
    if (!fitted()) return;
    w.put_bool(m_zero);
    w.put_i64(m_in);
    w.put_f64_vector(m_mean);
    w.put_f64_vector(m_scale);
    for (const auto* p : all_parameters())
        w.put_f64_vector(std::span<const double>(p->value.data(), static_cast<std::size_t>(p->value.size())));
}

DNNCOST_FUNC KernelResidual KernelResidual::load(io::BinaryReader& r) {
    if (const auto v = r.get_u32("kernel residual version"); v != format_version)
        r.fail("kernel residual: unsupported version ", v, " (expected ", format_version, ")");
    KernelResidualOptions o;
    o.hidden = r.get_i32("kernel residual hidden");
    o.layers = r.get_i32("kernel residual layers");
    o.learning_rate = r.get_f64("kernel residual learning rate");
    o.weight_decay = r.get_f64("kernel residual weight decay");
    o.max_epochs = r.get_i32("kernel residual max epochs");
    o.patience = r.get_i32("kernel residual patience");
    o.seed = r.get_u64("kernel residual seed");
    std::unique_ptr<KernelResidual> m;
    try {
        m = std::make_unique<KernelResidual>(o);
    } catch (const config_error& e) {
        r.fail("kernel residual: bad options: ", e.what());
    }
    if (!r.get_bool("kernel residual fitted")) return std::move(*m);
    m->m_zero = r.get_bool("kernel residual zero");
    const auto in = r.get_i64("kernel residual input width");
    if (in < 1 || in > 100000) r.fail("kernel residual: input width ", in, " outside [1, 100000]");
    auto mean = r.get_finite_f64_vector("kernel residual feature means");
    auto scale = r.get_finite_f64_vector("kernel residual feature scales");
    if (mean.size() != static_cast<std::size_t>(in) || scale.size() != static_cast<std::size_t>(in))
        r.fail("kernel residual: ", mean.size(), " means and ", scale.size(), " scales for ", in, " features");
    for (std::size_t j = 0; j < scale.size(); ++j)
        if (!(scale[j] > 0)) r.fail("kernel residual: feature ", j, " has scale ", scale[j], ", not positive");
    Rng rng(o.seed);
    m->build(static_cast<Index>(in), rng);
    m->m_mean = std::move(mean);
    m->m_scale = std::move(scale);
    for (auto* p : m->parameters()) {
        const auto v = r.get_finite_f64_vector("kernel residual weights");
        if (v.size() != static_cast<std::size_t>(p->value.size()))
            r.fail("kernel residual: parameter '", p->name, "' has ", v.size(), " values, expected ", p->value.size());
        std::copy(v.begin(), v.end(), p->value.data());
    }
    return std::move(*m);
}

DNNCOST_FUNC void KernelResidual::initialise(const std::vector<KernelGraphSample>& train, std::uint64_t seed) {
    if (train.empty()) raise<config_error>("KernelResidual::initialise: no training networks");
    const Index f = train.front().features.cols();
    std::vector<double> sum(static_cast<std::size_t>(f), 0.0), sq(static_cast<std::size_t>(f), 0.0);
    double rows = 0;
    for (std::size_t i = 0; i < train.size(); ++i) {
        check_sample(train[i], i, "training", f);
        for (Index k = 0; k < train[i].features.rows(); ++k)
            for (Index j = 0; j < f; ++j) {
                const double v = train[i].features(k, j);
                sum[static_cast<std::size_t>(j)] += v;
                sq[static_cast<std::size_t>(j)] += v * v;
            }
        rows += static_cast<double>(train[i].features.rows());
    }
    if (f < 1 || rows < 1) raise<shape_error>("KernelResidual::initialise: the training networks have no kernels");
    m_mean.assign(static_cast<std::size_t>(f), 0.0);
    m_scale.assign(static_cast<std::size_t>(f), 1.0);
    for (std::size_t j = 0; j < m_mean.size(); ++j) {
        m_mean[j] = sum[j] / rows;
        const double var = std::max(0.0, sq[j] / rows - m_mean[j] * m_mean[j]);
        // a constant column stays at zero after centring; any scale will do
        m_scale[j] = std::sqrt(var) > 1e-12 * std::max(1.0, std::abs(m_mean[j])) ? std::sqrt(var) : 1.0;
    }
    Rng rng(seed);
    build(f, rng);
    m_zero = false;
}

DNNCOST_FUNC double KernelResidual::loss_and_gradient(const std::vector<KernelGraphSample>& samples,
                                                      std::span<const double> measured_ms) {
    if (!fitted()) raise<config_error>("KernelResidual::loss_and_gradient: the model is not initialised");
    check_set(samples, measured_ms, "training");
    const auto enc = encode_set(samples);
    std::vector<const features::EncodedGraph*> ptrs;
    for (const auto& e : enc) ptrs.push_back(&e);
    return batch_loss_and_gradient(ptrs, log_ratios(samples, measured_ms));
}

DNNCOST_FUNC std::vector<nn::Parameter<double>*> KernelResidual::all_parameters() const {
    std::vector<nn::Parameter<double>*> p;
    if (m_convs) m_convs->collect_parameters(p);
    if (m_head) m_head->collect_parameters(p);
    return p;
}

DNNCOST_FUNC void KernelResidual::build(Index in, Rng& rng) {
    m_in = in;
    m_convs = std::make_unique<nn::Sequential<double>>();
    Index w = in;
    for (int l = 0; l < m_o.layers; ++l) {
        m_convs->add(
            std::make_unique<nn::SageConv<double>>(w, m_o.hidden, rng, nn::Aggr::mean, features::Direction::both));
        m_convs->add(std::make_unique<nn::Activation<double, nn::act::Relu>>());
        w = m_o.hidden;
    }
    m_pool = std::make_unique<nn::Pooling<double>>(nn::pool_mean | nn::pool_max);
    m_head = std::make_unique<nn::Linear<double>>(2 * w, 1, rng);
    m_head->weight().value.setZero();
    m_head->bias().value.setZero();
}

DNNCOST_FUNC void KernelResidual::check_sample(const KernelGraphSample& s, std::size_t i, const char* set,
                                               Index width) {
    const auto where = [&] { return dnncost::concat("KernelResidual: ", set, " network ", i); };
    const Index n = s.features.rows();
    if (width >= 0 && s.features.cols() != width && n > 0)
        raise<shape_error>(where(), " has ", s.features.cols(), " feature columns, expected ", width);
    if (s.kernel_ms.size() != static_cast<std::size_t>(n))
        raise<shape_error>(where(), ": ", s.kernel_ms.size(), " kernel latencies for ", n, " feature rows");
    if (!s.features.allFinite()) raise<config_error>(where(), " has a feature that is not finite");
    for (std::size_t k = 0; k < s.kernel_ms.size(); ++k)
        if (!(std::isfinite(s.kernel_ms[k]) && s.kernel_ms[k] > 0))
            raise<config_error>(where(), ": kernel ", k, " latency ", s.kernel_ms[k], " ms is not positive");
    if (!(std::isfinite(s.sum_ms) && s.sum_ms > 0))
        raise<config_error>(where(), ": kernel sum ", s.sum_ms, " ms is not positive and finite");
    for (const auto& [a, b] : s.edges)
        if (a < 0 || b < 0 || a >= n || b >= n)
            raise<shape_error>(where(), ": edge (", a, ", ", b, ") outside its ", n, " kernels");
}

DNNCOST_FUNC void KernelResidual::check_set(const std::vector<KernelGraphSample>& set, std::span<const double> ms,
                                            const char* name) const {
    if (ms.size() != set.size())
        raise<shape_error>("KernelResidual: ", ms.size(), " ", name, " latencies for ", set.size(), " networks");
    const Index width = set.empty() ? -1 : set.front().features.cols();
    for (std::size_t i = 0; i < set.size(); ++i) {
        check_sample(set[i], i, name, width);
        if (set[i].features.rows() == 0)
            raise<shape_error>("KernelResidual: ", name, " network ", i, " has no kernels");
        if (!(std::isfinite(ms[i]) && ms[i] > 0))
            raise<config_error>("KernelResidual: ", name, " network ", i, " measured ", ms[i],
                                " ms, not positive and finite");
    }
}

DNNCOST_FUNC std::vector<double> KernelResidual::log_ratios(const std::vector<KernelGraphSample>& set,
                                                            std::span<const double> ms) {
    std::vector<double> t(set.size());
    for (std::size_t i = 0; i < set.size(); ++i) t[i] = std::log(ms[i] / set[i].sum_ms);
    return t;
}

DNNCOST_FUNC double KernelResidual::mean_square(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x * x;
    return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

DNNCOST_FUNC features::EncodedGraph KernelResidual::encode(const KernelGraphSample& s) const {
    features::EncodedGraph e;
    e.num_nodes = static_cast<int>(s.features.rows());
    e.num_features = static_cast<int>(m_in);
    e.x.resize(static_cast<std::size_t>(e.num_nodes) * static_cast<std::size_t>(m_in));
    for (Index k = 0; k < s.features.rows(); ++k)
        for (Index j = 0; j < m_in; ++j) {
            const auto c = static_cast<std::size_t>(j);
            const double z = (s.features(k, j) - m_mean[c]) / m_scale[c];
            e.x[static_cast<std::size_t>(k) * static_cast<std::size_t>(m_in) + c] =
                static_cast<float>(std::clamp(z, -feature_clip, feature_clip));
        }
    e.edges = s.edges;
    return e;
}

DNNCOST_FUNC std::vector<features::EncodedGraph> KernelResidual::encode_set(
    const std::vector<KernelGraphSample>& set) const {
    std::vector<features::EncodedGraph> out;
    out.reserve(set.size());
    for (const auto& s : set) out.push_back(encode(s));
    return out;
}

DNNCOST_FUNC const Mat<double>& KernelResidual::forward(const features::GraphBatch<double>& batch,
                                                        nn::Context<double>& ctx) const {
    ctx.batch = &batch;
    const Mat<double>& h = m_convs->forward(batch.x, ctx);
    return m_head->forward(m_pool->forward(h, ctx), ctx);
}

DNNCOST_FUNC std::vector<double> KernelResidual::residuals(
    std::span<const features::EncodedGraph* const> graphs) const {
    std::vector<double> r;
    for (std::size_t b0 = 0; b0 < graphs.size(); b0 += 256) {
        const auto part = graphs.subspan(b0, std::min<std::size_t>(256, graphs.size() - b0));
        const features::GraphBatch<double> batch(part);
        nn::Context<double> ctx;
        ctx.no_grad = true;
        const auto& z = forward(batch, ctx);
        for (Index i = 0; i < z.rows(); ++i) r.push_back(squash(z(i, 0)));
    }
    return r;
}

DNNCOST_FUNC std::vector<double> KernelResidual::residuals(const std::vector<features::EncodedGraph>& enc) const {
    std::vector<const features::EncodedGraph*> ptrs;
    for (const auto& e : enc) ptrs.push_back(&e);
    return residuals(std::span<const features::EncodedGraph* const>(ptrs));
}

DNNCOST_FUNC double KernelResidual::batch_loss_and_gradient(std::span<const features::EncodedGraph* const> graphs,
                                                            const std::vector<double>& t) {
    const features::GraphBatch<double> batch(graphs);
    nn::Context<double> ctx;
    ctx.training = true;
    for (auto* p : parameters()) p->zero_grad();
    const Mat<double>& z = forward(batch, ctx);
    const double n = static_cast<double>(z.rows());
    Mat<double> dz(z.rows(), 1);
    double loss = 0;
    for (Index i = 0; i < z.rows(); ++i) {
        const double th = std::tanh(z(i, 0) / bound);
        const double d = bound * th - t[static_cast<std::size_t>(i)];
        loss += d * d;
        dz(i, 0) = 2 * d * (1 - th * th) / n;
    }
    const Mat<double>& dpool = m_head->backward(dz, ctx);
    m_convs->backward(m_pool->backward(dpool, ctx), ctx);
    return loss / n;
}

namespace detail {
inline const KernelResidualOps kernel_residual_ops_impl{
    .load = [](io::BinaryReader& r) { return std::make_shared<KernelResidual>(KernelResidual::load(r)); },
    .save = [](const KernelResidual& m, io::BinaryWriter& w) { m.save(w); },
    .copy = [](const KernelResidual& m) { return std::make_shared<KernelResidual>(m); },
    .is_zero = [](const KernelResidual& m) { return m.is_zero(); },
    .factors = [](const KernelResidual& m, const std::vector<KernelGraphSample>& s) { return m.factors(s); },
};
inline const bool kernel_residual_ops_registered = [] {
    kernel_residual_ops = &kernel_residual_ops_impl;
    return true;
}();
}  // namespace detail

}  // namespace dnncost::device
