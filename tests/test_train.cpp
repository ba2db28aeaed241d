// Data sets, splits, the additive baseline, ensembles and the estimator registry.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <dnncost/core/parallel.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/estimators/additive.hpp>
#include <dnncost/estimators/ensemble.hpp>
#include <dnncost/estimators/registry.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/train/dataset.hpp>
#include <dnncost/train/metrics.hpp>
#include <dnncost/train/split.hpp>

#include "messages.hpp"

using namespace dnncost;
using dnncost::test::contains;
using dnncost::test::message_of;
using doctest::Approx;

namespace {
/// A latency that is an exact linear function of the per-cell op counts.
double linear_latency(const nb201::Arch& a) {
    const auto c = nb201::op_counts(a);
    return 2.0 + 0.1 * c[1] + 0.4 * c[2] + 1.3 * c[3] + 0.25 * c[4];
}

/// CSV text of `n` distinct random architectures; the second column follows linear_latency
/// times (1 + noise * N(0,1)).
std::string synthetic_csv(std::size_t n, std::uint64_t seed, double noise = 0.0) {
    Rng rng(seed);
    std::set<std::int64_t> used;
    std::string csv = "arch,lat\n";
    while (used.size() < n) {
        const auto idx = static_cast<std::int64_t>(rng.below(nb201::num_architectures));
        if (!used.insert(idx).second) continue;
        const auto a = nb201::from_index(idx);
        const double y = linear_latency(a) * (1.0 + noise * rng.normal());
        csv += nb201::to_string(a) + "," + std::to_string(y) + "\n";
    }
    return csv;
}

train::Dataset synthetic(std::size_t n, std::uint64_t seed, double noise = 0.0) {
    train::DatasetOptions o;
    o.threads = 1;
    return train::load_dataset_text(synthetic_csv(n, seed, noise), "synthetic.csv", ".", o);
}

std::vector<double> means(const std::vector<estimators::Prediction>& p) {
    std::vector<double> m;
    for (const auto& x : p) m.push_back(x.mean);
    return m;
}

const std::string good =
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|";
const std::string good2 =
    "|avg_pool_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|nor_conv_1x1~0|skip_connect~1|skip_connect~2|";
}  // namespace

TEST_CASE("dataset: bad rows are reported with line and reason, and skipped") {
    const std::string csv = "arch,a,b\n" + good + ",1.5,2\n" +  // line 2: fine
                            good2 + ",nan,2\n" +                // line 3: NaN
                            good2 + ",-1,2\n" +                 // line 4: non-positive
                            "|bogus~0|,1,2\n" +                 // line 5: bad arch
                            good2 + ",1\n" +                    // line 6: wrong field count
                            good2 + ",,2\n" +                   // line 7: empty
                            good2 + ",3,4\r\n";                 // line 8: fine (CRLF)
    train::DatasetOptions o;
    o.threads = 1;
    const auto ds = train::load_dataset_text(csv, "d.csv", ".", o);
    CHECK(ds.size() == 2);
    CHECK(ds.line(0) == 2);
    CHECK(ds.line(1) == 8);
    CHECK(ds.column("b") == std::vector<double>{2, 4});
    REQUIRE(ds.skipped().size() == 5);
    const std::vector<std::size_t> lines{3, 4, 5, 6, 7};
    for (std::size_t i = 0; i < lines.size(); ++i) CHECK(ds.skipped()[i].line == lines[i]);
    CHECK(contains(ds.skipped()[0].reason, "NaN"));
    CHECK(contains(ds.skipped()[1].reason, "non-positive"));
    CHECK(contains(ds.skipped()[2].reason, "bad architecture"));
    CHECK(contains(ds.skipped()[3].reason, "expected 3 fields"));
    CHECK(contains(ds.skipped()[4].reason, "empty"));

    // Only the columns asked for are checked: column b is fine on lines 3, 4 and 7.
    o.columns = {"b"};
    CHECK(train::load_dataset_text(csv, "d.csv", ".", o).size() == 5);

    o.columns = {};
    o.strict = true;
    const auto msg = message_of([&] { train::load_dataset_text(csv, "d.csv", ".", o); });
    CHECK(contains(msg, "d.csv:3"));
    CHECK(contains(msg, "NaN"));
    CHECK(contains(msg, "4 more bad rows"));
}

