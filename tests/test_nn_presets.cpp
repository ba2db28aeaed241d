// The GNN presets: compile-time structure, names, the run-time interface and config checks.
// Apart from test_nn_train.cpp: together they need more than 2 GB of compiler memory under ASan.
#include <doctest/doctest.h>

#include <type_traits>

#include <dnncost/estimators/presets.hpp>
#include <dnncost/estimators/registry.hpp>

#include "gradcheck.hpp"
#include "nn_configs.hpp"

using namespace dnncost;
using namespace dnncost::nn;
using dnncost::test::small_sum;

TEST_CASE("presets: compile-time structure, preset names, the run-time interface and config checks") {
    static_assert(estimators::hifi_sage.depth == 7 && estimators::hifi_sage.width == 128);
    static_assert(estimators::brp_nas.conv == Conv::gcn && estimators::brp_nas.width == 600);
    static_assert(config_valid(estimators::hifi_sage) && config_valid(estimators::brp_nas));
    static_assert(std::is_base_of_v<estimators::Estimator, estimators::HiFiSage>);
    CHECK(estimators::HiFiSage::config_hash() != estimators::BrpNas::config_hash());
    // the preset names are the container kinds of saved models and the registry's names
    CHECK(estimators::HiFiSage().preset() == "hifisage");
    CHECK(estimators::BrpNas().preset() == "brpnas");
    CHECK(estimators::GnnEstimator<small_sum>().preset() == "gnn");
    CHECK(estimators::GnnEstimator<small_sum>("custom").preset() == "custom");
    const auto h = estimators::make_estimator("hifisage");
    CHECK(dynamic_cast<const estimators::HiFiSage*>(h.get()) != nullptr);
    CHECK(dynamic_cast<const estimators::BrpNas*>(estimators::make_estimator("brpnas").get()) != nullptr);
    GnnConfig bad = small_sum;
    bad.depth = 0;
    CHECK_FALSE(config_valid(bad));
    CHECK_THROWS_AS(validate(bad), config_error);
    Rng rng(1);
    CHECK_THROWS_AS(GnnModel<float>(bad, 3, rng), config_error);
    // the run-time path builds every conv and readout kind
    for (Conv c : {Conv::sage, Conv::gcn, Conv::gin, Conv::edge_conv, Conv::mr_conv})
        for (Readout ro :
             {Readout::sum, Readout::mean, Readout::max, Readout::sum_mean_max, Readout::lcm, Readout::lcm_sum}) {
            GnnConfig cfg = small_sum;
            cfg.conv = c;
            cfg.readout = ro;
            cfg.width = 8;
            GnnModel<float> m(cfg, 3, rng);
            dnncost::test::TestBatch tb(3);
            features::GraphBatch<float> b;
            std::vector<const features::EncodedGraph*> ptrs;
            for (const auto& g : tb.graphs) ptrs.push_back(&g);
            b.build(ptrs);
            Context<float> ctx{&b, false, nullptr, nullptr};
            CHECK(m.forward(ctx).rows() == 4);
        }
}
