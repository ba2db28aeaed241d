#pragma once
/// @file residual.hpp
/// Residual wrapper y = f(x) + x, or f(x) + x P with a learned projection when f changes the
/// width.
#include <dnncost/nn/linear.hpp>

namespace dnncost::nn {

template <class T>
class Residual final : public Module<T> {
public:
    /// @param in input width; a projection is added when inner's output width differs
    Residual(ModulePtr<T> inner, Index in, Rng& rng) : m_inner(std::move(inner)), m_in(in) {
        if (!m_inner) raise<config_error>("Residual: no inner module");
        const Index out = m_inner->output_width(in);
        if (out != in) m_proj = std::make_unique<Linear<T>>(in, out, rng, Init::xavier, false);
    }
    const Mat<T>& forward(const Mat<T>& x, const Context<T>& ctx) override {
        const Mat<T>& f = m_inner->forward(x, ctx);
        if (m_proj)
            m_y = f + m_proj->forward(x, ctx);
        else
            m_y = f + x;
        return m_y;
    }
    const Mat<T>& backward(const Mat<T>& dy, const Context<T>& ctx) override {
        m_dx = m_inner->backward(dy, ctx);
        if (m_proj)
            m_dx += m_proj->backward(dy, ctx);
        else
            m_dx += dy;
        return m_dx;
    }
    void collect_parameters(std::vector<Parameter<T>*>& out) override {
        m_inner->collect_parameters(out);
        if (m_proj) m_proj->collect_parameters(out);
    }
    Index output_width(Index in) const override { return m_inner->output_width(in); }
    std::string kind() const override { return "Residual(" + m_inner->kind() + ")"; }

private:
    ModulePtr<T> m_inner;
    Index m_in;
    std::unique_ptr<Linear<T>> m_proj;
    Mat<T> m_y, m_dx;
};

}  // namespace dnncost::nn
