#pragma once
/// @file device_model.hpp
/// A kernel-level device model: a network's latency as the sum of the kernels the runtime
/// executes. The device's fusion and layout rules (found by measuring, device/fusion_discovery.hpp)
/// turn the operator graph into kernels (device/kernel_graph.hpp); one regressor per kernel kind,
/// learnt from single-kernel measurements, prices each kernel from its features
/// (device/kernel_features.hpp); the run's own overhead (launch, input and output copies) is
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
///
/// The larger member functions are defined in device_model_impl.hpp: compiled into dnncost::compiled
/// in compiled mode (core/config.hpp), included at the end of this header otherwise.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/cost/source.hpp>
#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/device/kernel_figure_memo.hpp>
#include <dnncost/device/kernel_intensity_factor.hpp>
#include <dnncost/device/residual_slot.hpp>
#include <dnncost/device/sample_boundary.hpp>
#include <dnncost/device/tabular_choice.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/estimators/preset_registry.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::device {

/// One measured kernel sample: its kind, its features (device::kernel_feature_names() order)
/// and its latency: a single-kernel model's as the runner measured it, run overhead included, or
/// a kernel's own time within a whole network (in_context; device/in_context.hpp).
struct KernelMeasurement {
    std::string kind;
    std::vector<double> features;
    double latency_ms = 0;
    bool in_context = false;
    /// The network an in-context sample was profiled in (in_context_network); empty for a kernel
    /// measured alone. A kind's regressors are compared on the kernels of held-out networks.
    std::string network{};
};

/// The network of an in-context sample's store key ("<network key>#<kernel index>",
/// in_context.hpp); empty for a key without the index.
inline std::string in_context_network(std::string_view key) {
    const auto hash = key.rfind('#');
    return hash == std::string_view::npos ? std::string() : std::string(key.substr(0, hash));
}

/// A kernel of a network as the runtime's profiler timed it: its index in the kernel pass of the
/// network under the model's rules (the "<network>#<index>" of its in-context sample,
/// in_context.hpp) and its own time, scaled to the unprofiled latency.
struct ProfiledKernel {
    std::size_t kernel = 0;
    double ms = 0;
};

/// The regressor of one kernel kind and how it validated.
struct KernelKindModel {
    std::unique_ptr<TabularRegressor> regressor;
    std::string chosen;                ///< the chosen candidate's name ("roofline-mlp", "gbt", ...)
    std::vector<TabularScore> scores;  ///< every candidate on the held-out samples
    std::int64_t samples = 0;          ///< measured samples of the kind
    std::int64_t held_out = 0;         ///< of them (or of its family's), held out for the choice
    std::int64_t beyond = 0;           ///< of them, the largest, held out for the beyond test (0: none)
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
    /// Price a kernel as a roofline base fitted on its regressor's samples times the chosen
    /// regressor's correction, held at its value at the samples' edge beyond them
    /// (roofline_regressor.hpp): a kernel larger than every sample costs in proportion to its work.
    /// false: the regressors alone, and trees then price such a kernel as the largest sample.
    bool roofline_base = true;
    /// The candidate regressors each kind chooses among, by name (default_tabular_candidates:
    /// "mlp", and "gbt" and "gbt-linear" with XGBoost); empty: all of them. Fewer fit faster.
    std::vector<std::string> regressors{};
};

/// How DeviceModel::calibrate() fits a model to networks measured on the machine at hand.
struct CalibrationOptions {
    /// Besides the global factor, one factor per kernel family (Conv, Gemm, Pool, ...; a host
    /// differs from another by kernel kind, not by one factor), shrunk toward the global one by a
    /// penalty chosen by leave-one-out over the shots. false: the global factor alone.
    bool per_family = true;
    /// A family whose kernels take less than this share of the shots' predicted time keeps the
    /// global factor: the shots cannot tell its factor apart. (Family factors from profiled
    /// kernels need no such bound: each family's own kernels show its factor.)
    double min_family_share = 0.02;
    /// With the shots' profiles: the prior weights, in kernels, that shrink a family's factor
    /// from its profiled kernels toward the global one (a family of n kernels keeps n / (n + k)
    /// of its log factor); each is a candidate of the leave-one-out choice.
    std::vector<double> kernel_priors{100, 30, 10};
    /// Besides the global factor, one that moves with the kernel's arithmetic intensity
    /// (KernelIntensityFactor): its slope from the profiled kernels (with profiles) and fitted to
    /// the shots' latencies, each a candidate of the leave-one-out choice. false: neither.
    bool intensity_slope = true;
};

