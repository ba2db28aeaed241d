// No estimator returns a negative or non-finite latency: a linear model extrapolating below zero
// predicts zero; a corrupted file resealed with a valid checksum, whose prediction is far below
// zero or not finite, is an error naming the model and the network.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <dnncost/cost/analytic.hpp>
#include <dnncost/estimators/registry.hpp>
#include <dnncost/estimators/training.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/train/dataset.hpp>

using namespace dnncost;

namespace {

/// The first rows of the bundled NB201 latencies (pixel3 column).
train::Dataset nb201_rows() {
    train::DatasetOptions o;
    o.space = "nb201";
    o.columns = {"pixel3"};
    auto ds = train::load_dataset(std::string(DNNCOST_DATA_DIR) + "/nb201/latency_ms.csv", o);
    REQUIRE(ds.size() > 120);
    return ds;
}

/// `bytes` (an additive model) with its intercept replaced by `value`, resealed with a valid checksum.
std::string with_intercept(const std::string& bytes, double value) {
    auto c = io::read_container(bytes, "additive", "<test>");
    // the payload ends with intercept, target scale, lambda (f64 each), the loss and a flag byte
    io::BinaryWriter w;
    w.put_f64(value);
    c.payload.replace(c.payload.size() - 26, 8, w.bytes());
    return io::write_container(c.kind, c.config_hash, c.payload, c.metadata);
}

/// The message of the prediction_error `f` throws; empty (and a failed check) when it throws none.
template <class F>
std::string prediction_message(F&& f) {
    try {
        f();
    } catch (const estimators::prediction_error& e) {
        return e.what();
    }
    FAIL_CHECK("no prediction_error");
    return {};
}

}  // namespace

TEST_CASE(
    "a corrupt model resealed with a valid checksum: its negative or infinite prediction is an error naming "
    "the model and the network") {
    const auto ds = nb201_rows();
    std::vector<std::size_t> train_items, val_items;
    for (std::size_t i = 0; i < 60; ++i) train_items.push_back(i);
    for (std::size_t i = 60; i < 80; ++i) val_items.push_back(i);
    auto est = estimators::make_estimator("additive");
    est->fit(ds.subset(train_items, "pixel3"), ds.subset(val_items, "pixel3"), {});
    auto g = nb201::build_graph(
        "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|"
        "skip_connect~2|");
    g.set_name("cell-a");
    const graph::Graph* one[] = {&g};
    const double honest = est->predict(one).front().mean;
    CHECK(honest > 0);

    const auto negative = estimators::load_estimator(with_intercept(est->serialize(), -2e33), "bad.dnnc");
    const auto message = prediction_message([&] { (void)negative->predict(one); });
    CHECK(message.find("bad.dnnc (additive model): predicts -") != std::string::npos);
    CHECK(message.find("for network 'cell-a' (1 of 1)") != std::string::npos);
    CHECK(message.find("far below zero: the model file is corrupt") != std::string::npos);
    CHECK_THROWS_AS(negative->predict_mean(one), estimators::prediction_error);

    // finite in the file, infinite once scaled: not a number either
    const auto overflow = estimators::load_estimator(with_intercept(est->serialize(), 1.7e308), "big.dnnc");
    REQUIRE(overflow->predict(std::span<const graph::Graph* const>{}).empty());
    try {
        (void)overflow->predict(one);
        FAIL("an infinite prediction was returned");
    } catch (const estimators::prediction_error& e) {
        CHECK(e.index() == 0);
        CHECK(std::isinf(e.value()));
        CHECK(std::string(e.what()).find("big.dnnc (additive model)") != std::string::npos);
        CHECK(std::string(e.what()).find("not a number") != std::string::npos);
    }

    // through the data-set workflow the message names the item's key, file and line
    estimators::UnknownOperators unknown;
    CHECK_THROWS_WITH_AS(estimators::predict_items(*negative, ds, {100, 101}, unknown),
                         doctest::Contains("latency_ms.csv:102)"), estimators::prediction_error);
}

TEST_CASE(
    "a legitimately fitted additive model extrapolating below zero on a real network predicts zero, not a "
    "negative latency") {
    // Hand-built: on these NB201 cells the "latency" falls as the MACs grow (2 ms minus a share
    // of the MACs, between 1 and 2 ms in training), so a free-signed linear fit learns a negative
    // cost per MAC; ResNet-50 has some 30 times the MACs of the largest cell.
    const auto ds = nb201_rows();
    std::vector<double> macs;
    for (std::size_t i = 0; i < 120; ++i) macs.push_back(cost::total_cost(*ds.graph(i)).macs);
    const double most = *std::max_element(macs.begin(), macs.end());
    train::TrainData tr, va;
    std::vector<std::shared_ptr<const graph::Graph>> keep;
    for (std::size_t i = 0; i < 120; ++i) {
        keep.push_back(ds.graph(i));
        auto& d = i < 90 ? tr : va;
        d.graphs.push_back(keep.back().get());
        d.targets.push_back(2.0 - macs[i] / most);
    }
    auto est = estimators::make_estimator("additive", {{"coefficients", "free"}});
    est->fit(tr, va, {});
    for (const auto& p : est->predict(va.graphs)) CHECK(p.mean > 0);  // it fits its own range

    auto resnet = io::import_onnx(std::string(DNNCOST_DATA_DIR) + "/onnx/resnet50.onnx");
    resnet.set_name("resnet50");
    REQUIRE(cost::total_cost(resnet).macs > 10 * most);
    const graph::Graph* one[] = {&resnet};
    // a straight line continued to ResNet-50's MACs falls below zero: the prediction is floored
    // at zero, the least a network costs, never a negative latency
    const auto p = est->predict(one);
    CHECK(p.front().mean == 0.0);
    CHECK(est->predict_mean(one).front() == 0.0);
}

TEST_CASE("preset options: the registry checks them and the presets honour them") {
    CHECK_THROWS_WITH_AS(estimators::make_estimator("additive", {{"keep", "trained"}}),
                         doctest::Contains("preset 'additive' has no option 'keep' (its options: coefficients)"),
                         config_error);
    CHECK_THROWS_WITH_AS(estimators::make_estimator("perfsage", {{"keep", "untrained"}}),
                         doctest::Contains("preset 'perfsage' has no option 'keep'"), config_error);
    CHECK_THROWS_WITH_AS(estimators::make_estimator("hifisage", {{"keep", "best"}}),
                         doctest::Contains("option 'keep' is 'best', expected one of auto, trained, untrained"),
                         config_error);
    CHECK_THROWS_AS(estimators::make_ensemble("hifisage", 2, estimators::EnsembleEstimator::Resample::none,
                                              {{"coefficients", "free"}}),
                    config_error);
    const auto options = estimators::preset_options();
    for (const auto& name : estimators::estimator_names()) CHECK(options.count(name) == 1);
    CHECK(options.at("hifisage").size() == 2);
    CHECK(options.at("perfsage").size() == 1);
}