TEST_CASE("dataset: missing column, empty data set and malformed CSV are errors naming the file") {
    train::DatasetOptions o;
    o.threads = 1;
    o.columns = {"pixel3"};
    const auto csv = "arch,lat\n" + good + ",1\n";
    const auto missing = message_of([&] { train::load_dataset_text(csv, "m.csv", ".", o); });
    CHECK(contains(missing, "m.csv"));
    CHECK(contains(missing, "pixel3"));
    o.columns = {};
    const auto empty = message_of([&] { train::load_dataset_text("arch,lat\n" + good + ",0\n", "e.csv", ".", o); });
    CHECK(contains(empty, "e.csv: no usable rows"));
    CHECK(contains(empty, "line 2"));
    CHECK(contains(message_of([&] { train::load_dataset_text("arch,lat\n\"x,1\n", "q.csv", ".", o); }), "q.csv:2"));
    CHECK_THROWS_AS(train::load_dataset("/nonexistent/dir/data.csv", o), io_error);
}

TEST_CASE("dataset: NB201 graphs are built on demand, shared while alive, equal to a direct build") {
    const std::string csv = "arch,lat\n" + good + ",1\n" + good2 + ",2\n" + good + ",3\n";
    train::DatasetOptions o;
    o.threads = 2;
    const auto ds = train::load_dataset_text(csv, "lazy.csv", ".", o);
    REQUIRE(ds.size() == 3);
    CHECK(ds.distinct_graphs() == 2);
    std::weak_ptr<const graph::Graph> first;
    {
        const auto a = ds.graph(0);
        first = a;
        CHECK(*a == nb201::build_graph(good));
        CHECK(ds.graph(2) == a);  // same network, same graph while someone holds it
        CHECK(ds.graph(1) != a);
        const auto set = ds.graphs(std::vector<std::size_t>{2, 1, 0});
        REQUIRE(set.size() == 3);
        CHECK(set[0] == a.get());
        CHECK(set[2] == a.get());
        CHECK(*set[1] == nb201::build_graph(good2));
    }
    CHECK(first.expired());  // nobody holds it: memory is given back
    CHECK_THROWS_WITH_AS(ds.subset(std::vector<std::size_t>{5}, "lat"),
                         doctest::Contains("item 5 is out of range (3 items)"), config_error);
    // a training subset keeps its graphs alive by itself
    train::TrainData d = ds.subset(std::vector<std::size_t>{0, 1}, "lat");
    CHECK(d.size() == 2);
    CHECK(d.graphs[0]->num_nodes() == nb201::build_graph(good).num_nodes());
    CHECK(d.targets == std::vector<double>{1, 2});
    CHECK(d.graphs[0] == ds.graph(2).get());
    // many items are built in parallel (2 threads, 200 items naming 50 networks 4 times each,
    // so threads race to build the same network): duplicates share one graph, every graph
    // equals a serial build, and map_graphs sees the same graphs
    std::string rows = "arch,lat\n";
    for (int rep = 0; rep < 4; ++rep)
        for (std::int64_t a = 0; a < 50; ++a) rows += nb201::to_string(nb201::from_index(a * 311)) + ",1\n";
    train::DatasetOptions two;
    two.threads = 2;
    const auto big = train::load_dataset_text(rows, "dup.csv", ".", two);
    REQUIRE(big.size() == 200);
    CHECK(big.distinct_graphs() == 50);
    const auto all = big.graphs(big.all_items());
    std::size_t shared = 0;
    for (std::size_t i = 0; i < 50; ++i)
        for (int rep = 1; rep < 4; ++rep) shared += all[i] == all[i + 50 * static_cast<std::size_t>(rep)];
    CHECK(shared == 150);
    for (std::size_t i = 0; i < all.size(); i += 13) CHECK(*all[i] == nb201::build_graph(big.key(i)));
    const auto nodes = big.map_graphs([](const graph::Graph& g) { return g.num_nodes(); });
    for (std::size_t i = 0; i < all.size(); ++i) CHECK(nodes[i] == static_cast<double>(all[i]->num_nodes()));
    // bad options fail at load time, not at first use
    o.space_options = {{"batch", "0"}};
    CHECK_THROWS_AS(train::load_dataset_text(csv, "lazy.csv", ".", o), config_error);
}

