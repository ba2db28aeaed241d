#pragma once
/// @file device_model.hpp
/// A kernel-level device model: a network's latency as the sum of the kernels the runtime
/// executes. The device's fusion and layout rules (found by measuring, cost/fusion_discovery.hpp)
/// turn the operator graph into kernels (cost/kernel_graph.hpp); one regressor per kernel kind,
/// learnt from single-kernel measurements, prices each kernel from its features
/// (features/kernel_features.hpp); the run's own overhead (launch, input and output copies) is
/// added once. A multiplicative factor fitted on a few networks measured on the machine at hand
/// (calibrate) carries the model from the host it was built on to another of its kind. An
/// optional graph-level residual (kernel_residual.hpp), trained on whole networks measured on the
/// device (fit), corrects what the sum misses: a GNN over the kernel graph with the sum as its
/// additive path.
///
/// The model is an Estimator (saved in the project's container; including this header adds it to
/// the registry, so load_estimator and make_estimator know the "device" preset) and a
/// cost::CostSource whose breakdown is by kernel. A kernel kind without a regressor of its own is
/// priced by the nearest kind that has one, and the kernel says so in its warning.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/cost/fusion_rules.hpp>
#include <dnncost/cost/kernel_graph.hpp>
#include <dnncost/cost/kernel_kind.hpp>
#include <dnncost/cost/kernel_kind_table.hpp>
#include <dnncost/cost/source.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/estimators/kernel_batches.hpp>
#include <dnncost/estimators/kernel_residual.hpp>
#include <dnncost/estimators/preset_registry.hpp>
#include <dnncost/estimators/sample_boundary.hpp>
#include <dnncost/estimators/tabular_choice.hpp>
#include <dnncost/features/kernel_features.hpp>
#include <dnncost/graph/flat_view.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/serialize.hpp>

namespace dnncost::estimators {

/// One measured single-kernel sample: its kind, its features (features::kernel_feature_names()
/// order) and its latency as the runner measured it, run overhead included.
struct KernelMeasurement {
    std::string kind;
    std::vector<double> features;
    double latency_ms = 0;
};

/// The regressor of one kernel kind and how it validated.
struct KernelKindModel {
    std::unique_ptr<TabularRegressor> regressor;
    std::string chosen;                ///< "mlp" or "gbt"
    std::vector<TabularScore> scores;  ///< every candidate on the held-out samples
    std::int64_t samples = 0;          ///< measured samples of the kind
    std::int64_t held_out = 0;         ///< of them (or of its family's), held out for the choice
    /// With family regressors: the kind whose regressor learnt this kind's samples with its
    /// family's (empty: its own regressor, or none).
    std::string pooled_into;
};

struct DeviceModelOptions {
    /// A kind with fewer samples gets no regressor of its own (the nearest kind prices it).
    std::int64_t min_samples = 24;
    TabularChoiceOptions choice{};
    std::uint64_t seed = 1;  ///< of the candidates' fits
    /// Train one regressor per family on the samples of all its kinds (Conv, Conv+Act, Conv+Add,
    /// ... together; the fusion flags are features): a fused kind borrows the sizes its family
    /// was sampled at, where its own samples may cover only small ones. false: one per kind.
    bool family_regressors = true;
};

/// One kernel of a priced network.
struct PricedKernel {
    std::string kind;       ///< its kind key
    std::string priced_as;  ///< the kind whose regressor priced it (= kind unless it had none)
    std::vector<int> nodes;
    std::string layout;
    double ms = 0;
    std::string warning;  ///< why it was priced as another kind, or empty
};

/// A network's price, kernel by kernel; the kernels and the overhead add up to total_ms.
struct DevicePrice {
    std::vector<PricedKernel> kernels;
    double run_overhead_ms = 0;
    double total_ms = 0;
};

class DeviceModel final : public Estimator, public cost::CostSource {
public:
    static constexpr std::string_view kind = "device";
    /// 2 adds the sample-boundary rates, 3 family regressors; older versions still load.
    static constexpr std::uint32_t payload_version = 3;

    DeviceModel() = default;

