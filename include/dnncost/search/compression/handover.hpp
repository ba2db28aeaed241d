#pragma once
/// @file handover.hpp
/// The compression search with a handover from hardware in the loop to a trained estimator
/// (the flow of HiFi-SAGE's channel-pruning search, plus uncertainty-guided re-measuring).
///
/// NSGA-II over one keep-ratio step per channel group, two objectives minimised: latency (ms)
/// and minus the accuracy figure. The first `handover` generations (the initial population
/// counts as the first) are measured; failed measurements make a candidate infeasible (one
/// violated constraint) and never stop the search. Then an estimator is trained on the
/// measurements, two thirds train and one third validation (100 / 50 for the paper's 3 x 50),
/// and the later generations are priced by it. Each estimated generation, candidates whose
/// calibrated interval reaches the current front (their optimistic latency, the prediction less
/// the validation residual quantile, is not dominated by it) are measured instead, best first,
/// within a budget spread over the remaining generations. At the end every member of the final
/// front is measured, and the estimator's error on the front is reported, next to the additive
/// baseline's trained on the same measurements.
///
/// Measuring and accuracy come from the caller (LatencyOracle, AccuracyOracle), so this header
/// owns no process; `dnncost compress` measures through the runner harness and its results
/// store, which makes an interrupted search resume without measuring again.
///
/// The estimator and the baseline are registered presets. The additive baseline registers here;
/// a header-only program that trains a GNN preset includes the header that registers it
/// (estimators/presets.hpp for the default "hifisage", estimators/registry.hpp for every one),
/// so that a search with the additive estimator does not compile the GNN engine.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/estimators/additive.hpp>
#include <dnncost/estimators/preset_registry.hpp>
#include <dnncost/graph/hash.hpp>
#include <dnncost/search/compression/prune.hpp>
#include <dnncost/search/nsga2.hpp>
#include <dnncost/search/pareto.hpp>

namespace dnncost::search::compression {

using PruneGenome = std::vector<int>;

/// Measures a batch of graphs: latency in ms per graph, nullopt for a failed measurement.
using LatencyOracle = std::function<std::vector<std::optional<double>>(std::span<const graph::Graph* const>)>;
/// The accuracy figure (higher is better) of a batch of pruned networks; nullopt for a failure.
using AccuracyOracle = std::function<std::vector<std::optional<double>>(std::span<const PruneGenome>,
                                                                        std::span<const graph::Graph* const>)>;

struct HandoverOptions {
    std::size_t population = 50;
    std::size_t generations = 10;  ///< generations in all, the initial population included
    std::size_t handover = 3;      ///< generations measured before the estimator takes over
    std::vector<double> steps = keep_steps();
    std::string estimator = "hifisage";
    std::string baseline = "additive";  ///< trained on the same data for comparison; empty = none
    std::size_t remeasure_budget = 0;   ///< measurements for uncertainty-guided re-measuring
    double interval_coverage = 0.9;     ///< quantile of relative validation residuals
    double validation_fraction = 1.0 / 3.0;
    std::uint64_t seed = 0;
    estimators::FitOptions fit{};
    estimators::PresetSettings estimator_settings{};  ///< the estimator preset's own options (e.g. keep)
};

/// Everything known about one evaluated genome.
struct CandidateRecord {
    PruneGenome genome;
    std::string key;  ///< the pruned graph's canonical hash
    std::size_t generation = 0;
    double accuracy = std::numeric_limits<double>::quiet_NaN();
    std::optional<double> measured;   ///< ms
    std::optional<double> estimated;  ///< ms, the estimator's prediction
    bool failed = false;              ///< the measurement or the accuracy command failed
    bool remeasured = false;          ///< measured during the estimated phase (uncertainty)
    bool validation = false;          ///< in the estimator's validation split
    bool training = false;            ///< in the estimator's training split
};

/// Progress after each generation.
struct GenerationReport {
    std::size_t generation = 0, generations = 0;
    bool estimated = false;
    std::size_t evaluated = 0, measured = 0, failed = 0, remeasured = 0;
    std::size_t front_size = 0;
    double seconds = 0;
};

struct HandoverResult {
    std::vector<CandidateRecord> front;  ///< final front, every member measured (unless it failed)
    std::vector<CandidateRecord> all;    ///< every genome evaluated, in evaluation order
    std::size_t measured = 0;            ///< distinct networks measured
    std::size_t estimated = 0;           ///< evaluations priced by the estimator
    std::size_t remeasured = 0;          ///< uncertainty-guided measurements during the search
    std::size_t failed = 0;
    double validation_mape = std::numeric_limits<double>::quiet_NaN();
    double interval = std::numeric_limits<double>::quiet_NaN();  ///< relative half-width
    double front_mape = std::numeric_limits<double>::quiet_NaN();
    double front_mape_unseen = std::numeric_limits<double>::quiet_NaN();  ///< front members not trained on
    double baseline_front_mape = std::numeric_limits<double>::quiet_NaN();
    std::string fit_summary;
    double seconds = 0;
};

class HandoverSearch {
public:
    /// Where a trained estimator is kept between runs: `load` returns the bytes saved under a
    /// signature of the training set (empty if none), `save` stores them.
    struct EstimatorCache {
        std::function<std::string(const std::string& signature)> load;
        std::function<void(const std::string& signature, const std::string& bytes)> save;
    };
    struct Events {
        std::function<void(const GenerationReport&)> on_generation;
        std::function<void(const std::string&)> on_message;
    };