TEST_CASE("dataset: subnormal values are skipped, a huge bad field gives a short message") {
    train::DatasetOptions o;
    o.threads = 1;
    const std::string long_arch(100000, 'x');
    const auto csv = "arch,lat\n" + good + ",1\n" + good + ",1e-320\n" + long_arch + ",2\n" + good + ",3\n";
    const auto ds = train::load_dataset_text(csv, "s.csv", ".", o);
    CHECK(ds.size() == 2);
    REQUIRE(ds.skipped().size() == 2);
    CHECK(ds.skipped()[0].line == 3);
    CHECK(contains(ds.skipped()[0].reason, "subnormal"));
    CHECK(ds.skipped()[1].line == 4);
    CHECK(ds.skipped()[1].reason.size() < 400);
    CHECK(contains(ds.skipped()[1].reason, "characters)"));
}

TEST_CASE("dataset: a peak memory of gigabytes is kept, a value beyond any quantity's scale is skipped") {
    train::DatasetOptions o;
    o.threads = 1;
    const auto csv = "arch,latency_ms,peak_memory_bytes\n" + good + ",12.5,2.5e9\n" + good + ",12.5,1e300\n";
    const auto ds = train::load_dataset_text(csv, "m.csv", ".", o);
    REQUIRE(ds.size() == 1);
    CHECK(ds.column("peak_memory_bytes")[0] == 2.5e9);
    REQUIRE(ds.skipped().size() == 1);
    CHECK(ds.skipped()[0].line == 3);
    CHECK(contains(ds.skipped()[0].reason, "outside the plausible range"));
}

TEST_CASE("thread pool: a huge request is capped at a fixed size, not a fork bomb") {
    // a fixed cap, whatever the machine (training shards by pool size)
    CHECK(ThreadPool::size_for(std::numeric_limits<std::size_t>::max()) == ThreadPool::max_threads);
    CHECK(ThreadPool::size_for(3) == 3);
    CHECK(ThreadPool::size_for(0) == std::max(1u, std::thread::hardware_concurrency()));
    ThreadPool pool(3);
    CHECK(pool.size() == 3);
    std::vector<int> hits(100, 0);
    pool.parallel_for(0, hits.size(), [&](std::size_t i) { ++hits[i]; });
    CHECK(std::count(hits.begin(), hits.end(), 1) == 100);
}

TEST_CASE("dataset: onnx space loads each file once, resolves relative paths, reports failures") {
    std::atomic<int> calls{0};
    train::DatasetOptions o;
    o.space = "onnx";
    o.threads = 2;
    CHECK_THROWS_AS(train::load_dataset_text("model,lat\na.onnx,1\n", "o.csv", "/base", o), config_error);
    o.loader = [&](const std::filesystem::path& p) {
        ++calls;
        if (p.filename() == "broken.onnx") raise<io_error>("cannot open '", p.string(), "'");
        graph::Graph g(p.string());
        const int x = g.add_input("x", {1, 4});
        g.mark_output(g.add_op("Relu", "relu", {x}, {1, 4}));
        return g;
    };
    const auto ds =
        train::load_dataset_text("model,lat\na.onnx,1\nsub/b.onnx,2\na.onnx,3\nbroken.onnx,4\n", "o.csv", "/base", o);
    CHECK(calls == 3);
    CHECK(ds.size() == 3);
    CHECK(ds.distinct_graphs() == 2);
    CHECK(ds.graph(0) == ds.graph(2));
    CHECK(ds.graph(1)->name() == "/base/sub/b.onnx");
    REQUIRE(ds.skipped().size() == 1);
    CHECK(ds.skipped()[0].line == 5);
    CHECK(contains(ds.skipped()[0].reason, "cannot load model"));
}