    /// Fits one regressor per kind with enough samples (choose_tabular_regressor: the MLP against
    /// the gradient-boosted trees when the build has XGBoost, on held-out samples).
    /// `run_overhead_ms` is the latency of a run that does nearly nothing (a tiny model measured
    /// the same way): it is taken off every sample and added once per network.
    /// @throws config_error for no samples, a non-finite feature or latency, rows of another width
    static DeviceModel build(cost::FusionRules rules, std::span<const KernelMeasurement> samples,
                             double run_overhead_ms, const DeviceModelOptions& options = {}) {
        rules.check();
        if (samples.empty()) raise<config_error>("device model: no kernel samples");
        if (!(std::isfinite(run_overhead_ms) && run_overhead_ms >= 0))
            raise<config_error>("device model: run overhead ", run_overhead_ms, " ms is not a finite value >= 0");
        const auto& names = features::kernel_feature_names();
        std::map<std::string, std::vector<std::size_t>> by_kind;
        for (std::size_t i = 0; i < samples.size(); ++i) {
            const auto& s = samples[i];
            if (s.features.size() != names.size())
                raise<config_error>("device model: sample ", i, " (", s.kind, ") has ", s.features.size(),
                                    " features, expected ", names.size());
            if (!(std::isfinite(s.latency_ms) && s.latency_ms > 0))
                raise<config_error>("device model: sample ", i, " (", s.kind, ") latency ", s.latency_ms,
                                    " ms is not finite and positive");
            by_kind[s.kind].push_back(i);
        }
        DeviceModel m;
        m.m_rules = std::move(rules);
        m.m_run_overhead_ms = run_overhead_ms;
        // the rows each regressor learns from: its kind's, or its whole family's
        std::map<std::string, std::vector<std::size_t>> groups;
        for (const auto& [k, rows] : by_kind) {
            const auto group = options.family_regressors ? std::string(k.substr(0, k.find('+'))) : k;
            auto& g = groups[group];
            g.insert(g.end(), rows.begin(), rows.end());
        }
        for (const auto& [k, rows] : by_kind) {
            KernelKindModel km;
            km.samples = static_cast<std::int64_t>(rows.size());
            const auto group = options.family_regressors ? std::string(k.substr(0, k.find('+'))) : k;
            if (group != k && static_cast<std::int64_t>(groups[group].size()) >= options.min_samples) km.pooled_into = group;
            m.m_kinds.emplace(k, std::move(km));
        }
        for (const auto& [k, rows] : groups) {
            if (static_cast<std::int64_t>(rows.size()) < options.min_samples) continue;
            auto& km = m.m_kinds[k];  // a family none of whose samples ran unfused gets its entry here
            Mat<double> x(static_cast<Index>(rows.size()), static_cast<Index>(names.size()));
            std::vector<double> y;
            for (std::size_t r = 0; r < rows.size(); ++r) {
                const auto& s = samples[rows[r]];
                for (std::size_t j = 0; j < names.size(); ++j) x(static_cast<Index>(r), static_cast<Index>(j)) = s.features[j];
                y.push_back(kernel_time(s.latency_ms, run_overhead_ms));
            }
            auto choice = choose_tabular_regressor(x, y, names, default_tabular_candidates(options.seed), options.choice);
            km.regressor = std::move(choice.model);
            km.chosen = std::move(choice.chosen);
            km.scores = std::move(choice.scores);
            km.held_out = choice.held_out_rows;
        }
        if (m.priced_kinds().empty())
            raise<config_error>("device model: no kernel kind has ", options.min_samples,
                                " samples; measure more kernels");
        return m;
    }

    /// A sample's own time: its latency less the run overhead, never below a tenth of it (a
    /// kernel too small to tell from the overhead still costs something).
    static double kernel_time(double latency_ms, double run_overhead_ms) {
        return std::max(latency_ms - run_overhead_ms, 0.1 * latency_ms);
    }

    // ---------------------------------------------------------------- Estimator
    std::string preset() const override { return std::string(kind); }
    std::string name() const override { return Estimator::name(); }

