#pragma once
/// @file module.hpp
/// The layer contract. `forward` caches what `backward` needs and returns a reference to the
/// module's own output buffer (valid until its next forward); `backward` takes dOutput,
/// adds into the parameters' gradients and returns dInput (again an internal buffer). The
/// input passed to forward must stay alive and unchanged until backward has run: layers keep
/// a pointer to it instead of a copy.
#include <memory>
#include <string>
#include <vector>

#include <dnncost/core/parallel.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/features/batch.hpp>
#include <dnncost/nn/parameter.hpp>
#include <dnncost/nn/tensor.hpp>

namespace dnncost::nn {

/// What a layer may need besides its input: the batch's graph structure (GNN layers and
/// readouts), training mode and randomness (dropout), and threads (GEMMs).
template <class T>
struct Context {
    const features::GraphBatch<T>* batch = nullptr;
    bool training = false;
    Rng* rng = nullptr;
    ThreadPool* pool = nullptr;
    /// Set by pure inference (GnnEstimator::predict_encoded): no backward pass will follow, so layers may
    /// skip what only backward needs (e.g. the ReLU/dropout mask of the fused SAGE block).
    bool no_grad = false;

    const features::GraphBatch<T>& graphs(const char* who) const {
        if (!batch) raise<config_error>(who, ": needs a graph batch in the Context");
        return *batch;
    }
};

/// Base class of every layer; virtual only at layer granularity.
template <class T>
class Module {
public:
    virtual ~Module() = default;
    virtual const Mat<T>& forward(const Mat<T>& x, const Context<T>& ctx) = 0;
    virtual const Mat<T>& backward(const Mat<T>& dy, const Context<T>& ctx) = 0;
    /// Append pointers to this module's parameters (in a fixed order).
    virtual void collect_parameters(std::vector<Parameter<T>*>& /*out*/) {}
    /// Output width for a given input width; throws shape_error if the input width is wrong.
    virtual Index output_width(Index input_width) const = 0;
    virtual std::string kind() const = 0;

    std::vector<Parameter<T>*> parameters() {
        std::vector<Parameter<T>*> p;
        collect_parameters(p);
        return p;
    }
    void zero_grad() {
        for (auto* p : parameters()) p->zero_grad();
    }
};

template <class T>
using ModulePtr = std::unique_ptr<Module<T>>;

namespace detail {
/// Validate layer widths before any member is allocated; returns `in`.
inline Index widths_ok(const char* who, Index in, Index out) {
    if (in < 1 || out < 1) raise<config_error>(who, ": widths must be positive, got ", in, " -> ", out);
    return in;
}
template <class T>
void check_width(const char* who, Index expected, Index got) {
    if (expected != got) raise<shape_error>(who, ": input has ", got, " columns, expected ", expected);
}
}  // namespace detail

/// Modules applied one after the other.
template <class T>
class Sequential final : public Module<T> {
public:
    Sequential() = default;
    void add(ModulePtr<T> m) { m_layers.push_back(std::move(m)); }
    std::size_t size() const { return m_layers.size(); }
    Module<T>& operator[](std::size_t i) { return *m_layers[i]; }

    const Mat<T>& forward(const Mat<T>& x, const Context<T>& ctx) override {
        const Mat<T>* h = &x;
        for (auto& l : m_layers) h = &l->forward(*h, ctx);
        return *h;
    }
    const Mat<T>& backward(const Mat<T>& dy, const Context<T>& ctx) override {
        const Mat<T>* d = &dy;
        for (auto it = m_layers.rbegin(); it != m_layers.rend(); ++it) d = &(*it)->backward(*d, ctx);
        return *d;
    }
    void collect_parameters(std::vector<Parameter<T>*>& out) override {
        for (auto& l : m_layers) l->collect_parameters(out);
    }
    Index output_width(Index w) const override {
        for (const auto& l : m_layers) w = l->output_width(w);
        return w;
    }
    std::string kind() const override {
        std::string s = "Sequential(";
        for (std::size_t i = 0; i < m_layers.size(); ++i) s += (i ? ", " : "") + m_layers[i]->kind();
        return s + ")";
    }

private:
    std::vector<ModulePtr<T>> m_layers;
};

}  // namespace dnncost::nn