    HandoverSearch(const Pruner& pruner, HandoverOptions options, LatencyOracle latency, AccuracyOracle accuracy)
        : m_pruner(pruner),
          m_options(std::move(options)),
          m_latency(std::move(latency)),
          m_accuracy(std::move(accuracy)) {
        if (m_pruner.num_groups() == 0)
            raise<config_error>("compress: '", m_pruner.graph().name(), "' has no channel group that can be pruned");
        if (m_options.population < 2) raise<config_error>("compress: the population must be at least 2");
        if (m_options.generations < 1) raise<config_error>("compress: at least one generation");
        if (m_options.steps.empty()) raise<config_error>("compress: no keep-ratio steps");
        if (!m_latency) raise<config_error>("compress: no latency oracle");
        if (!(m_options.interval_coverage > 0 && m_options.interval_coverage < 1))
            raise<config_error>("compress: the interval coverage must be in (0, 1)");
        // presets register from their own headers: an unknown one fails here, before any measurement
        (void)estimators::detail::find_entry(m_options.estimator, "compress");
        if (!m_options.baseline.empty()) (void)estimators::detail::find_entry(m_options.baseline, "compress");
    }

    void set_estimator_cache(EstimatorCache c) { m_cache = std::move(c); }

    HandoverResult run(const Events& events = {}) {
        const auto start = std::chrono::steady_clock::now();
        m_events = events;
        Problem problem{this, m_pruner.num_groups(), m_options.steps.size()};
        Options o;
        o.population = m_options.population;
        o.generations = m_options.generations - 1;  // offspring generations after the initial one
        if (o.generations == 0) o.max_evaluations = m_options.population;  // the initial population alone
        o.cache = Cache::on;
        Nsga2<Problem> nsga(problem, o, m_options.seed);
        auto result = nsga.run([&](const Nsga2<Problem>& state) {
            m_front.clear();
            for (const auto& m : state.population())
                if (m.rank == 0 && m.feasible()) m_front.push_back(m.objectives);
            GenerationReport r = m_report;
            r.generation = state.generation() + 1;
            r.generations = m_options.generations;
            r.front_size = m_front.size();
            r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (m_events.on_generation) m_events.on_generation(r);
            m_report = {};
        });
        HandoverResult out;
        // the final front, measured
        std::vector<std::size_t> front;
        for (const auto& m : result.front)
            if (m.feasible()) front.push_back(m_index.at(genome_key(m.genome)));
        std::vector<std::size_t> todo;
        for (auto i : front)
            if (!m_records[i].measured && !m_records[i].failed) todo.push_back(i);
        if (!todo.empty()) {
            message("re-measuring " + std::to_string(todo.size()) + " estimated members of the final front");
            measure(todo);
        }
        if (m_estimator) predict_missing(front);
        out.baseline_front_mape = baseline_error(front);
        std::vector<double> p, t, pu, tu;
        for (auto i : front) {
            const auto& r = m_records[i];
            out.front.push_back(r);
            if (r.measured && r.estimated) {
                p.push_back(*r.estimated), t.push_back(*r.measured);
                if (!r.training && !r.validation) pu.push_back(*r.estimated), tu.push_back(*r.measured);
            }
        }
        std::sort(out.front.begin(), out.front.end(), [](const auto& a, const auto& b) {
            return a.measured.value_or(a.estimated.value_or(0)) < b.measured.value_or(b.estimated.value_or(0));
        });
        if (!t.empty()) out.front_mape = mape(p, t);
        if (!tu.empty()) out.front_mape_unseen = mape(pu, tu);
        out.all = m_records;
        for (const auto& r : m_records) {
            out.measured += r.measured.has_value();
            out.remeasured += r.remeasured;
            out.failed += r.failed;
        }
        out.estimated = m_estimated;
        out.validation_mape = m_validation_mape;
        out.interval = m_interval;
        out.fit_summary = m_fit_summary;
        out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return out;
    }