    /// Fits the model to whole networks measured on the device (`train`; `validation` decides what
    /// is kept and stops the residual's training), the kernel regressors staying as built:
    ///  1. the sample-boundary rates (sample_boundary.hpp) with a scale, kept only when they
    ///     narrow the spread of log(measured / predicted) on validation (on train without one);
    ///  2. the scale becomes the calibration factor: the model now prices this device;
    ///  3. the graph-level residual on what is left, kept only when it beats no residual on
    ///     validation (KernelResidual::fit).
    /// set_fit_parts() leaves either part out.
    /// @throws config_error for a model not built yet (dnncost device build), or bad data
    FitResult fit(const train::TrainData& train, const train::TrainData& validation,
                  const FitOptions& options) override {
        if (m_kinds.empty())
            raise<config_error>("device model: build it from kernel measurements first (dnncost device build); "
                                "fit() fits it to whole networks");
        m_boundary = {};
        m_residual.reset();
        m_scale = 1.0;
        m_calibration_shots = 0;
        m_boundary_fit.reset();
        if (m_fit_boundary && train.size() >= 3) {
            const auto nets = boundary_networks(train);
            const auto f = fit_sample_boundary(nets);
            const double zero_scale = std::exp(detail::boundary_log_spread(nets, {}).second);
            const auto judge = validation.size() > 0 ? boundary_networks(validation) : nets;
            const double without = detail::boundary_log_rms(judge, {}, zero_scale);
            const double with = detail::boundary_log_rms(judge, f.cost, f.scale);
            m_boundary_fit = BoundaryFitReport{f, without, with, with < without};
            m_boundary = with < without ? f.cost : SampleBoundaryCost{};
            m_scale = with < without ? f.scale : zero_scale;
        }
        FitResult r;
        if (m_fit_residual) {
            std::vector<KernelGraphSample> xt, xv;
            (void)kernel_figures(train.graphs, nullptr, &xt);
            (void)kernel_figures(validation.graphs, nullptr, &xv);
            // the residual learns what is left after the scale
            std::vector<double> yt(train.targets), yv(validation.targets);
            for (auto& y : yt) y /= m_scale;
            for (auto& y : yv) y /= m_scale;
            KernelResidual residual(m_residual_options);
            r = residual.fit(xt, yt, xv, yv, options);
            m_residual = std::move(residual);
        }
        if (m_boundary_fit)
            r.summary = dnncost::detail::concat(
                "sample boundary ", m_boundary_fit->kept ? "kept" : "not kept", " (", m_boundary_fit->fit.cost.ms_per_kernel,
                " ms per kernel, ", m_boundary_fit->fit.cost.ms_per_output_mb, " ms/MB output, ",
                m_boundary_fit->fit.cost.ms_per_reorder_mb, " ms/MB reordered; log spread ", m_boundary_fit->spread_without,
                " -> ", m_boundary_fit->spread_with, "); scale ", m_scale, r.summary.empty() ? "" : "; ", r.summary);
        return r;
    }

    /// Which parts the next fit() fits: the sample-boundary rates, the residual (both by default).
    void set_fit_parts(bool boundary, bool residual) {
        m_fit_boundary = boundary;
        m_fit_residual = residual;
    }
    /// What the last fit() found for the sample boundary (rates, spread without and with them on
    /// the networks that judged them, and whether they were kept); none before a fit.
    struct BoundaryFitReport {
        SampleBoundaryFit fit;
        double spread_without = 0, spread_with = 0;
        bool kept = false;
    };
    const std::optional<BoundaryFitReport>& boundary_fit() const { return m_boundary_fit; }
    /// The sample-boundary rates in use (zero until a fit keeps them).
    const SampleBoundaryCost& boundary() const { return m_boundary; }

    /// Options of the residual the next fit() trains.
    void set_residual_options(const KernelResidualOptions& o) { m_residual_options = o; }
    /// The trained residual, if any (a zero residual adds nothing).
    const std::optional<KernelResidual>& residual() const { return m_residual; }

    std::string serialize() const override {
        io::BinaryWriter w;
        w.put_u32(payload_version);
        w.put_string(m_rules.to_text());
        w.put_f64(m_run_overhead_ms);
        w.put_f64(m_scale);
        w.put_f64(m_boundary.ms_per_kernel);
        w.put_f64(m_boundary.ms_per_output_mb);
        w.put_f64(m_boundary.ms_per_reorder_mb);
        w.put_u32(m_calibration_shots);
        w.put_string(m_build_info);
        w.put_u64(m_kinds.size());
        for (const auto& [k, km] : m_kinds) {
            w.put_string(k);
            w.put_i64(km.samples);
            w.put_i64(km.held_out);
            w.put_string(km.chosen);
            w.put_u64(km.scores.size());
            for (const auto& s : km.scores) {
                w.put_string(s.name);
                w.put_f64(s.mape);
                w.put_f64(s.within_10);
            }
            w.put_string(km.pooled_into);
            w.put_bool(km.regressor != nullptr);
            if (km.regressor) w.put_string(km.regressor->save());
        }
        w.put_bool(m_residual.has_value());
        if (m_residual) m_residual->save(w);
        return io::write_container(kind, io::fnv1a64("device-model"), w.bytes());
    }