/// What DeviceModel::calibrate() found.
struct CalibrationReport {
    std::size_t shots = 0;
    double factor = 1;  ///< the global factor
    /// Per family, relative to the global factor (families without one: 1).
    std::map<std::string, double, std::less<>> family_factors;
    /// The penalty chosen; infinity: the global factor alone.
    double shrinkage = 0;
    /// Every candidate penalty with its leave-one-out mean absolute percentage error on the shots.
    std::vector<std::pair<double, double>> candidates;
    /// The shots' kernels the runtime's profiler timed and the model priced (0: no profiles).
    std::size_t profiled_kernels = 0;
    /// With profiles: every prior weight (CalibrationOptions::kernel_priors) of family factors
    /// from the profiled kernels, with its leave-one-out error on the shots.
    std::vector<std::pair<double, double>> profiled_candidates;
    /// Whether the family factors applied came from the profiled kernels; then `shrinkage` is
    /// the prior weight in kernels, else the penalty of the fit to the shots' latencies.
    bool from_profiles = false;
    /// The intensity factor applied (slope 0: none).
    KernelIntensityFactor intensity_factor{};
    /// The intensity candidates tried, each with its leave-one-out error on the shots: "profiled
    /// kernels" (the slope within families of the shots' profiled kernels) and "shot latencies"
    /// (the slope fitted to the shots' latencies).
    std::vector<std::pair<std::string, double>> intensity_candidates;
    double given_mape = 0;  ///< the model as it was given, on the shots (%)
    double cv_mape = 0;     ///< the chosen fit, leave-one-out on the shots (%)
    /// false when no fit was better than the model as given, which is then kept unchanged.
    bool applied = true;
};

/// One kernel of a priced network.
struct PricedKernel {
    std::string kind;       ///< its kind key
    std::string priced_as;  ///< the kind whose regressor priced it (= kind unless it had none)
    std::vector<int> nodes;
    std::string layout;
    double ms = 0;
    std::string warning;  ///< why it was priced as another kind, or empty
    /// Its work over the most the samples of its regressor had (TabularRegressor::work_beyond_samples):
    /// above 1, its price extrapolates beyond every sample; 0 when unknown (priced in parts).
    double beyond_samples = 0;
};

/// A network's price, kernel by kernel; the kernels and the overhead add up to total_ms.
struct DevicePrice {
    std::vector<PricedKernel> kernels;
    double run_overhead_ms = 0;
    double total_ms = 0;
};

class DeviceModel;

namespace detail {
struct DeviceModelTraining;
/// What DeviceModel::fit runs (DeviceModel::fit_impl): set where device_model_training.hpp is
/// compiled in (the compiled library includes it), null elsewhere, so that a program that only
/// prices with saved models does not compile the fitting.
using DeviceModelFit = estimators::FitResult (*)(DeviceModel&, const train::TrainData&, const train::TrainData&,
                                                 const estimators::FitOptions&);
inline DeviceModelFit device_model_fitting = nullptr;
}  // namespace detail

class DeviceModel final : public estimators::Estimator, public cost::CostSource {
public:
    static constexpr std::string_view kind = "device";
    /// 2 adds the sample-boundary rates, 3 family regressors, 4 family calibration factors, 5 kernel
    /// regressors on a roofline base (kind tabular-roofline-*, which a build that reads 4 at most
    /// cannot load: it stops at the version instead), 6 the beyond test of the regressor choice,
    /// 7 the intensity calibration factor, 8 the sample boundary's bounds on a kernel's bytes; older
    /// versions still load.
    static constexpr std::uint32_t payload_version = 8;

