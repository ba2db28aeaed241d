#pragma once
/// @file ensemble.hpp
/// An ensemble of k estimators of one preset: a prediction is the members' mean, and its sigma
/// their sample standard deviation, a cheap uncertainty that coverage_2sigma() checks.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/parallel.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/estimators/capabilities.hpp>
#include <dnncost/estimators/ensemble_kind.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/estimators/preset_registry.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/train/metrics.hpp>
#include <dnncost/train/train_data.hpp>

namespace dnncost::estimators {

/// Each member gets its own seed derived from the ensemble's seed; members are trained in
/// parallel on a ThreadPool. Members whose fit does not depend on the seed (the closed-form
/// additive baseline) would all be identical, so by default each member trains on a bootstrap
/// resample of the training set (bagging); `resample = none` trains every member on the full set
/// (deep ensembles, where the seed alone makes members differ).
class EnsembleEstimator final : public Estimator, public GemmPrecision, public OperatorVocabulary {
public:
    /// Creates an untrained member.
    using MemberFactory = std::function<std::unique_ptr<Estimator>()>;
    /// Rebuilds a member from its serialized bytes (a container of any kind).
    using MemberLoader = std::function<std::unique_ptr<Estimator>(std::string_view bytes, std::string_view source)>;
    static constexpr std::string_view kind = ensemble_kind;
    using Resample = EnsembleResample;
    /// Every member is a whole model in memory: more than this is a mistake, not an ensemble.
    static constexpr int max_members = 1024;

    /// @param member_preset name of the members' preset (reported by preset())
    /// @param factory       creates one untrained member
    /// @param members       2 <= k <= max_members
    EnsembleEstimator(std::string member_preset, MemberFactory factory, int members,
                      Resample resample = Resample::bootstrap)
        : m_member_preset(std::move(member_preset)), m_factory(std::move(factory)), m_k(members), m_resample(resample) {
        if (members < 2) raise<config_error>("Ensemble: needs at least 2 members, got ", members);
        if (members > max_members) raise<config_error>("Ensemble: at most ", max_members, " members, got ", members);
        if (!m_factory) raise<config_error>("Ensemble: no member factory");
    }

    std::string preset() const override { return m_member_preset; }
    std::size_t size() const { return m_members.size(); }
    const Estimator& member(std::size_t i) const { return *m_members.at(i); }
    Resample resample() const { return m_resample; }

