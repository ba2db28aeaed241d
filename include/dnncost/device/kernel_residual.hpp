#pragma once
/// @file kernel_residual.hpp
/// A graph-level residual for the kernel-level device model, after HiFi-SAGE's dual head: the
/// additive path is the kernel sum (given, not learnt) and a small GNN over the kernel graph
/// learns r(x) ~ log(measured / kernel sum), the part the sum misses (layout changes, memory
/// reuse and cache effects between kernels). The prediction is sum_ms * exp(r).
///
/// r = c tanh(z / c) with c = log 4, z the network's output: a smooth clamp, so that the factor
/// stays in [1/4, 4] for any input and the loss keeps a gradient near the bound. The last layer
/// starts at zero, so an untrained residual returns exactly the kernel sum, and a fit that does
/// not beat the sum on validation keeps the zero residual.
///
/// The network: per-column standardisation (train statistics, saved with the model; values
/// beyond feature_clip standard deviations are clipped so that no input can overflow the
/// arithmetic), `layers` mean-aggregating SAGE convolutions over producers and consumers with
/// ReLU, mean | max readout over the kernels, one linear unit. Double precision throughout:
/// the model is small and the gradient check is exact to rounding.
///
/// The larger functions are defined in kernel_residual_impl.hpp: compiled into dnncost::compiled in
/// compiled mode (core/config.hpp), included at the end of this header otherwise.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_graph_sample.hpp>
#include <dnncost/device/residual_slot.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/features/batch.hpp>
#include <dnncost/features/encode.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/nn/linear.hpp>
#include <dnncost/nn/module.hpp>
#include <dnncost/nn/parameter.hpp>
#include <dnncost/nn/readout/pooling.hpp>

namespace dnncost::device {

class KernelResidual;

namespace detail {
struct KernelResidualTraining;
/// What KernelResidual::fit runs: set where kernel_residual_training.hpp is compiled in, null
/// elsewhere (a program that only prices does not compile the training).
using KernelResidualFit = estimators::FitResult (*)(KernelResidual&, const std::vector<KernelGraphSample>&,
                                                    std::span<const double>, const std::vector<KernelGraphSample>&,
                                                    std::span<const double>, const estimators::FitOptions&);
inline KernelResidualFit kernel_residual_training = nullptr;
}  // namespace detail

/// The learnt correction of the kernel sum. Not safe to call from several threads at once on
/// one object: the layers keep their activations between forward and backward.
class KernelResidual {
public:
    /// |r| <= bound: the factor stays within [1/4, 4].
    static constexpr double bound = 1.3862943611198906;  // log 4
    /// Standardised inputs are clipped to this many standard deviations.
    static constexpr double feature_clip = 50.0;
    static constexpr int batch_size = 32;

    /// @throws config_error for a non-positive width, layer count, rate, epoch count or patience,
    ///         or a negative weight decay
    explicit KernelResidual(KernelResidualOptions options = {});
    /// A copy is the saved model loaded again: the layers' buffers are not worth copying.
    KernelResidual(const KernelResidual& other);
    KernelResidual& operator=(const KernelResidual& other) {
        if (this != &other) *this = KernelResidual(other);
        return *this;
    }
    // Defined with the layers' types complete (kernel_residual_impl.hpp): a program that only
    // moves or destroys a residual does not instantiate the GNN's layers.
    KernelResidual(KernelResidual&&) noexcept;
    KernelResidual& operator=(KernelResidual&&) noexcept;
    ~KernelResidual();

    /// Learns log(measured_ms / sum_ms) on `train`, early-stopped on the validation log-MSE
    /// (the training loss when `validation` is empty), and keeps the best epoch; when no epoch
    /// beats the zero residual on that score, keeps the zero residual and says so in `summary`.
    /// Runs the training of kernel_residual_training.hpp.
    /// @throws shape_error / config_error for a bad sample or latency, naming its set and index;
    ///         config_error in a header-only program that does not include that header
    estimators::FitResult fit(const std::vector<KernelGraphSample>& train, std::span<const double> train_ms,
                              const std::vector<KernelGraphSample>& validation, std::span<const double> validation_ms,
                              const estimators::FitOptions& options);

