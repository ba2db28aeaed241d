#pragma once
/// @file gin.hpp
/// Graph isomorphism network layer (Xu et al., 2019): y_v = MLP((1 + eps) x_v + sum_u x_u)
/// with a learnable eps and an inner MLP of any depth.
#include <dnncost/nn/gnn/aggregate.hpp>
#include <dnncost/nn/mlp.hpp>

namespace dnncost::nn {

template <class T>
class GinConv final : public Module<T> {
public:
    /// @param mlp_dims inner MLP widths after the input width, e.g. {128, 128}
    GinConv(Index in, const std::vector<Index>& mlp_dims, Rng& rng,
            features::Direction direction = features::Direction::predecessors, Act act = Act::relu)
        : m_in(in), m_dir(direction), m_eps("eps", 1, 1) {
        if (in < 1) raise<config_error>("GinConv: input width must be positive, got ", in);
        if (mlp_dims.empty()) raise<config_error>("GinConv: the inner MLP needs at least one width");
        std::vector<Index> dims{in};
        dims.insert(dims.end(), mlp_dims.begin(), mlp_dims.end());
        m_mlp = make_mlp<T>(dims, act, 0.0, rng);
    }
    const Mat<T>& forward(const Mat<T>& x, const Context<T>& ctx) override {
        detail::check_width<T>("GinConv", m_in, x.cols());
        const auto& nb = ctx.graphs("GinConv").neighbourhood(m_dir);
        m_x = &x;
        m_h = (T(1) + m_eps.value(0, 0)) * x;
        aggregate::weighted_sum<T>(nb, nullptr, x, m_h, true);
        return m_mlp->forward(m_h, ctx);
    }
    const Mat<T>& backward(const Mat<T>& dy, const Context<T>& ctx) override {
        const auto& nb = ctx.graphs("GinConv").neighbourhood(m_dir);
        const Mat<T>& dh = m_mlp->backward(dy, ctx);
        m_eps.grad(0, 0) += (dh.array() * m_x->array()).sum();
        m_dx = (T(1) + m_eps.value(0, 0)) * dh;
        aggregate::weighted_sum_t<T>(nb, nullptr, dh, m_dx, true);
        return m_dx;
    }
    void collect_parameters(std::vector<Parameter<T>*>& out) override {
        out.push_back(&m_eps);
        m_mlp->collect_parameters(out);
    }
    Index output_width(Index in) const override {
        detail::check_width<T>("GinConv", m_in, in);
        return m_mlp->output_width(in);
    }
    std::string kind() const override { return "GinConv"; }

private:
    Index m_in;
    features::Direction m_dir;
    Parameter<T> m_eps;
    std::unique_ptr<Sequential<T>> m_mlp;
    const Mat<T>* m_x = nullptr;
    Mat<T> m_h, m_dx;
};

}  // namespace dnncost::nn