    FitResult fit(const train::TrainData& train, const train::TrainData& validation,
                  const FitOptions& options) override {
        const auto start = std::chrono::steady_clock::now();
        if (train.graphs.size() != train.targets.size())
            raise<shape_error>("Ensemble: training data has ", train.graphs.size(), " graphs but ",
                               train.targets.size(), " targets");
        if (train.size() < 2) raise<config_error>("Ensemble: needs at least 2 training samples, got ", train.size());
        // Seeds and resamples are drawn serially up front: results do not depend on threads.
        Rng rng(options.seed);
        std::vector<std::uint64_t> seeds(static_cast<std::size_t>(m_k));
        std::vector<train::TrainData> data(static_cast<std::size_t>(m_k));
        for (std::size_t m = 0; m < seeds.size(); ++m) {
            seeds[m] = rng.split();
            if (m_resample == Resample::bootstrap) {
                Rng draw(seeds[m] ^ 0xb0075'7a9ULL);
                for (std::size_t i = 0; i < train.size(); ++i) {
                    const auto j = static_cast<std::size_t>(draw.below(train.size()));
                    data[m].graphs.push_back(train.graphs[j]);
                    data[m].targets.push_back(train.targets[j]);
                }
            } else {
                data[m] = train;
            }
        }
        std::vector<std::unique_ptr<Estimator>> members(seeds.size());
        std::vector<FitResult> results(seeds.size());
        const unsigned hw = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
        const std::size_t workers = std::min<std::size_t>(hw, seeds.size());
        std::mutex log_mutex;
        ThreadPool pool(workers);
        pool.parallel_for(0, seeds.size(), [&](std::size_t m) {
            auto est = m_factory();
            if (!est) raise<config_error>("Ensemble: the member factory returned nothing");
            FitOptions o = options;
            o.seed = seeds[m];
            // Members share the cores: each gets its slice of the thread budget.
            o.threads = static_cast<unsigned>(std::max<std::size_t>(1, hw / workers));
            if (options.on_epoch)
                o.on_epoch = [&, m](const std::string& line) {
                    std::lock_guard lock(log_mutex);
                    return options.on_epoch("member " + std::to_string(m + 1) + "/" + std::to_string(m_k) + ": " +
                                            line);
                };
            results[m] = est->fit(data[m], validation, o);
            members[m] = std::move(est);
        });
        m_members = std::move(members);
        FitResult r;
        for (const auto& x : results) {
            r.epochs = std::max(r.epochs, x.epochs);
            r.best_validation += x.best_validation / static_cast<double>(results.size());
        }
        r.validation_metric = results.front().validation_metric + " (member mean)";
        // the members' model selections, when every member made one
        if (std::all_of(results.begin(), results.end(),
                        [](const FitResult& x) { return x.trained_kept.has_value(); })) {
            double kept = 0;
            for (const auto& x : results) kept += *x.trained_kept;
            r.trained_kept = kept / static_cast<double>(results.size());
            r.summary = dnncost::concat(std::lround(kept), " of ", results.size(), " members kept the trained network");
        }
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return r;
    }

protected:
    std::vector<Prediction> compute(std::span<const graph::Graph* const> graphs) const override {
        if (m_members.empty()) raise<config_error>("Ensemble: predict called before fit or load");
        std::vector<std::vector<Prediction>> per(m_members.size());
        for (std::size_t m = 0; m < m_members.size(); ++m) per[m] = m_members[m]->predict(graphs);
        std::vector<Prediction> out(graphs.size());
        const double k = static_cast<double>(m_members.size());
        for (std::size_t i = 0; i < graphs.size(); ++i) {
            double mean = 0.0;
            for (const auto& p : per) mean += p[i].mean;
            mean /= k;
            double squares = 0.0;
            for (const auto& p : per) squares += (p[i].mean - mean) * (p[i].mean - mean);
            out[i] = {mean, std::sqrt(squares / (k - 1.0))};
        }
        return out;
    }

public:
    void set_precision(nn::Precision p) override {
        for (auto& m : m_members) estimators::set_precision(*m, p);
    }
    /// The members' precision (they are trained alike); empty before fit or without GEMMs.
    std::optional<nn::Precision> precision() const override {
        return m_members.empty() ? std::nullopt : precision_of(*m_members.front());
    }
    /// The union of the members' vocabularies (bootstrap members see different subsets).
    std::vector<std::string> vocabulary() const override {
        std::vector<std::string> all;
        for (const auto& m : m_members) {
            const auto v = vocabulary_of(*m);
            all.insert(all.end(), v.begin(), v.end());
        }
        std::sort(all.begin(), all.end());
        all.erase(std::unique(all.begin(), all.end()), all.end());
        return all;
    }
    /// Container "ensemble": member preset, resample mode, then each member's own container.
    std::string serialize() const override {
        if (m_members.empty()) raise<config_error>("Ensemble: serialize called before fit");
        io::BinaryWriter w;
        w.put_string(m_member_preset);
        w.put_u8(static_cast<std::uint8_t>(m_resample));
        w.put_u32(static_cast<std::uint32_t>(m_members.size()));
        for (const auto& m : m_members) w.put_string(m->serialize());
        return io::write_container(kind, io::fnv1a64("ensemble/v1"), w.bytes());
    }

    /// Rebuild an ensemble; `load_member` decodes each member (e.g. registry's load_estimator),
    /// `factory` is kept for a later re-fit and may be empty.
    static std::unique_ptr<EnsembleEstimator> deserialize(std::string_view bytes, std::string_view source,
                                                          const MemberLoader& load_member, MemberFactory factory = {}) {
        const auto c = io::read_container(bytes, kind, source);
        io::BinaryReader r(c.payload, std::string(source));
        auto preset = r.get_string("member preset");
        const auto resample = r.get_u8("resample mode");
        if (resample > 1) r.fail("unknown resample mode ", int(resample));
        const auto k = r.get_u32("member count");
        if (k < 2) r.fail("an ensemble needs at least 2 members, file has ", k);
        std::vector<std::unique_ptr<Estimator>> members;
        for (std::uint32_t m = 0; m < k; ++m) {
            const auto bytes_m = r.get_string_view("member " + std::to_string(m + 1));
            auto est = load_member(bytes_m, std::string(source) + " (member " + std::to_string(m + 1) + ")");
            if (est->preset() != preset)
                r.fail("member ", m + 1, " is a '", est->preset(), "' model, expected '", preset, "'");
            members.push_back(std::move(est));
        }
        r.expect_end("ensemble");
        if (!factory)
            factory = []() -> std::unique_ptr<Estimator> {
                raise<config_error>("Ensemble: a loaded ensemble cannot be re-fitted without a member factory");
            };
        auto e = std::make_unique<EnsembleEstimator>(std::move(preset), std::move(factory), static_cast<int>(k),
                                                     static_cast<Resample>(resample));
        e->m_members = std::move(members);
        return e;
    }

private:
    std::string m_member_preset;
    MemberFactory m_factory;
    int m_k;
    Resample m_resample;
    std::vector<std::unique_ptr<Estimator>> m_members;
};

/// An untrained ensemble of `members` estimators of the named preset, each with `settings`.
/// @throws config_error listing known presets, naming an option the preset does not have, or for
///         a member count outside [2, EnsembleEstimator::max_members]
inline std::unique_ptr<EnsembleEstimator> make_ensemble(std::string_view name, int members,
                                                        EnsembleResample resample = EnsembleResample::bootstrap,
                                                        const PresetSettings& settings = {}) {
    auto entry = detail::find_entry(name, "make_ensemble: ");
    detail::check_settings(name, entry, settings);
    return std::make_unique<EnsembleEstimator>(
        std::string(name), [make = entry.make, settings] { return make(settings); }, members, resample);
}

#if DNNCOST_HEADER_ONLY
namespace detail {
// load_estimator reads ensembles where this header is included (in compiled mode, the library
// registers it itself).
inline const bool ensemble_loading_registered = [] {
    ensemble_loading = [](std::string_view bytes, std::string_view source) -> std::unique_ptr<Estimator> {
        return EnsembleEstimator::deserialize(
            bytes, source, [](std::string_view b, std::string_view s) { return load_estimator(b, s); });
    };
    return true;
}();
}  // namespace detail
#endif

/// Fraction of items whose true value lies within mean ± 2 sigma of the prediction.
inline double coverage_2sigma(std::span<const Prediction> predictions, std::span<const double> truth) {
    std::vector<double> mean, sigma;
    mean.reserve(predictions.size());
    sigma.reserve(predictions.size());
    for (const auto& p : predictions) {
        mean.push_back(p.mean);
        sigma.push_back(p.sigma);
    }
    return train::coverage(mean, sigma, truth, 2.0);
}

}  // namespace dnncost::estimators
