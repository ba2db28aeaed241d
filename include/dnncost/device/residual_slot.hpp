#pragma once
/// @file residual_slot.hpp
/// A device model's optional graph-level residual (kernel_residual.hpp) as the model holds it.
///
/// The residual is a small GNN; most models have none, and a program that only prices should not
/// compile a GNN to find that out. So the model holds the residual by pointer and reaches it
/// through operations that kernel_residual.hpp registers where it is compiled in: in every
/// program that links dnncost::compiled, and in a header-only program that includes it. Loading
/// a model that carries a trained residual anywhere else fails with a message that says which
/// header to include.
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/device/kernel_graph_sample.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/io/serialize.hpp>

namespace dnncost::device {

struct KernelResidualOptions {
    int hidden = 32;              ///< width of the SAGE layers
    int layers = 2;               ///< SAGE layers (>= 1)
    double learning_rate = 1e-3;  ///< Adam's initial rate
    double weight_decay = 1e-4;   ///< decoupled (AdamW) weight decay
    int max_epochs = 300;         ///< used when FitOptions::max_epochs is -1
    int patience = 30;            ///< used when FitOptions::patience is -1
    std::uint64_t seed = 1;       ///< weights and mini-batch order; FitOptions::seed overrides it when non-zero
};

class KernelResidual;

namespace detail {
/// What a device model does with its residual; set where kernel_residual.hpp is compiled in.
struct KernelResidualOps {
    std::shared_ptr<KernelResidual> (*load)(io::BinaryReader&);
    void (*save)(const KernelResidual&, io::BinaryWriter&);
    std::shared_ptr<KernelResidual> (*copy)(const KernelResidual&);
    bool (*is_zero)(const KernelResidual&);
    std::vector<double> (*factors)(const KernelResidual&, const std::vector<KernelGraphSample>&);
};
inline const KernelResidualOps* kernel_residual_ops = nullptr;

/// Fits a new residual of the given options to networks' kernel graphs and measured latencies
/// (KernelResidual::fit) into `out`; set where kernel_residual_training.hpp is compiled in, so
/// that fitting a device model without a residual does not compile the GNN's training.
using KernelResidualFitter = estimators::FitResult (*)(
    const KernelResidualOptions&, const std::vector<KernelGraphSample>& train, std::span<const double> train_ms,
    const std::vector<KernelGraphSample>& validation, std::span<const double> validation_ms,
    const estimators::FitOptions&, std::shared_ptr<KernelResidual>& out);
inline KernelResidualFitter kernel_residual_fitter = nullptr;

inline const KernelResidualOps& residual_ops() {
    if (!kernel_residual_ops)
        raise<config_error>(
            "device model: its graph-level residual is not compiled into this program; include "
            "<dnncost/device/kernel_residual.hpp> (header-only mode) or link dnncost::compiled");
    return *kernel_residual_ops;
}
}  // namespace detail

/// Holds a KernelResidual or nothing. A copy holds a copy of the residual: the residual keeps
/// its layers' buffers between calls, so two models must not share one.
class ResidualSlot {
public:
    ResidualSlot() = default;
    explicit ResidualSlot(std::shared_ptr<KernelResidual> r) : m_r(std::move(r)) {}
    ResidualSlot(const ResidualSlot& o) : m_r(o.m_r ? detail::residual_ops().copy(*o.m_r) : nullptr) {}
    ResidualSlot& operator=(const ResidualSlot& o) {
        if (this != &o) *this = ResidualSlot(o);
        return *this;
    }
    ResidualSlot(ResidualSlot&&) noexcept = default;
    ResidualSlot& operator=(ResidualSlot&&) noexcept = default;
    ~ResidualSlot() = default;

    /// The residual, or null.
    const KernelResidual* get() const { return m_r.get(); }
    /// Whether it holds a residual that changes prices (not the zero residual).
    bool trained() const { return m_r && !detail::residual_ops().is_zero(*m_r); }
    /// The residual's factor of every sample (requires trained()).
    std::vector<double> factors(const std::vector<KernelGraphSample>& samples) const {
        return detail::residual_ops().factors(*m_r, samples);
    }
    void reset() { m_r.reset(); }

    /// A flag, then the residual's payload when it is trained: a zero residual prices as none and
    /// is saved as none.
    void save(io::BinaryWriter& w) const {
        w.put_bool(trained());
        if (trained()) detail::residual_ops().save(*m_r, w);
    }
    /// @throws parse_error (through r.fail) on a damaged payload, or when the payload holds a
    ///         residual and this program does not compile residuals in
    static ResidualSlot load(io::BinaryReader& r) {
        if (!r.get_bool("has residual")) return {};
        if (!detail::kernel_residual_ops)
            r.fail("the model carries a graph-level residual, which this program does not compile in: include "
                   "<dnncost/device/kernel_residual.hpp> (header-only mode) or link dnncost::compiled");
        return ResidualSlot(detail::kernel_residual_ops->load(r));
    }

private:
    // shared_ptr: its deleter is made where KernelResidual is complete, so this header need not be
    std::shared_ptr<KernelResidual> m_r;
};

}  // namespace dnncost::device
