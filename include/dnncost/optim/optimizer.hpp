#pragma once
/// @file optimizer.hpp
/// Optimisers with state per parameter slot (the order of Module::parameters()): Adam,
/// AdamW (decoupled weight decay) and SGD with momentum; global-norm gradient clipping.
/// State can be saved and restored for training checkpoints.
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include <dnncost/core/parallel.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/nn/parameter.hpp>

namespace dnncost::optim {

using nn::Parameter;

/// Scale all gradients so that their global L2 norm is at most max_norm; returns the norm
/// before clipping. max_norm <= 0 disables clipping.
template <class T>
double clip_grad_norm(const std::vector<Parameter<T>*>& params, double max_norm) {
    double sq = 0;
    for (const auto* p : params) sq += static_cast<double>(p->grad.squaredNorm());
    const double norm = std::sqrt(sq);
    if (max_norm > 0 && norm > max_norm) {
        const T s = static_cast<T>(max_norm / (norm + 1e-12));
        for (auto* p : params) p->grad *= s;
    }
    return norm;
}

template <class T>
class Optimizer {
public:
    explicit Optimizer(std::vector<Parameter<T>*> params) : m_params(std::move(params)) {
        if (m_params.empty()) raise<config_error>("Optimizer: no parameters");
    }
    virtual ~Optimizer() = default;
    virtual void step() = 0;
    /// The same update, spread over a pool where the optimiser supports it (same numbers: every
    /// element's update is independent of the others); nullptr runs step().
    virtual void step(ThreadPool* pool) {
        (void)pool;
        step();
    }
    virtual void save_state(io::BinaryWriter& w) const = 0;
    virtual void load_state(io::BinaryReader& r) = 0;
    void zero_grad() {
        for (auto* p : m_params) p->zero_grad();
    }
    double learning_rate() const { return m_lr; }
    void set_learning_rate(double lr) {
        if (!(lr > 0)) raise<config_error>("Optimizer: learning rate must be positive, got ", lr);
        m_lr = lr;
    }
    const std::vector<Parameter<T>*>& parameters() const { return m_params; }

protected:
    static void save_mats(io::BinaryWriter& w, const std::vector<Mat<T>>& ms) {
        w.put_u64(ms.size());
        for (const auto& m : ms) w.put_vector(std::span<const T>(m.data(), static_cast<std::size_t>(m.size())));
    }
    void load_mats(io::BinaryReader& r, std::vector<Mat<T>>& ms, const char* what) {
        const auto n = r.get_u64(what);
        if (n != m_params.size()) r.fail("optimiser state '", what, "' has ", n, " slots, model has ", m_params.size());
        for (std::size_t i = 0; i < n; ++i) {
            const auto v = r.template get_vector<T>(what);
            if (static_cast<Index>(v.size()) != m_params[i]->value.size())
                r.fail("optimiser state '", what, "' slot ", i, " has ", v.size(), " values, expected ",
                       m_params[i]->value.size());
            ms[i] = Eigen::Map<const Mat<T>>(v.data(), m_params[i]->value.rows(), m_params[i]->value.cols());
        }
    }
    std::vector<Parameter<T>*> m_params;
    double m_lr = 1e-3;
};

struct AdamOptions {
    double lr = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = 0.0;
    bool decoupled = false;  ///< true: AdamW (decay applied to the weights, not the gradient)
};

/// Adam (Kingma & Ba, 2015) with bias correction; AdamW (Loshchilov & Hutter, 2019) when
/// options.decoupled.
template <class T>
class Adam final : public Optimizer<T> {
public:
    Adam(std::vector<Parameter<T>*> params, AdamOptions o = {}) : Optimizer<T>(std::move(params)), m_o(o) {
        if (!(o.beta1 >= 0 && o.beta1 < 1) || !(o.beta2 >= 0 && o.beta2 < 1))
            raise<config_error>("Adam: betas must be in [0, 1), got ", o.beta1, ", ", o.beta2);
        if (!(o.eps > 0) || o.weight_decay < 0)
            raise<config_error>("Adam: bad eps ", o.eps, " or weight decay ", o.weight_decay);
        this->set_learning_rate(o.lr);
        for (auto* p : this->m_params) {
            m_m.push_back(Mat<T>::Zero(p->value.rows(), p->value.cols()));
            m_v.push_back(Mat<T>::Zero(p->value.rows(), p->value.cols()));
        }
    }
    void step() override { step(nullptr); }
    /// The parameters are updated in blocks of block_elements elements, in parallel with a pool
    /// of >= 2 threads (the update is element-wise: the same numbers either way).
    void step(ThreadPool* pool) override {
        ++m_t;
        const double bc1 = 1 - std::pow(m_o.beta1, static_cast<double>(m_t));
        const double bc2 = 1 - std::pow(m_o.beta2, static_cast<double>(m_t));
        const T b1 = static_cast<T>(m_o.beta1), b2 = static_cast<T>(m_o.beta2);
        const T step = static_cast<T>(this->m_lr / bc1), sbc2 = static_cast<T>(std::sqrt(bc2)),
                eps = static_cast<T>(m_o.eps);
        const T wd = static_cast<T>(m_o.weight_decay);
        const T lr = static_cast<T>(this->m_lr);
        const auto update = [&](const Block& b) {
            using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
            auto& p = *this->m_params[b.param];
            Eigen::Map<Arr> value(p.value.data() + b.start, b.len), grad(p.grad.data() + b.start, b.len),
                m(m_m[b.param].data() + b.start, b.len), v(m_v[b.param].data() + b.start, b.len);
            if (m_o.decoupled && wd > 0) value *= T(1) - lr * wd;
            if (!m_o.decoupled && wd > 0) grad += wd * value;
            m = b1 * m + (T(1) - b1) * grad;
            v = b2 * v + (T(1) - b2) * grad.square();
            value -= step * m / (v.sqrt() / sbc2 + eps);
        };
        if (m_blocks.empty())
            for (std::size_t i = 0; i < this->m_params.size(); ++i)
                for (Index s = 0; s < this->m_params[i]->value.size(); s += block_elements)
                    m_blocks.push_back({i, s, std::min(block_elements, this->m_params[i]->value.size() - s)});
        // the same blocks either way, so that the same elements take the vector or scalar path
        if (pool && pool->size() > 1)
            pool->parallel_for(0, m_blocks.size(), [&](std::size_t b) { update(m_blocks[b]); });
        else
            for (const auto& b : m_blocks) update(b);
    }
    /// Elements per parallel work item of step(pool): large enough to amortise the dispatch.
    static constexpr Index block_elements = 16384;
    void save_state(io::BinaryWriter& w) const override {
        w.put_string("adam");
        w.put_f64(this->m_lr);
        w.put_i64(m_t);
        this->save_mats(w, m_m);
        this->save_mats(w, m_v);
    }
    void load_state(io::BinaryReader& r) override {
        const auto kind = r.get_string("optimiser kind");
        if (kind != "adam") r.fail("optimiser state is '", kind, "', expected 'adam'");
        this->set_learning_rate(r.get_f64("learning rate"));
        m_t = r.get_i64("adam step");
        this->load_mats(r, m_m, "adam m");
        this->load_mats(r, m_v, "adam v");
    }
    std::int64_t steps() const { return m_t; }

private:
    AdamOptions m_o;
    std::int64_t m_t = 0;
    std::vector<Mat<T>> m_m, m_v;
    struct Block {  ///< a work item of step(): elements [start, start + len) of parameter `param`
        std::size_t param;
        Index start, len;
    };
    std::vector<Block> m_blocks;  ///< the work items of step(), built on first use
};

struct SgdOptions {
    double lr = 1e-2;
    double momentum = 0.0;
    double weight_decay = 0.0;
    bool nesterov = false;
};

/// Stochastic gradient descent with (Nesterov) momentum and L2 weight decay.
template <class T>
class Sgd final : public Optimizer<T> {
public:
    Sgd(std::vector<Parameter<T>*> params, SgdOptions o = {}) : Optimizer<T>(std::move(params)), m_o(o) {
        if (!(o.momentum >= 0 && o.momentum < 1))
            raise<config_error>("Sgd: momentum must be in [0, 1), got ", o.momentum);
        if (o.weight_decay < 0) raise<config_error>("Sgd: weight decay must be >= 0, got ", o.weight_decay);
        this->set_learning_rate(o.lr);
        for (auto* p : this->m_params) m_buf.push_back(Mat<T>::Zero(p->value.rows(), p->value.cols()));
    }
    using Optimizer<T>::step;
    void step() override {
        const T lr = static_cast<T>(this->m_lr), mu = static_cast<T>(m_o.momentum),
                wd = static_cast<T>(m_o.weight_decay);
        for (std::size_t i = 0; i < this->m_params.size(); ++i) {
            auto& p = *this->m_params[i];
            Mat<T> g = p.grad;
            if (wd > 0) g += wd * p.value;
            if (mu > 0) {
                m_buf[i] = mu * m_buf[i] + g;
                if (m_o.nesterov)
                    g += mu * m_buf[i];
                else
                    g = m_buf[i];
            }
            p.value -= lr * g;
        }
    }
    void save_state(io::BinaryWriter& w) const override {
        w.put_string("sgd");
        w.put_f64(this->m_lr);
        this->save_mats(w, m_buf);
    }
    void load_state(io::BinaryReader& r) override {
        const auto kind = r.get_string("optimiser kind");
        if (kind != "sgd") r.fail("optimiser state is '", kind, "', expected 'sgd'");
        this->set_learning_rate(r.get_f64("learning rate"));
        this->load_mats(r, m_buf, "sgd momentum");
    }

private:
    SgdOptions m_o;
    std::vector<Mat<T>> m_buf;
};

}  // namespace dnncost::optim
