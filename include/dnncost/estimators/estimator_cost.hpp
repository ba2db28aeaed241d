#pragma once
/// @file estimator_cost.hpp
/// A trained estimator as a cost::CostSource, so that code pricing graphs (a compression
/// search, `dnncost table price`) takes the roofline, a measured table or an estimator alike.
/// The estimator must predict latency in milliseconds. Not differentiable in channel counts.
#include <memory>
#include <string>

#include <dnncost/core/error.hpp>
#include <dnncost/cost/graph_cost.hpp>
#include <dnncost/estimators/estimator.hpp>

namespace dnncost::estimators {

class EstimatorCost : public cost::CostSource {
public:
    explicit EstimatorCost(std::shared_ptr<const Estimator> estimator) : m_estimator(std::move(estimator)) {
        if (!m_estimator) raise<config_error>("EstimatorCost: no estimator");
    }
    std::string name() const override { return m_estimator->preset(); }
    /// The estimator's mean prediction; no per-node figures.
    cost::GraphCost cost(const graph::Graph& g) const override {
        const graph::Graph* one[] = {&g};
        cost::GraphCost r;
        r.total_ms = m_estimator->predict(one).at(0).mean;
        return r;
    }

private:
    std::shared_ptr<const Estimator> m_estimator;
};

}  // namespace dnncost::estimators