    DeviceModel() = default;

    /// Fits one regressor per kind with enough samples (choose_tabular_regressor: the MLP against
    /// the gradient-boosted trees when the build has XGBoost, on held-out samples; each on a
    /// roofline base unless options.roofline_base is false).
    /// `run_overhead_ms` is the latency of a run that does nearly nothing (a tiny model measured
    /// the same way): it is taken off every sample and added once per network.
    /// @throws config_error for no samples, a non-finite feature or latency, rows of another width
    static DeviceModel build(FusionRules rules, std::span<const KernelMeasurement> samples, double run_overhead_ms,
                             const DeviceModelOptions& options = {});

    /// A sample's own time: its latency less the run overhead, never below a tenth of it (a
    /// kernel too small to tell from the overhead still costs something).
    static double kernel_time(double latency_ms, double run_overhead_ms) {
        return std::max(latency_ms - run_overhead_ms, 0.1 * latency_ms);
    }

    // ---------------------------------------------------------------- Estimator
    std::string preset() const override { return std::string(kind); }
    std::string name() const override { return estimators::Estimator::name(); }

    /// Fits the model to whole networks measured on the device (`train`; `validation` decides what
    /// is kept and stops the residual's training), the kernel regressors staying as built:
    ///  1. the sample-boundary rates (sample_boundary.hpp), with a scale only when
    ///     set_boundary_scale(BoundaryScale::free) asks for one, or a scale and no rates
    ///     (BoundaryScale::alone); kept only when they narrow the error of log(measured /
    ///     predicted) on validation (on train without one);
    ///  2. that scale becomes the calibration factor: the model now prices this device;
    ///  3. the graph-level residual on what is left, kept only when it beats no residual on
    ///     validation (KernelResidual::fit).
    /// set_fit_parts() leaves either part out. Runs device_model_training.hpp's fitting.
    /// @throws config_error for a model not built yet (dnncost device build), or bad data, or when
    ///         the fitting is not compiled in (header-only mode without device_model_training.hpp)
    estimators::FitResult fit(const train::TrainData& train, const train::TrainData& validation,
                              const estimators::FitOptions& options) override;

    /// Which parts the next fit() fits: the sample-boundary rates, the residual (both by default).
    void set_fit_parts(bool boundary, bool residual) {
        m_fit_boundary = boundary;
        m_fit_residual = residual;
    }
    /// How the next fit() treats the networks' overall level (BoundaryScale::one by default: a scale
    /// fitted to small networks does not carry to large ones, whose kernels single-kernel samples
    /// price; BoundaryScale::alone keeps the kernel sum's shape and fits its level alone).
    void set_boundary_scale(BoundaryScale s) { m_boundary_scale = s; }
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
    /// The residual, if any (a zero residual adds nothing: ResidualSlot::trained()).
    const ResidualSlot& residual() const { return m_residual; }

    std::string serialize() const override;

    /// Rebuild a model saved by serialize(). @throws parse_error naming `source`
    static std::unique_ptr<DeviceModel> deserialize(std::string_view bytes, std::string_view source = "<memory>");

    // ---------------------------------------------------------------- pricing
    /// Every network's price kernel by kernel: the kernel regressors' figures, corrected by the
    /// residual (when trained) and the calibration factor, kernels and overhead alike, so that the
    /// breakdown adds up to the total.
    std::vector<DevicePrice> price_networks(std::span<const graph::Graph* const> graphs) const;

    /// Every network's total, as price_networks() gives it, without the breakdown: the route of
    /// a search, which asks for many prices and reads only totals.
    std::vector<double> price_totals(std::span<const graph::Graph* const> graphs) const {
        return priced(graphs, nullptr);
    }

