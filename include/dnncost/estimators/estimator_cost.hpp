#pragma once
/// @file estimator_cost.hpp
/// A trained estimator as a cost::CostSource, so that code pricing graphs (a compression
/// search, `dnncost table price`, a mapping platform) takes the roofline, a measured table or an
/// estimator alike. The estimator must predict latency in milliseconds.
///
/// An estimator that prices graphs in more detail (a kernel-level device model) implements
/// cost::CostSource as well; the adapter then hands on its breakdown and channel derivatives.
/// Any other estimator gives the total only and is not differentiable in channel counts.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/cost/graph_cost.hpp>
#include <dnncost/estimators/estimator.hpp>

namespace dnncost::estimators {

class EstimatorCost : public cost::CostSource {
public:
    explicit EstimatorCost(std::shared_ptr<const Estimator> estimator)
        : m_estimator(std::move(estimator)), m_detail(dynamic_cast<const cost::CostSource*>(m_estimator.get())) {
        if (!m_estimator) raise<config_error>("EstimatorCost: no estimator");
    }
    std::string name() const override { return m_estimator->preset(); }
    const Estimator& estimator() const { return *m_estimator; }

    std::optional<std::vector<cost::ChannelGradient>> channel_gradient(const graph::Graph& g) const override {
        return m_detail ? m_detail->channel_gradient(g) : std::nullopt;
    }

protected:
    /// The estimator's own pricing when it has one, otherwise its mean prediction.
    cost::GraphCost price(const graph::Graph& g) const override {
        if (m_detail) return m_detail->cost(g);
        const graph::Graph* one[] = {&g};
        cost::GraphCost r;
        r.total_ms = m_estimator->predict(one).at(0).mean;
        return r;
    }

private:
    std::shared_ptr<const Estimator> m_estimator;
    const cost::CostSource* m_detail;  ///< the estimator as a cost source, or null
};

}  // namespace dnncost::estimators