TEST_CASE("split: same seed, same split, parts never overlap") {
    const train::SplitOptions opt{
        .n_train = 30, .n_validation = 20, .n_test = 0, .sampling = train::Sampling::random, .seed = 5};
    const auto a = train::make_split(200, opt);
    const auto b = train::make_split(200, opt);
    CHECK(a.train == b.train);
    CHECK(a.validation == b.validation);
    CHECK(a.test == b.test);
    CHECK(a.train.size() == 30);
    CHECK(a.validation.size() == 20);
    CHECK(a.test.size() == 150);
    std::set<std::size_t> all(a.train.begin(), a.train.end());
    all.insert(a.validation.begin(), a.validation.end());
    all.insert(a.test.begin(), a.test.end());
    CHECK(all.size() == 200);
    auto other = opt;
    other.seed = 6;
    CHECK(train::make_split(200, other).train != a.train);
    other.n_test = 10;
    CHECK(train::make_split(200, other).test.size() == 10);
}

TEST_CASE("split: uniform sampling draws one training item per proxy bin") {
    std::vector<double> proxy(100);
    for (std::size_t i = 0; i < proxy.size(); ++i) proxy[i] = static_cast<double>((i * 37) % 100);  // a permutation
    const train::SplitOptions opt{
        .n_train = 10, .n_validation = 10, .n_test = 0, .sampling = train::Sampling::uniform, .seed = 3};
    const auto s = train::make_split(100, opt, proxy);
    std::vector<int> per_bin(10, 0);
    for (auto i : s.train) ++per_bin[static_cast<std::size_t>(proxy[i]) / 10];
    CHECK(per_bin == std::vector<int>(10, 1));
    std::set<std::size_t> all(s.train.begin(), s.train.end());
    all.insert(s.validation.begin(), s.validation.end());
    all.insert(s.test.begin(), s.test.end());
    CHECK(all.size() == 100);
    CHECK_THROWS_AS(train::make_split(100, opt), config_error);  // no proxy
}

TEST_CASE("split: impossible sizes are config errors") {
    CHECK_THROWS_AS(train::make_split(10, {.n_train = 8, .n_validation = 5}), config_error);
    CHECK_THROWS_AS(train::make_split(10, {.n_train = 5, .n_validation = 5}), config_error);
    CHECK_THROWS_AS(train::make_split(10, {.n_train = 0, .n_validation = 5}), config_error);
    CHECK_THROWS_AS(train::parse_sampling("stratified"), config_error);
    // sizes whose sum wraps around (a -1 on a command line becomes SIZE_MAX)
    constexpr auto huge = std::numeric_limits<std::size_t>::max();
    CHECK_THROWS_AS(train::make_split(10, {.n_train = 5, .n_validation = huge}), config_error);
    CHECK_THROWS_AS(train::make_split(10, {.n_train = 2, .n_validation = 2, .n_test = huge - 1}), config_error);
    CHECK_THROWS_AS(train::make_split(10, {.n_train = huge}), config_error);
}

TEST_CASE("vocabulary: operator types a trained estimator never saw are listed") {
    const auto ds = synthetic(60, 12);
    const auto s = train::make_split(ds.size(), {.n_train = 30, .n_validation = 10, .seed = 2});
    estimators::AdditiveEstimator est;
    CHECK(estimators::unknown_operators(est, *ds.graph(0)).empty());  // untrained: no vocabulary
    est.fit(ds.subset(s.train, "lat"), ds.subset(s.validation, "lat"), {});
    const auto vocab = est.vocabulary();
    CHECK(std::is_sorted(vocab.begin(), vocab.end()));
    CHECK(std::find(vocab.begin(), vocab.end(), "Conv") != vocab.end());
    CHECK(estimators::unknown_operators(est, *ds.graph(0)).empty());
    graph::Graph g("other");
    const int x = g.add_input("x", {1, 8});
    const int y = g.add_op("Softmax", "sm1", {x}, {1, 8});
    const int z = g.add_op("Softmax", "sm2", {y}, {1, 8});
    g.add_op("Relu", "r", {g.add_op("Erf", "erf", {z}, {1, 8})}, {1, 8});
    const auto u = estimators::unknown_operators(est, g);
    CHECK(u == std::vector<std::string>{"Erf", "Softmax"});  // sorted, each once; Relu is known
}