    /// Fits the model to networks measured on the machine at hand, replacing any earlier
    /// calibration: a global factor (the median ratio of measured to predicted latency, robust to
    /// one odd network) and, with three shots or more and options.per_family, one factor per
    /// kernel family on top. The family factors come either from the shots' latencies, fitted in
    /// log space with a penalty that shrinks each toward 1, or, given `profiles` (per shot, its
    /// kernels as the runtime's profiler timed them), from the profiled
    /// kernels: each family's measured time over its price, against that of all kernels, shrunk
    /// toward 1 by the family's kernel count. Or, instead of family factors, a factor that moves
    /// with the kernel's arithmetic intensity (KernelIntensityFactor), its slope from the profiled
    /// kernels or fitted to the latencies. Which (or none of them) is chosen by leave-one-out
    /// over the shots, the fewest free factors within a standard error of the best. With three
    /// shots or more the result is applied only when its leave-one-out error beats the model as
    /// given on the same shots: calibrating never makes the model worse on what it was shown.
    /// @throws config_error for no networks, sizes that disagree, a latency that is not positive,
    ///         or profiles that are not one per shot (a shot without one: an empty list) or that
    ///         name a kernel the shot's kernel pass does not have
    CalibrationReport calibrate(std::span<const graph::Graph* const> graphs, std::span<const double> measured_ms,
                                const CalibrationOptions& options = {},
                                std::span<const std::vector<ProfiledKernel>> profiles = {});

    /// Replaces the fusion and layout rules the kernel pass prices networks under, keeping the
    /// regressors, run overhead, sample boundary, calibration and residual: for a rule `device
    /// check` found after the build. Sound where the new rules leave the kernels of the build's own
    /// networks as they were (their samples keep their kernels); otherwise build again
    /// (`device build --refit` reuses the measurements).
    /// @throws config_error for rules that do not check, or for rules of another device
    void replace_rules(FusionRules rules);

    // ---------------------------------------------------------------- inspection
    const FusionRules& rules() const { return m_rules; }
    const std::map<std::string, KernelKindModel, std::less<>>& kinds() const { return m_kinds; }
    std::vector<std::string> priced_kinds() const;
    double run_overhead_ms() const { return m_run_overhead_ms; }
    double calibration_factor() const { return m_scale; }
    /// Per kernel family, on top of calibration_factor() (empty: none fitted).
    const std::map<std::string, double, std::less<>>& family_factors() const { return m_family_scale; }
    /// The calibration factor that moves with a kernel's arithmetic intensity, on top of the
    /// others (slope 0: none).
    const KernelIntensityFactor& intensity_factor() const { return m_intensity_factor; }
    std::uint32_t calibration_shots() const { return m_calibration_shots; }
    /// Free text the builder records (device, runner, budget, sample counts, build time).
    const std::string& build_info() const { return m_build_info; }
    void set_build_info(std::string info) { m_build_info = std::move(info); }

    /// The kind whose regressor prices a kernel of kind `k`: its own, else the kind without its
    /// last fusion ("Conv+Add+Act" -> "Conv+Add" -> "Conv"), else the nearest family that has one.
    std::string nearest_priced_kind(const std::string& k) const;

    /// The regressor figures of kernel rows priced before, kept across calls (a search prices
    /// networks built from a few hundred distinct kernels, one population after another): their
    /// capacity in rows, or 0 to keep none; the prices are the same either way.
    void set_memo_capacity(std::size_t rows) { m_memo.set_capacity(rows); }
    const KernelFigureMemo& memo() const { return m_memo; }

protected:
    std::vector<estimators::Prediction> compute(std::span<const graph::Graph* const> graphs) const override;

    cost::GraphCost price(const graph::Graph& g) const override;

private:
    friend struct detail::DeviceModelTraining;
    /// What fit() runs (device_model_training.hpp).
    estimators::FitResult fit_impl(const train::TrainData& train, const train::TrainData& validation,
                                   const estimators::FitOptions& options);
    /// The regressors' figure of every kernel of every network, without the residual and the
    /// calibration factor: network i's kernels at ms[start[i] .. start[i + 1]).
    struct KernelFigures {
        std::vector<double> ms;
        std::vector<std::size_t> start{0};
        std::vector<double> output_bytes, reorder_bytes;  ///< per kernel, what its sample's edges moved
        std::vector<double> intensity;                    ///< per kernel, its FLOPs per byte moved (0: none moved)
        /// per kernel, its family's index in `families` (filled when asked for, or when the model
        /// has family factors)
        std::vector<std::uint16_t> family;
        std::vector<std::string> families;
    };