    /// A failed candidate's objectives: far behind every real one.
    static constexpr double failed_latency = 1e12;

private:
    struct Problem {
        using Genome = PruneGenome;
        static constexpr ThreadSafety thread_safety = ThreadSafety::none;
        HandoverSearch* owner;
        std::size_t genes, steps;
        std::size_t num_objectives() const { return 2; }
        std::size_t num_constraints() const { return 1; }
        std::vector<std::size_t> cardinalities() const { return std::vector<std::size_t>(genes, steps); }
        std::vector<Evaluation> evaluate_batch(std::span<const Genome> gs) const { return owner->evaluate(gs); }
        Evaluation evaluate(const Genome& g) const { return owner->evaluate(std::span<const Genome>(&g, 1)).at(0); }
    };

    static double mape(const std::vector<double>& p, const std::vector<double>& t) {
        double s = 0;
        for (std::size_t i = 0; i < t.size(); ++i) s += std::abs(p[i] - t[i]) / t[i];
        return s / static_cast<double>(t.size());
    }
    /// 64-bit FNV-1a of a string, in hexadecimal: names a training set.
    static std::string fnv1a_hex(const std::string& s) {
        std::uint64_t h = 0xcbf29ce484222325ULL;
        for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
        static constexpr char digits[] = "0123456789abcdef";
        std::string out(16, '0');
        for (int i = 15; i >= 0; --i, h >>= 4) out[static_cast<std::size_t>(i)] = digits[h & 15];
        return out;
    }
    static std::string genome_key(const PruneGenome& g) {
        std::string s;
        for (int x : g) s += std::to_string(x) + ',';
        return s;
    }
    void message(const std::string& m) const {
        if (m_events.on_message) m_events.on_message(m);
    }

    /// Measure records `idx` (their graphs rebuilt from the genomes).
    void measure(const std::vector<std::size_t>& idx) {
        std::vector<graph::Graph> graphs;
        graphs.reserve(idx.size());
        for (auto i : idx) graphs.push_back(m_pruner.apply_genome(m_records[i].genome, m_options.steps));
        std::vector<const graph::Graph*> ptrs;
        for (const auto& g : graphs) ptrs.push_back(&g);
        const auto lat = m_latency(ptrs);
        if (lat.size() != idx.size())
            raise<error>("compress: the latency oracle answered ", lat.size(), " of ", idx.size());
        for (std::size_t k = 0; k < idx.size(); ++k) {
            auto& r = m_records[idx[k]];
            if (lat[k] && std::isfinite(*lat[k]) && *lat[k] > 0) {
                r.measured = *lat[k];
                ++m_report.measured;
            } else {
                r.failed = true;
                ++m_report.failed;
            }
        }
    }

    Evaluation objectives_of(const CandidateRecord& r) const {
        if (r.failed || !std::isfinite(r.accuracy)) return {{failed_latency, 0.0}, {1.0}};
        const double lat = r.measured ? *r.measured : r.estimated.value_or(failed_latency);
        return {{lat, -r.accuracy}, {0.0}};
    }