    /// Rebuild a model saved by serialize(). @throws parse_error naming `source`
    static std::unique_ptr<DeviceModel> deserialize(std::string_view bytes, std::string_view source = "<memory>") {
        const auto c = io::read_container(bytes, kind, source);
        if (c.config_hash != io::fnv1a64("device-model"))
            raise<parse_error>(source, ": device model written by an incompatible configuration (hash mismatch)");
        io::BinaryReader r(c.payload, std::string(source));
        const auto version = r.get_u32("payload version");
        if (version < 1 || version > payload_version)
            r.fail("device model payload version ", version, " (this build reads 1 to ", payload_version, ")");
        auto m = std::make_unique<DeviceModel>();
        try {
            m->m_rules = cost::FusionRules::parse(r.get_string("fusion rules"), std::string(source) + " (fusion rules)");
        } catch (const config_error& e) {
            r.fail(e.what());
        }
        m->m_run_overhead_ms = r.get_finite_f64("run overhead");
        m->m_scale = r.get_finite_f64("calibration factor");
        if (!(m->m_run_overhead_ms >= 0 && m->m_scale > 0 && m->m_scale < 1e6))
            r.fail("run overhead ", m->m_run_overhead_ms, " ms or calibration factor ", m->m_scale, " out of range");
        if (version >= 2) {
            auto& b = m->m_boundary;
            b.ms_per_kernel = r.get_finite_f64("sample boundary per kernel");
            b.ms_per_output_mb = r.get_finite_f64("sample boundary per output MB");
            b.ms_per_reorder_mb = r.get_finite_f64("sample boundary per reordered MB");
            if (!(b.ms_per_kernel >= 0 && b.ms_per_output_mb >= 0 && b.ms_per_reorder_mb >= 0 && b.ms_per_kernel < 1e3 &&
                  b.ms_per_output_mb < 1e3 && b.ms_per_reorder_mb < 1e3))
                r.fail("sample boundary rates ", b.ms_per_kernel, ", ", b.ms_per_output_mb, ", ", b.ms_per_reorder_mb,
                       " out of range");
        }
        m->m_calibration_shots = r.get_u32("calibration shots");
        m->m_build_info = r.get_string("build information");
        const auto n = r.get_u64("kernel kinds");
        if (n > 4096) r.fail(n, " kernel kinds");
        for (std::uint64_t i = 0; i < n; ++i) {
            auto k = r.get_string("kind");
            KernelKindModel km;
            km.samples = r.get_i64("samples");
            km.held_out = r.get_i64("held-out samples");
            km.chosen = r.get_string("chosen regressor");
            const auto ns = r.get_u64("scores");
            if (ns > 16) r.fail(ns, " regressor scores of kind '", k, "'");
            for (std::uint64_t s = 0; s < ns; ++s) {
                TabularScore sc;
                sc.name = r.get_string("score name");
                sc.mape = r.get_finite_f64("held-out MAPE");
                sc.within_10 = r.get_finite_f64("held-out within 10 %");
                km.scores.push_back(std::move(sc));
            }
            if (version >= 3) km.pooled_into = r.get_string("family regressor");
            if (r.get_bool("has regressor"))
                km.regressor = load_tabular_regressor(r.get_string("regressor"),
                                                      std::string(source) + " (kernel kind " + k + ")");
            m->m_kinds.emplace(std::move(k), std::move(km));
        }
        if (r.get_bool("has residual")) m->m_residual = KernelResidual::load(r);
        r.expect_end("device model");
        if (m->priced_kinds().empty()) r.fail("device model without any kernel regressor");
        return m;
    }

    // ---------------------------------------------------------------- pricing
    /// Every network's price kernel by kernel: the kernel regressors' figures, corrected by the
    /// residual (when trained) and the calibration factor, kernels and overhead alike, so that the
    /// breakdown adds up to the total.
    std::vector<DevicePrice> price_networks(std::span<const graph::Graph* const> graphs) const {
        std::vector<DevicePrice> out;
        (void)priced(graphs, &out);
        return out;
    }