    /// exp(r), in [1/4, 4]; 1 when not fitted, when the zero residual was kept, or for a network
    /// without kernels.
    /// @throws shape_error / config_error for a malformed sample
    double factor(const KernelGraphSample& s) const;
    double predict_ms(const KernelGraphSample& s) const { return s.sum_ms * factor(s); }
    /// factor() of every sample, the networks batched through the GNN together.
    /// @throws shape_error / config_error for a malformed sample, naming its index
    std::vector<double> factors(const std::vector<KernelGraphSample>& samples) const;
    bool fitted() const { return m_in > 0; }
    /// The zero residual: untrained, or kept because no epoch beat it.
    bool is_zero() const { return !fitted() || m_zero; }

    void save(io::BinaryWriter& w) const;
    /// @throws parse_error (through r.fail) on a damaged payload: unknown version, bad options or
    ///         sizes, non-finite or non-positive statistics, non-finite weights
    static KernelResidual load(io::BinaryReader& r);

    // The steps of fit, public for the gradient check and for callers that drive training.

    /// Standardisation statistics from `train` and fresh layers (head at zero). The model then
    /// counts as fitted and not zero: it predicts the kernel sum until its head moves.
    void initialise(const std::vector<KernelGraphSample>& train, std::uint64_t seed);

    /// Every trainable parameter, layer by layer (SAGE layers, then the head).
    std::vector<nn::Parameter<double>*> parameters() { return all_parameters(); }

    /// Mean over `samples` of (r - log(measured / sum))^2; the gradients of every parameter
    /// are set to its derivative (not accumulated). Requires initialise().
    double loss_and_gradient(const std::vector<KernelGraphSample>& samples, std::span<const double> measured_ms);

private:
    friend struct detail::KernelResidualTraining;

    static constexpr std::uint32_t format_version = 1;

    std::vector<nn::Parameter<double>*> all_parameters() const;

    void build(Index in, Rng& rng);

    /// Checks one sample: shapes agree, everything finite, latencies positive, edges in range.
    /// `width` < 0: any column count.
    static void check_sample(const KernelGraphSample& s, std::size_t i, const char* set, Index width);
    void check_set(const std::vector<KernelGraphSample>& set, std::span<const double> ms, const char* name) const;

    static std::vector<double> log_ratios(const std::vector<KernelGraphSample>& set, std::span<const double> ms);
    static double mean_square(const std::vector<double>& v);

    features::EncodedGraph encode(const KernelGraphSample& s) const;
    std::vector<features::EncodedGraph> encode_set(const std::vector<KernelGraphSample>& set) const;

    /// The head's output z, one per graph of the batch.
    const Mat<double>& forward(const features::GraphBatch<double>& batch, nn::Context<double>& ctx) const;
    static double squash(double z) {
        return std::isnan(z) ? 0.0 : std::clamp(bound * std::tanh(z / bound), -bound, bound);
    }

    std::vector<double> residuals(std::span<const features::EncodedGraph* const> graphs) const;
    std::vector<double> residuals(const std::vector<features::EncodedGraph>& enc) const;

    double batch_loss_and_gradient(std::span<const features::EncodedGraph* const> graphs, const std::vector<double>& t);

    KernelResidualOptions m_o;
    Index m_in = 0;  ///< input width; 0 until initialised
    bool m_zero = true;
    std::vector<double> m_mean, m_scale;
    // Held by pointer: a const forward pass writes the layers' activation buffers, not the model.
    std::unique_ptr<nn::Sequential<double>> m_convs;
    std::unique_ptr<nn::Pooling<double>> m_pool;
    std::unique_ptr<nn::Linear<double>> m_head;
};

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/kernel_residual_impl.hpp>
#endif