    std::vector<Evaluation> evaluate(std::span<const PruneGenome> genomes) {
        const bool estimated = m_batches >= m_options.handover;
        if (estimated && !m_estimator) train();
        std::vector<std::size_t> idx;
        std::vector<graph::Graph> graphs;
        for (const auto& g : genomes) {
            const auto key = genome_key(g);
            auto it = m_index.find(key);
            if (it == m_index.end()) {
                CandidateRecord r;
                r.genome = g;
                r.generation = m_batches;
                graphs.push_back(m_pruner.apply_genome(g, m_options.steps));
                r.key = graph::canonical_hash(graphs.back()).hex();
                it = m_index.emplace(key, m_records.size()).first;
                m_records.push_back(std::move(r));
            } else {
                graphs.push_back(m_pruner.apply_genome(g, m_options.steps));
            }
            idx.push_back(it->second);
        }
        m_report.evaluated += idx.size();
        m_report.estimated = estimated;
        std::vector<const graph::Graph*> ptrs;
        for (const auto& g : graphs) ptrs.push_back(&g);
        // accuracy
        std::vector<std::optional<double>> acc;
        if (m_accuracy) {
            acc = m_accuracy(genomes, ptrs);
        } else {
            for (const auto& g : genomes)
                acc.emplace_back(m_pruner.proxy_accuracy(m_pruner.ratios_of(g, m_options.steps)));
        }
        if (acc.size() != idx.size())
            raise<error>("compress: the accuracy oracle answered ", acc.size(), " of ", idx.size());
        for (std::size_t k = 0; k < idx.size(); ++k) {
            auto& r = m_records[idx[k]];
            if (acc[k] && std::isfinite(*acc[k]))
                r.accuracy = *acc[k];
            else
                r.failed = true;
        }
        std::vector<std::size_t> todo;
        for (auto i : idx)
            if (!m_records[i].measured && !m_records[i].failed) todo.push_back(i);
        if (!estimated) {
            measure(todo);
        } else if (!todo.empty()) {
            std::vector<const graph::Graph*> pending;
            for (std::size_t k = 0; k < idx.size(); ++k)
                if (!m_records[idx[k]].measured && !m_records[idx[k]].failed) pending.push_back(ptrs[k]);
            const auto pred = m_estimator->predict(pending);
            for (std::size_t k = 0; k < todo.size(); ++k) m_records[todo[k]].estimated = pred[k].mean;
            m_estimated += todo.size();
            remeasure(todo);
        }
        ++m_batches;
        std::vector<Evaluation> out;
        for (auto i : idx) out.push_back(objectives_of(m_records[i]));
        return out;
    }