    /// Every network's total, as price_networks() gives it, without the breakdown: the route of
    /// a search, which asks for many prices and reads only totals.
    std::vector<double> price_totals(std::span<const graph::Graph* const> graphs) const {
        return priced(graphs, nullptr);
    }

    /// Fits the calibration factor to networks measured on the machine at hand: the median ratio
    /// of measured to predicted latency (robust to one odd network). Replaces any earlier factor.
    /// Returns the number of networks used.
    /// @throws config_error for no networks, sizes that disagree or a latency that is not positive
    std::size_t calibrate(std::span<const graph::Graph* const> graphs, std::span<const double> measured_ms) {
        if (graphs.empty()) raise<config_error>("device model: calibration needs at least one measured network");
        if (graphs.size() != measured_ms.size())
            raise<config_error>("device model: ", graphs.size(), " networks but ", measured_ms.size(), " latencies");
        m_scale = 1.0;
        const auto p = price_totals(graphs);
        std::vector<double> log_ratio;
        for (std::size_t i = 0; i < graphs.size(); ++i) {
            if (!(std::isfinite(measured_ms[i]) && measured_ms[i] > 0))
                raise<config_error>("device model: calibration network ", i + 1, " ('", graphs[i]->name(),
                                    "') has latency ", measured_ms[i], " ms");
            log_ratio.push_back(std::log(measured_ms[i] / p[i]));
        }
        std::sort(log_ratio.begin(), log_ratio.end());
        const auto n = log_ratio.size();
        const double mid = n % 2 ? log_ratio[n / 2] : 0.5 * (log_ratio[n / 2 - 1] + log_ratio[n / 2]);
        m_scale = std::exp(mid);
        m_calibration_shots = static_cast<std::uint32_t>(n);
        return n;
    }

    // ---------------------------------------------------------------- inspection
    const cost::FusionRules& rules() const { return m_rules; }
    const std::map<std::string, KernelKindModel, std::less<>>& kinds() const { return m_kinds; }
    std::vector<std::string> priced_kinds() const {
        std::vector<std::string> out;
        for (const auto& [k, km] : m_kinds)
            if (km.regressor) out.push_back(k);
        return out;
    }
    double run_overhead_ms() const { return m_run_overhead_ms; }
    double calibration_factor() const { return m_scale; }
    std::uint32_t calibration_shots() const { return m_calibration_shots; }
    /// Free text the builder records (device, runner, budget, sample counts, build time).
    const std::string& build_info() const { return m_build_info; }
    void set_build_info(std::string info) { m_build_info = std::move(info); }

    /// The kind whose regressor prices a kernel of kind `k`: its own, else the kind without its
    /// last fusion ("Conv+Add+Act" -> "Conv+Add" -> "Conv"), else the nearest family that has one.
    std::string nearest_priced_kind(const std::string& k) const {
        const auto has = [&](std::string_view x) {
            const auto it = m_kinds.find(x);
            return it != m_kinds.end() && it->second.regressor != nullptr;
        };
        std::string x = k;
        while (true) {
            if (has(x)) return x;
            const auto plus = x.rfind('+');
            if (plus == std::string::npos) break;
            x.resize(plus);
        }
        for (const auto& near : nearest_families(x))
            for (const auto& suffix : {"", "+Act", "+Add", "+Add+Act"}) {
                const std::string y = near + suffix;
                if (has(y)) return y;
            }
        return priced_kinds().front();
    }

protected:
    std::vector<Prediction> compute(std::span<const graph::Graph* const> graphs) const override {
        std::vector<Prediction> out;
        for (const double t : price_totals(graphs)) out.push_back({t, 0.0});
        return out;
    }

    cost::GraphCost price(const graph::Graph& g) const override {
        const graph::Graph* one[] = {&g};
        const auto p = price_networks(one).front();
        cost::GraphCost c;
        c.total_ms = p.total_ms;
        c.run_overhead_ms = p.run_overhead_ms;
        // a reorder runs no node of the graph: its time goes to the kernel that reads its value
        double carry = 0;
        for (const auto& k : p.kernels) {
            if (k.nodes.empty()) {
                carry += k.ms;
                continue;
            }
            c.kernels.push_back({k.kind, k.nodes, k.ms + carry});
            carry = 0;
        }
        if (carry > 0) {
            if (c.kernels.empty())
                c.run_overhead_ms += carry;
            else
                c.kernels.back().ms += carry;
        }
        for (const auto& k : p.kernels)
            if (!k.warning.empty()) c.fallbacks.push_back(k.warning);
        return c;
    }

private:
    /// The regressors' figure of every kernel of every network, without the residual and the
    /// calibration factor: network i's kernels at ms[start[i] .. start[i + 1]).
    struct KernelFigures {
        std::vector<double> ms;
        std::vector<std::size_t> start{0};
        std::vector<double> output_bytes, reorder_bytes;  ///< per kernel, what its sample's edges moved
    };