TEST_CASE("additive: an exact linear function of op counts is recovered") {
    const auto ds = synthetic(140, 11);
    const auto s = train::make_split(ds.size(), {.n_train = 60, .n_validation = 30, .seed = 1});
    estimators::AdditiveEstimator est;
    int lines = 0;
    estimators::FitOptions fo;
    fo.on_epoch = [&](const std::string&) { return ++lines, false; };
    const auto fit = est.fit(ds.subset(s.train, "lat"), ds.subset(s.validation, "lat"), fo);
    CHECK(lines == 1);
    CHECK(fit.epochs == 1);
    CHECK(fit.best_validation < 1e-4);
    const auto p = means(est.predict(ds.graphs(s.test)));
    const auto truth = ds.values(s.test, "lat");
    for (std::size_t i = 0; i < p.size(); ++i) CHECK(p[i] == Approx(truth[i]).epsilon(1e-4));
    // Without a validation set lambda comes from leave-one-out, with the same outcome.
    estimators::AdditiveEstimator loo;
    loo.fit(ds.subset(s.train, "lat"), {}, {});
    CHECK(train::mape(means(loo.predict(ds.graphs(s.test))), truth) < 1e-4);
}

TEST_CASE("ridge: the non-negative coefficients are the best of every choice of zeros, by enumeration") {
    // min 1/2 b'Ab - b'c with b_j >= 0 for j > 0: the optimum is the unconstrained minimiser over
    // some free set that is feasible; enumerating all 2^(p-1) free sets and keeping the feasible
    // one of least objective is the truth the active-set solver must reach, from any start.
    // 400 problems, so that a few have a blocking coefficient that rounding leaves a hair above
    // zero, at any optimisation level.
    Rng rng(7);
    for (int trial = 0; trial < 400; ++trial) {
        CAPTURE(trial);
        const int n = 30, p = 7;
        Eigen::MatrixXd x(n, p);
        Eigen::VectorXd y(n);
        for (int i = 0; i < n; ++i) {
            x(i, 0) = 1.0;
            for (int j = 1; j < p; ++j) x(i, j) = rng.normal() + (trial % 3 == 0 && j > 1 ? 0.9 * x(i, 1) : 0.0);  // correlated with column 1
            y(i) = 2.0 + rng.normal();
            for (int j = 1; j < p; ++j) y(i) += (j % 2 ? 1.0 : -1.0) * 0.6 * x(i, j);
        }
        const auto ne = estimators::RidgeFit::NormalEquations::of(x, y, estimators::RidgeFit::Loss::absolute, 0.0);
        REQUIRE(ne);
        const double lambda = trial % 2 ? 1e-3 : 0.3;
        const Eigen::MatrixXd a = ne->penalised(lambda);
        const auto objective = [&](const Eigen::VectorXd& b) { return 0.5 * b.dot(a * b) - b.dot(ne->xtwy); };
        double best = std::numeric_limits<double>::infinity();
        Eigen::VectorXd truth;
        for (int mask = 0; mask < (1 << (p - 1)); ++mask) {
            std::vector<Eigen::Index> idx{0};
            for (int j = 1; j < p; ++j)
                if (mask & (1 << (j - 1))) idx.push_back(j);
            const auto k = static_cast<Eigen::Index>(idx.size());
            Eigen::MatrixXd sub(k, k);
            Eigen::VectorXd rhs(k);
            for (Eigen::Index r = 0; r < k; ++r) {
                rhs(r) = ne->xtwy(idx[static_cast<std::size_t>(r)]);
                for (Eigen::Index c = 0; c < k; ++c)
                    sub(r, c) = a(idx[static_cast<std::size_t>(r)], idx[static_cast<std::size_t>(c)]);
            }
            const Eigen::VectorXd zk = sub.ldlt().solve(rhs);
            Eigen::VectorXd b = Eigen::VectorXd::Zero(p);
            bool feasible = true;
            for (Eigen::Index r = 0; r < k; ++r) {
                b(idx[static_cast<std::size_t>(r)]) = zk(r);
                feasible = feasible && (r == 0 || zk(r) >= 0.0);
            }
            if (feasible && objective(b) < best) best = objective(b), truth = b;
        }
        const Eigen::VectorXd starts[] = {ne->beta(lambda), Eigen::VectorXd::Zero(p), Eigen::VectorXd::Constant(p, 5.0)};
        for (const auto& start : starts) {
            const Eigen::VectorXd b = ne->nonnegative_beta(lambda, start);
            for (Eigen::Index j = 1; j < p; ++j) CHECK(b(j) >= 0.0);
            CHECK((b - truth).cwiseAbs().maxCoeff() < 1e-9);
        }
    }
}