    /// Measure the estimated candidates whose interval reaches the current front, best first.
    void remeasure(const std::vector<std::size_t>& todo) {
        if (m_spent >= m_options.remeasure_budget || !std::isfinite(m_interval)) return;
        const std::size_t left_generations =
            m_options.generations > m_batches ? m_options.generations - m_batches : std::size_t{1};
        const std::size_t left = m_options.remeasure_budget - m_spent;
        const std::size_t quota = (left + left_generations - 1) / left_generations;
        std::vector<std::pair<double, std::size_t>> near;  // (margin, record): larger margin first
        for (auto i : todo) {
            const auto& r = m_records[i];
            const double lo = *r.estimated * (1 - m_interval);
            const std::vector<double> opt{lo, -r.accuracy};
            bool dominated = false;
            double margin = std::numeric_limits<double>::infinity();
            for (const auto& f : m_front) {
                if (dominates(std::span<const double>(f), std::span<const double>(opt))) {
                    dominated = true;
                    break;
                }
                if (f[1] <= opt[1]) margin = std::min(margin, (f[0] - lo) / f[0]);  // how far it beats them
            }
            if (!dominated) near.emplace_back(std::isfinite(margin) ? margin : 1.0, i);
        }
        std::sort(near.begin(), near.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        std::vector<std::size_t> chosen;
        for (const auto& [m, i] : near)
            if (chosen.size() < quota) chosen.push_back(i);
        if (chosen.empty()) return;
        measure(chosen);
        for (auto i : chosen) {
            m_records[i].remeasured = true;
            ++m_report.remeasured;
        }
        m_spent += chosen.size();
    }

    /// Train the estimator on every successful measurement so far (split with the seed).
    void train() {
        std::vector<std::size_t> ok;
        for (std::size_t i = 0; i < m_records.size(); ++i)
            if (m_records[i].measured) ok.push_back(i);
        if (ok.size() < 4)
            raise<config_error>("compress: only ", ok.size(), " successful measurements after ", m_options.handover,
                                " generations: too few to train an estimator (see the runner's failures)");
        std::sort(ok.begin(), ok.end(), [&](auto a, auto b) { return m_records[a].key < m_records[b].key; });
        ok.erase(
            std::unique(ok.begin(), ok.end(), [&](auto a, auto b) { return m_records[a].key == m_records[b].key; }),
            ok.end());
        Rng rng(m_options.seed ^ 0x68616e646f766572ULL);
        rng.shuffle(ok.begin(), ok.end());
        const auto n_val = std::max<std::size_t>(
            1, static_cast<std::size_t>(std::llround(static_cast<double>(ok.size()) * m_options.validation_fraction)));
        m_val.assign(ok.end() - static_cast<std::ptrdiff_t>(n_val), ok.end());
        m_train.assign(ok.begin(), ok.end() - static_cast<std::ptrdiff_t>(n_val));
        for (auto i : m_train) m_records[i].training = true;
        for (auto i : m_val) m_records[i].validation = true;
        m_train_graphs.clear();
        for (auto i : m_train) m_train_graphs.push_back(m_pruner.apply_genome(m_records[i].genome, m_options.steps));
        for (auto i : m_val) m_train_graphs.push_back(m_pruner.apply_genome(m_records[i].genome, m_options.steps));
        train::TrainData tr, va;
        for (std::size_t k = 0; k < m_train.size(); ++k) {
            tr.graphs.push_back(&m_train_graphs[k]);
            tr.targets.push_back(*m_records[m_train[k]].measured);
        }
        for (std::size_t k = 0; k < m_val.size(); ++k) {
            va.graphs.push_back(&m_train_graphs[m_train.size() + k]);
            va.targets.push_back(*m_records[m_val[k]].measured);
        }
        std::string signature = m_options.estimator + ";" + std::to_string(m_options.seed) + ";" +
                                (m_options.estimator_settings.count("keep") ? m_options.estimator_settings.at("keep")
                                                                            : std::string("auto")) +
                                ";" +
                                std::to_string(m_options.fit.max_epochs) + ";";
        for (auto i : m_train) signature += m_records[i].key + "=" + std::to_string(*m_records[i].measured) + ";";
        signature += "|";
        for (auto i : m_val) signature += m_records[i].key + "=" + std::to_string(*m_records[i].measured) + ";";
        signature = fnv1a_hex(signature);
        if (m_cache.load) {
            const auto bytes = m_cache.load(signature);
            if (!bytes.empty()) {
                m_estimator = estimators::load_estimator(bytes, "saved estimator");
                m_fit_summary = "loaded the estimator trained on these measurements before";
                message(m_fit_summary);
            }
        }
        if (!m_estimator) {
            message("training '" + m_options.estimator + "' on " + std::to_string(tr.size()) + " measurements (" +
                    std::to_string(va.size()) + " for validation)");
            m_estimator = estimators::make_estimator(m_options.estimator, m_options.estimator_settings);
            auto fo = m_options.fit;
            fo.seed = m_options.seed;
            const auto fr = m_estimator->fit(tr, va, fo);
            m_fit_summary = std::to_string(fr.epochs) + " epochs in " + std::to_string(fr.seconds) + " s" +
                            (fr.summary.empty() ? "" : "; " + fr.summary);
            if (m_cache.save) m_cache.save(signature, m_estimator->serialize());
        }
        // calibration: the quantile of the relative validation residuals
        const auto pred = m_estimator->predict(va.graphs);
        std::vector<double> rel;
        double s = 0;
        for (std::size_t k = 0; k < pred.size(); ++k) {
            m_records[m_val[k]].estimated = pred[k].mean;
            const double e = std::abs(pred[k].mean - va.targets[k]) / va.targets[k];
            s += e;
            rel.push_back(std::abs(pred[k].mean - va.targets[k]) / std::max(pred[k].mean, 1e-12));
        }
        m_validation_mape = s / static_cast<double>(pred.size());
        std::sort(rel.begin(), rel.end());
        const auto q =
            static_cast<std::size_t>(std::ceil(m_options.interval_coverage * static_cast<double>(rel.size())));
        m_interval = std::min(0.95, rel[std::min(rel.size() - 1, q > 0 ? q - 1 : 0)]);
        const auto tpred = m_estimator->predict(tr.graphs);
        for (std::size_t k = 0; k < tpred.size(); ++k) m_records[m_train[k]].estimated = tpred[k].mean;
        message("validation MAPE " + std::to_string(100 * m_validation_mape) + " %, " +
                std::to_string(static_cast<int>(100 * m_options.interval_coverage)) + " % interval +-" +
                std::to_string(100 * m_interval) + " %");
    }

    /// Predictions for members that have none (measured before the handover).
    void predict_missing(const std::vector<std::size_t>& idx) {
        std::vector<std::size_t> todo;
        std::vector<graph::Graph> graphs;
        for (auto i : idx)
            if (!m_records[i].estimated) {
                todo.push_back(i);
                graphs.push_back(m_pruner.apply_genome(m_records[i].genome, m_options.steps));
            }
        if (todo.empty()) return;
        std::vector<const graph::Graph*> ptrs;
        for (const auto& g : graphs) ptrs.push_back(&g);
        const auto pred = m_estimator->predict(ptrs);
        for (std::size_t k = 0; k < todo.size(); ++k) m_records[todo[k]].estimated = pred[k].mean;
    }

    /// The baseline estimator's MAPE on the measured front, trained on the same split.
    double baseline_error(const std::vector<std::size_t>& front) {
        if (m_options.baseline.empty() || m_train.empty() || m_options.baseline == m_options.estimator)
            return std::numeric_limits<double>::quiet_NaN();
        auto est = estimators::make_estimator(m_options.baseline);
        train::TrainData tr, va;
        for (std::size_t k = 0; k < m_train.size(); ++k) {
            tr.graphs.push_back(&m_train_graphs[k]);
            tr.targets.push_back(*m_records[m_train[k]].measured);
        }
        for (std::size_t k = 0; k < m_val.size(); ++k) {
            va.graphs.push_back(&m_train_graphs[m_train.size() + k]);
            va.targets.push_back(*m_records[m_val[k]].measured);
        }
        auto fo = m_options.fit;
        fo.seed = m_options.seed;
        est->fit(tr, va, fo);
        std::vector<graph::Graph> graphs;
        std::vector<double> truth;
        for (auto i : front)
            if (m_records[i].measured) {
                graphs.push_back(m_pruner.apply_genome(m_records[i].genome, m_options.steps));
                truth.push_back(*m_records[i].measured);
            }
        if (graphs.empty()) return std::numeric_limits<double>::quiet_NaN();
        std::vector<const graph::Graph*> ptrs;
        for (const auto& g : graphs) ptrs.push_back(&g);
        const auto p = est->predict_mean(ptrs);
        return mape(p, truth);
    }

    const Pruner& m_pruner;
    HandoverOptions m_options;
    LatencyOracle m_latency;
    AccuracyOracle m_accuracy;
    EstimatorCache m_cache;
    Events m_events;
    std::vector<CandidateRecord> m_records;
    std::map<std::string, std::size_t> m_index;
    std::size_t m_batches = 0, m_estimated = 0, m_spent = 0;
    std::unique_ptr<estimators::Estimator> m_estimator;
    std::vector<std::size_t> m_train, m_val;
    std::vector<graph::Graph> m_train_graphs;
    std::vector<std::vector<double>> m_front;
    GenerationReport m_report;
    double m_validation_mape = std::numeric_limits<double>::quiet_NaN();
    double m_interval = std::numeric_limits<double>::quiet_NaN();
    std::string m_fit_summary;
};

}  // namespace dnncost::search::compression