    /// Every network's total, and with `details` its price kernel by kernel: one computation for
    /// both, so that the totals alone are the breakdown's totals.
    std::vector<double> priced(std::span<const graph::Graph* const> graphs, std::vector<DevicePrice>* details) const {
        const bool residual = m_residual && !m_residual->is_zero();
        std::vector<KernelGraphSample> samples;
        const auto fig = kernel_figures(graphs, details, residual ? &samples : nullptr);
        const auto factors = residual ? m_residual->factors(samples) : std::vector<double>(graphs.size(), 1.0);
        std::vector<double> totals(graphs.size());
        for (std::size_t i = 0; i < graphs.size(); ++i) {
            const double f = factors[i] * m_scale;
            double total = m_run_overhead_ms * f;
            for (std::size_t k = fig.start[i]; k < fig.start[i + 1]; ++k) total += fig.ms[k] * f;
            totals[i] = total;
            if (!details) continue;
            auto& p = (*details)[i];
            p.run_overhead_ms = m_run_overhead_ms * f;
            for (std::size_t k = 0; k < p.kernels.size(); ++k) p.kernels[k].ms = fig.ms[fig.start[i] + k] * f;
            p.total_ms = total;
        }
        return totals;
    }

    /// The kernel regressors' figures (kernel_figures without residual or calibration factor); with
    /// `details`, each network's kernels described (kind, nodes, layout, the kind that priced them,
    /// warnings; their times are left to the caller); with `samples`, each network's kernel graph
    /// as the residual reads it.
    KernelFigures kernel_figures(std::span<const graph::Graph* const> graphs, std::vector<DevicePrice>* details,
                                 std::vector<KernelGraphSample>* samples) const {
        if (m_kinds.empty()) raise<config_error>("device model: not built");
        m_rules.check();  // once for every network of the call
        // the regressors in kind order: a kernel priced in parts sums them in this order
        std::vector<const TabularRegressor*> regressors;
        std::vector<std::string_view> regressor_kind;
        for (const auto& [k, km] : m_kinds)
            if (km.regressor) {
                regressors.push_back(km.regressor.get());
                regressor_kind.push_back(k);
            }
        // kind key -> (its regressor, whether that regressor learnt the kind's own samples), looked
        // up once a call
        std::unordered_map<std::string, std::pair<std::size_t, bool>> priced_by;
        const auto lookup = [&](const std::string& key) {
            auto it = priced_by.find(key);
            if (it == priced_by.end()) {
                const auto as = nearest_priced_kind(key);
                const auto r = std::lower_bound(regressor_kind.begin(), regressor_kind.end(), as);
                const auto k = m_kinds.find(key);
                const bool own = as == key || (k != m_kinds.end() && k->second.pooled_into == as);
                it = priced_by.emplace(key, std::pair{static_cast<std::size_t>(r - regressor_kind.begin()), own}).first;
            }
            return it->second;
        };
        // each kernel's kind key and (regressor, own), worked out once for the kernels that share them
        cost::KernelKindTable<std::pair<std::size_t, bool>> kinds_met;
        const auto priced_as = [&](const features::KernelKind& kind) { return lookup(kind.key); };
        const auto block = m_rules.layout.block;
        std::vector<double> row(features::kernel_feature_names().size());
        KernelBatches batches(regressors.size(), row.size());
        KernelFigures out;
        std::vector<cost::KernelGraph> kgs;
        cost::KernelGraph reused, plain;  // storage of one network's kernels passed on to the next
        thread_local graph::FlatView view;  // of the network being priced, read by the pass and the features
        std::optional<cost::FusionRules> unfused;
        if (details) details->assign(graphs.size(), {});
        std::vector<std::size_t> unsampled;  // fused kernels of a kind no sample had
        for (std::size_t gi = 0; gi < graphs.size(); ++gi) {
            const auto& g = *graphs[gi];
            auto& kg = samples ? kgs.emplace_back() : reused;
            view.rebuild(g);
            cost::detail::kernel_graph_into_checked(view, m_rules, kg);
            kinds_met.next_graph();
            const std::size_t first = out.ms.size();
            out.ms.resize(first + kg.kernels.size(), 0.0);
            out.start.push_back(out.ms.size());
            for (const auto& kn : kg.kernels) {
                out.output_bytes.push_back(static_cast<double>(kn.cost.output_bytes));
                out.reorder_bytes.push_back(!kn.is_reorder() && kn.layout.blocked()
                                                ? static_cast<double>(kn.cost.input_bytes + kn.cost.output_bytes)
                                                : 0.0);
            }
            auto* d = details ? &(*details)[gi] : nullptr;
            if (d) d->kernels.resize(kg.kernels.size());
            unsampled.clear();
            for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
                const auto& met = kinds_met.find(view, kg, kg.kernels[k], priced_as);
                const auto& kind = met.kind;
                const auto [r, own] = met.value;
                const bool priced_whole = own || kg.kernels[k].nodes.size() <= 1;
                // the features go straight into the batch; those of a kernel priced in parts are
                // still worked out (and dropped), for the errors they may raise
                const auto values = priced_whole ? batches.new_row(r) : std::span<double>(row);
                features::kernel_features_into(view, kg, k, block, kind, values);
                if (!priced_whole) unsampled.push_back(k);
                if (d) {
                    auto& pk = d->kernels[k];
                    pk.kind = kind.key;
                    pk.nodes = kg.kernels[k].nodes;
                    pk.layout = kg.layout_string(kg.kernels[k].layout);
                    pk.priced_as = regressor_kind[r];
                    pk.warning = kind.warning;
                    if (!own && kg.kernels[k].nodes.size() <= 1) {
                        const auto why = dnncost::detail::concat("kernel ", k, " (", pk.kind, ") priced as ",
                                                                 pk.priced_as, ": no samples of its own kind");
                        pk.warning = pk.warning.empty() ? why : pk.warning + "; " + why;
                    }
                }
                if (priced_whole) batches.add_new_row(r, first + k);
            }
            if (!unsampled.empty()) {
                // a fusion no sample showed is priced as its operators running alone: an upper
                // bound, where a regressor of a similar kind would extrapolate from work it never saw
                if (!unfused) unfused = unfused_rules();
                cost::detail::kernel_graph_into_checked(view, *unfused, plain);
                kinds_met.next_graph();
                for (std::size_t k : unsampled) {
                    std::string parts;
                    for (std::size_t p = 0; p < plain.kernels.size(); ++p) {
                        const auto& nodes = plain.kernels[p].nodes;
                        if (nodes.empty() || kg.kernel_of_node[static_cast<std::size_t>(nodes.front())] != int(k)) continue;
                        const auto& met = kinds_met.find(view, plain, plain.kernels[p], priced_as);
                        const auto r = met.value.first;
                        features::kernel_features_into(view, plain, p, block, met.kind, batches.new_row(r));
                        if (d) parts += (parts.empty() ? "" : " + ") + std::string(regressor_kind[r]);
                        batches.add_new_row(r, first + k);
                    }
                    if (!d) continue;
                    auto& pk = d->kernels[k];
                    pk.priced_as = std::move(parts);
                    const auto why = dnncost::detail::concat("kernel ", k, " (", pk.kind,
                                                             ") has no samples of its kind: priced as its operators "
                                                             "unfused (",
                                                             pk.priced_as, ")");
                    pk.warning = pk.warning.empty() ? why : pk.warning + "; " + why;
                }
            }
        }
        batches.predict_into(regressors, out.ms);
        if (!m_boundary.is_zero())  // a kernel priced in unfused parts loses its own edges once
            for (std::size_t k = 0; k < out.ms.size(); ++k)
                out.ms[k] = m_boundary.in_network_ms(out.ms[k], out.output_bytes[k], out.reorder_bytes[k]);
        if (samples)
            for (std::size_t gi = 0; gi < graphs.size(); ++gi) {
                std::vector<double> kernel_ms;  // a kernel of free operators only: the residual reads logs
                for (std::size_t k = out.start[gi]; k < out.start[gi + 1]; ++k)
                    kernel_ms.push_back(std::max(out.ms[k], 1e-6));
                samples->push_back(make_kernel_graph_sample(*graphs[gi], kgs[gi], block, kernel_ms, m_run_overhead_ms));
            }
        return out;
    }