TEST_CASE("additive: rejects bad training data") {
    const auto ds = synthetic(10, 2);
    estimators::AdditiveEstimator est;
    auto d = ds.subset(std::vector<std::size_t>{0, 1, 2}, "lat");
    d.targets[1] = -1.0;
    CHECK_THROWS_AS(est.fit(d, {}, {}), config_error);
    CHECK_THROWS_AS(est.fit(ds.subset(std::vector<std::size_t>{0}, "lat"), {}, {}), config_error);
    CHECK_THROWS_AS(est.predict(ds.graphs(std::vector<std::size_t>{0})), config_error);
}

TEST_CASE("additive: a saved model reloads and predicts identically, corruption is a clear error") {
    const auto ds = synthetic(80, 4, 0.05);
    const auto s = train::make_split(ds.size(), {.n_train = 40, .n_validation = 20, .seed = 9});
    auto est = estimators::make_estimator("additive");
    est->fit(ds.subset(s.train, "lat"), ds.subset(s.validation, "lat"), {});
    const auto bytes = est->serialize();
    const auto path = std::filesystem::path(DNNCOST_BINARY_DIR) / "test_train_additive.dnnc";
    io::write_file_atomic(path, bytes);
    const auto loaded = estimators::load_estimator_file(path);
    CHECK(loaded->preset() == "additive");
    const auto a = est->predict(ds.graphs(s.test));
    const auto b = loaded->predict(ds.graphs(s.test));
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].mean == b[i].mean);  // bit-identical
    CHECK(loaded->serialize() == bytes);

    std::string corrupt = bytes;
    corrupt[corrupt.size() / 2] ^= 0x01;
    io::write_file_atomic(path, corrupt);
    const auto msg = message_of([&] { estimators::load_estimator_file(path); });
    CHECK(contains(msg, path.string()));
    CHECK(contains(msg, "checksum"));
    io::write_file_atomic(path, bytes.substr(0, bytes.size() - 9));
    CHECK(contains(message_of([&] { estimators::load_estimator_file(path); }), "truncated"));
    std::filesystem::remove(path);
}

TEST_CASE("registry: names, unknown presets, unknown kinds and the device preset's header") {
    const auto names = estimators::estimator_names();
    CHECK(std::find(names.begin(), names.end(), "additive") != names.end());
    CHECK(std::find(names.begin(), names.end(), "hifisage") != names.end());
    CHECK(std::find(names.begin(), names.end(), "brpnas") != names.end());
    CHECK(estimators::make_estimator("hifisage")->preset() == "hifisage");
    const auto msg = message_of([] { estimators::make_estimator("lightgbm"); });
    CHECK(contains(msg, "lightgbm"));
    CHECK(contains(msg, "additive"));
    const auto foreign = io::write_container("mystery", 0, "");
    CHECK(contains(message_of([&] { estimators::load_estimator(foreign, "x.dnnc"); }), "x.dnnc"));
    CHECK_THROWS_AS(estimators::load_estimator(foreign, "x.dnnc"), parse_error);
    const auto device = io::write_container("device", 0, "");
    const auto device_msg = message_of([&] { estimators::load_estimator(device, "d.dnnc"); });
#if defined(DNNCOST_COMPILED)
    // the compiled library registers every built-in preset: an empty device model is a bad file
    CHECK(std::find(names.begin(), names.end(), "device") != names.end());
    CHECK(contains(device_msg, "d.dnnc"));
    CHECK_FALSE(contains(device_msg, "unknown preset"));
#else
    // header-only: device models register from their own header, which this program does not include
    CHECK(contains(device_msg, "device_model.hpp"));
#endif
}

