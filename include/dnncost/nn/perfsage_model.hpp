#pragma once
/// @file perfsage_model.hpp
/// The network of PerfSAGE: a per-operator-type input transform (TypedInput) and ReLU, `depth`
/// GraphSAGE layers h' = relu([h | SUM of the neighbours' h] W + b) over the undirected operator
/// graph, a max readout, and a fully connected head (`head_layers` hidden layers of
/// `head_width`, ReLU) with one output per target.
#include <cmath>
#include <memory>
#include <span>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/nn/activations.hpp>
#include <dnncost/nn/gnn/sage.hpp>
#include <dnncost/nn/heads.hpp>
#include <dnncost/nn/module.hpp>
#include <dnncost/nn/readout/pooling.hpp>
#include <dnncost/nn/typed_input.hpp>

namespace dnncost::nn {

struct PerfSageShape {
    int types = 1;          ///< operator types of the input transform
    int embedding = 8;      ///< width of the type embedding
    int width = 128;        ///< node state width
    int depth = 8;          ///< GraphSAGE layers
    int head_layers = 4;    ///< hidden fully connected layers
    int head_width = 1024;  ///< their width
    int targets = 1;        ///< outputs
};

template <class T>
class PerfSageModel {
public:
    PerfSageModel(const PerfSageShape& s, Index in_features, Rng& rng) : m_shape(s) {
        if (s.depth < 1 || s.head_layers < 0 || s.targets < 1 || s.width < 1 || s.head_width < 1)
            raise<config_error>("PerfSageModel: depth, targets and widths must be positive");
        m_input = std::make_unique<TypedInput<T>>(in_features, s.types, s.embedding, s.width, rng);
        m_act.push_back(make_activation<T>(Act::relu));
        for (int d = 0; d < s.depth; ++d) {
            m_conv.push_back(
                std::make_unique<SageConv<T>>(s.width, s.width, rng, Aggr::sum, features::Direction::both));
            m_act.push_back(make_activation<T>(Act::relu));
        }
        m_readout = std::make_unique<Pooling<T>>(pool_max);
        m_head = make_regression_head<T>(s.width, s.head_layers + 1, s.head_width, s.targets, Act::relu, 0.0, rng);
    }
    const PerfSageShape& shape() const { return m_shape; }
    TypedInput<T>& input() { return *m_input; }

    /// Predictions (graphs x targets) for ctx.batch, whose nodes have operator types `types`.
    const Mat<T>& forward(std::span<const int> types, const Context<T>& ctx) {
        const auto& b = ctx.graphs("PerfSageModel");
        m_input->set_types(types);
        const Mat<T>* h = &m_act[0]->forward(m_input->forward(b.x, ctx), ctx);
        for (std::size_t d = 0; d < m_conv.size(); ++d) h = &m_act[d + 1]->forward(m_conv[d]->forward(*h, ctx), ctx);
        return m_head->forward(m_readout->forward(*h, ctx), ctx);
    }
    void backward(const Mat<T>& dpred, const Context<T>& ctx) {
        const Mat<T>* d = &m_readout->backward(m_head->backward(dpred, ctx), ctx);
        for (std::size_t k = m_conv.size(); k-- > 0;) d = &m_conv[k]->backward(m_act[k + 1]->backward(*d, ctx), ctx);
        m_input->backward(m_act[0]->backward(*d, ctx), ctx);
    }
    /// Data-dependent initialisation: scale each GraphSAGE layer's weights so that its output has
    /// the root-mean-square of its input on this batch. A SUM over neighbours multiplies the scale
    /// by about the degree at every layer, which over 8 layers would start the head thousands of
    /// times off the targets' scale.
    void calibrate(std::span<const int> types, const Context<T>& ctx) {
        const auto& b = ctx.graphs("PerfSageModel");
        m_input->set_types(types);
        const Mat<T>* h = &m_act[0]->forward(m_input->forward(b.x, ctx), ctx);
        for (std::size_t d = 0; d < m_conv.size(); ++d) {
            const double in = rms(*h);
            const double out = rms(m_conv[d]->forward(*h, ctx));
            if (in > 0 && out > 0)
                for (auto* p : m_conv[d]->parameters()) p->value *= static_cast<T>(in / out);
            h = &m_act[d + 1]->forward(m_conv[d]->forward(*h, ctx), ctx);
        }
    }
    std::vector<Parameter<T>*> parameters() {
        std::vector<Parameter<T>*> p;
        m_input->collect_parameters(p);
        for (auto& c : m_conv) c->collect_parameters(p);
        m_head->collect_parameters(p);
        return p;
    }

private:
    static double rms(const Mat<T>& m) {
        return m.size() ? std::sqrt(static_cast<double>(m.squaredNorm()) / static_cast<double>(m.size())) : 0.0;
    }
    PerfSageShape m_shape;
    std::unique_ptr<TypedInput<T>> m_input;
    std::vector<std::unique_ptr<SageConv<T>>> m_conv;
    std::vector<ModulePtr<T>> m_act;
    ModulePtr<T> m_readout;
    ModulePtr<T> m_head;
};

}  // namespace dnncost::nn