    /// Every network's total, and with `details` its price kernel by kernel: one computation for
    /// both, so that the totals alone are the breakdown's totals.
    std::vector<double> priced(std::span<const graph::Graph* const> graphs, std::vector<DevicePrice>* details) const;

    /// The kernel regressors' figures (kernel_figures without residual or calibration factor); with
    /// `details`, each network's kernels described (kind, nodes, layout, the kind that priced them,
    /// warnings; their times are left to the caller); with `samples`, each network's kernel graph
    /// as the residual reads it.
    KernelFigures kernel_figures(std::span<const graph::Graph* const> graphs, std::vector<DevicePrice>* details,
                                 std::vector<KernelGraphSample>* samples, bool families = false) const;

    /// The networks of `d` as the sample-boundary fit reads them: the regressors' own figures
    /// (called while no boundary is in use), each kernel's edge bytes, the overhead, the latency.
    std::vector<BoundaryNetwork> boundary_networks(const train::TrainData& d) const;

    /// The rules without their run-time fusions: folds stay (they happen at load time).
    FusionRules unfused_rules() const;

    /// Families in the order of likeness to `family`'s work (what a kernel reads and writes).
    static std::vector<std::string> nearest_families(std::string_view family);

    double cost_scale() const override { return 1.0; }

    FusionRules m_rules;  ///< checked whenever set (build, deserialize, replace_rules)
    std::map<std::string, KernelKindModel, std::less<>> m_kinds;
    double m_run_overhead_ms = 0;
    double m_scale = 1.0;
    BoundaryScale m_boundary_scale = BoundaryScale::one;
    std::uint32_t m_calibration_shots = 0;
    std::map<std::string, double, std::less<>> m_family_scale;
    KernelIntensityFactor m_intensity_factor{};
    std::string m_build_info;
    ResidualSlot m_residual;
    KernelResidualOptions m_residual_options{};
    SampleBoundaryCost m_boundary{};
    std::optional<BoundaryFitReport> m_boundary_fit;
    bool m_fit_boundary = true, m_fit_residual = true;
    mutable KernelFigureMemo m_memo;
    /// A number no other model object of the process has had, fresh for every copy: what a thread
    /// remembers of one model's kinds between pricing calls (kernel_figures) is told apart from
    /// another's by it. The kinds are set only by build() and deserialize(), before any price.
    struct Identity {
        std::uint64_t id = next();
        Identity() = default;
        Identity(const Identity&) : id(next()) {}
        Identity& operator=(const Identity&) {
            id = next();
            return *this;
        }
        static std::uint64_t next() {
            static std::atomic<std::uint64_t> last{0};
            return ++last;
        }
    };
    Identity m_identity;
};

namespace detail {
#if DNNCOST_HEADER_ONLY  // a program of the compiled mode takes these entries from the library
inline estimators::RegistryEntry device_model_entry() {
    return estimators::detail::entry_of<DeviceModel>(
        [](DeviceModel&, const estimators::PresetSettings&) {},
        "kernel-level device model: the runtime's kernels (measured fusion and "
        "layout rules) priced by per-kind regressors learnt from single-kernel "
        "measurements; built by `dnncost device build`, fit() calibrates it");
}
#endif

#if !defined(DNNCOST_COMPILED)
/// The "device" preset, registered by including this header (see preset_registry.hpp); registry.hpp
/// leaves it out in header-only mode: only programs that price with device models compile its
/// regressors and kernel pass. The compiled library registers it itself.
inline const bool device_model_registered = [] {
    estimators::register_estimator(std::string(DeviceModel::kind), device_model_entry());
    return true;
}();
#endif
}  // namespace detail

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/device_model_impl.hpp>
#endif