TEST_CASE("ensemble: positive sigma, coverage computed right, save/load identical") {
    const auto ds = synthetic(120, 21, 0.05);
    const auto s = train::make_split(ds.size(), {.n_train = 50, .n_validation = 20, .seed = 2});
    auto ens = estimators::make_ensemble("additive", 4);
    estimators::FitOptions fo;
    fo.seed = 17;
    fo.threads = 2;
    std::atomic<int> lines{0};
    fo.on_epoch = [&](const std::string& line) {
        CHECK(contains(line, "member "));
        ++lines;
        return false;
    };
    ens->fit(ds.subset(s.train, "lat"), ds.subset(s.validation, "lat"), fo);
    CHECK(lines == 4);
    CHECK(ens->size() == 4);
    const auto pred = ens->predict(ds.graphs(s.test));
    const auto truth = ds.values(s.test, "lat");
    std::size_t inside = 0;
    for (std::size_t i = 0; i < pred.size(); ++i) {
        CHECK(pred[i].sigma > 0);
        // The mean is the mean of the members.
        double m = 0;
        for (std::size_t k = 0; k < ens->size(); ++k)
            m += ens->member(k).predict(ds.graphs(std::vector<std::size_t>{s.test[i]}))[0].mean;
        CHECK(pred[i].mean == Approx(m / 4.0));
        if (std::abs(truth[i] - pred[i].mean) <= 2 * pred[i].sigma) ++inside;
    }
    CHECK(estimators::coverage_2sigma(pred, truth) ==
          Approx(static_cast<double>(inside) / static_cast<double>(pred.size())));

    // Same seed, same members (independent of the thread count).
    auto again = estimators::make_ensemble("additive", 4);
    fo.threads = 1;
    fo.on_epoch = {};
    again->fit(ds.subset(s.train, "lat"), ds.subset(s.validation, "lat"), fo);
    CHECK(again->serialize() == ens->serialize());

    const auto loaded = estimators::load_estimator(ens->serialize(), "ens.dnnc");
    const auto p2 = loaded->predict(ds.graphs(s.test));
    for (std::size_t i = 0; i < pred.size(); ++i) {
        CHECK(p2[i].mean == pred[i].mean);
        CHECK(p2[i].sigma == pred[i].sigma);
    }
    CHECK_THROWS_AS(estimators::make_ensemble("additive", 1), config_error);

    // A program without ensemble.hpp (header-only mode) cannot read one, and says so.
    auto& hook = estimators::detail::ensemble_loading;
    const auto registered = hook;
    REQUIRE(static_cast<bool>(registered));
    hook = nullptr;
    CHECK_THROWS_WITH_AS(estimators::load_estimator(ens->serialize(), "ens.dnnc"),
                         doctest::Contains("ens.dnnc: an ensemble of estimators; reading one needs "
                                           "<dnncost/estimators/ensemble.hpp>"),
                         parse_error);
    hook = registered;
}

TEST_CASE("estimators: mismatched sizes, null graphs and non-positive targets are clear errors") {
    const auto ds = synthetic(40, 21);
    const auto s = train::make_split(ds.size(), {.n_train = 20, .n_validation = 10, .seed = 3});
    auto d = ds.subset(s.train, "lat");
    auto short_targets = d;
    short_targets.targets.resize(2);
    CHECK_THROWS_AS(estimators::make_ensemble("additive", 3)->fit(short_targets, {}, {}), shape_error);
    CHECK_THROWS_AS(estimators::make_ensemble("additive", 2'000'000'000), config_error);  // not an out-of-memory
    auto negative = d;
    negative.targets[0] = -1.0;
    CHECK_THROWS_WITH_AS(estimators::make_estimator("hifisage")->fit(negative, {}, {.max_epochs = 1}),
                         doctest::Contains("must be positive"), config_error);
    auto est = estimators::make_estimator("hifisage");
    est->fit(d, {}, {.max_epochs = 1, .threads = 1});
    const std::vector<const graph::Graph*> with_null{d.graphs[0], nullptr};
    CHECK_THROWS_WITH_AS(est->predict(with_null), doctest::Contains("null"), config_error);
}