    /// The networks of `d` as the sample-boundary fit reads them: the regressors' own figures
    /// (called while no boundary is in use), each kernel's edge bytes, the overhead, the latency.
    std::vector<BoundaryNetwork> boundary_networks(const train::TrainData& d) const {
        const auto fig = kernel_figures(d.graphs, nullptr, nullptr);
        std::vector<BoundaryNetwork> nets(d.size());
        for (std::size_t i = 0; i < nets.size(); ++i) {
            nets[i].overhead_ms = m_run_overhead_ms;
            nets[i].measured_ms = d.targets[i];
            for (std::size_t k = fig.start[i]; k < fig.start[i + 1]; ++k)  // free operators: a token figure
                nets[i].kernels.push_back({std::max(fig.ms[k], 1e-9), fig.output_bytes[k], fig.reorder_bytes[k]});
        }
        return nets;
    }

    /// The rules without their run-time fusions: folds stay (they happen at load time).
    cost::FusionRules unfused_rules() const {
        auto r = m_rules;
        r.patterns.clear();
        std::erase_if(r.fusions, [](const cost::FusionRule& f) { return !f.fold; });
        return r;
    }

    /// Families in the order of likeness to `family`'s work (what a kernel reads and writes).
    static std::vector<std::string> nearest_families(std::string_view family) {
        static const std::map<std::string, std::vector<std::string>, std::less<>> near{
            {"Conv", {"Conv", "DepthwiseConv", "Gemm", "MatMul"}},
            {"DepthwiseConv", {"DepthwiseConv", "Conv", "Pool"}},
            {"ConvTranspose", {"Conv", "DepthwiseConv"}},
            {"Gemm", {"Gemm", "MatMul", "Conv"}},
            {"MatMul", {"MatMul", "Gemm", "Conv"}},
            {"Pool", {"Pool", "DepthwiseConv", "GlobalPool"}},
            {"GlobalPool", {"GlobalPool", "Reduce", "Pool"}},
            {"Reduce", {"Reduce", "GlobalPool", "Softmax"}},
            {"Softmax", {"Softmax", "Reduce", "Activation"}},
            {"LayerNorm", {"LayerNorm", "Softmax", "Reduce", "BatchNorm"}},
            {"BatchNorm", {"BatchNorm", "Elementwise", "Activation"}},
            {"Elementwise", {"Elementwise", "Activation", "DataMovement"}},
            {"Activation", {"Activation", "Elementwise", "DataMovement"}},
            {"Concat", {"Concat", "DataMovement", "Elementwise"}},
            {"Resize", {"Resize", "DataMovement", "Elementwise"}},
            {"DataMovement", {"DataMovement", "Concat", "Activation", "Elementwise"}},
            {"Reorder", {"Reorder", "DataMovement", "Activation", "Elementwise"}},
        };
        const auto it = near.find(family);
        return it == near.end() ? std::vector<std::string>{"Elementwise", "Activation", "DataMovement"} : it->second;
    }

    double cost_scale() const override { return 1.0; }

    cost::FusionRules m_rules;
    std::map<std::string, KernelKindModel, std::less<>> m_kinds;
    double m_run_overhead_ms = 0;
    double m_scale = 1.0;
    std::uint32_t m_calibration_shots = 0;
    std::string m_build_info;
    std::optional<KernelResidual> m_residual;
    KernelResidualOptions m_residual_options{};
    SampleBoundaryCost m_boundary{};
    std::optional<BoundaryFitReport> m_boundary_fit;
    bool m_fit_boundary = true, m_fit_residual = true;
};

namespace detail {
/// The "device" preset, registered by including this header (see preset_registry.hpp); registry.hpp
/// leaves it out: only programs that price with device models compile its regressors and kernel pass.
inline const bool device_model_registered = [] {
    register_estimator(std::string(DeviceModel::kind),
                       entry_of<DeviceModel>([](DeviceModel&, const PresetSettings&) {},
                                             "kernel-level device model: the runtime's kernels (measured fusion and "
                                             "layout rules) priced by per-kind regressors learnt from single-kernel "
                                             "measurements; built by `dnncost device build`, fit() calibrates it"));
    return true;
}();
}  // namespace detail

}  // namespace dnncost::estimators
