#pragma once
/// @file thread_precision.hpp
/// The GEMM precision of the calling thread. Precision is per thread so that an estimator can
/// run at the precision its model was trained in while another runs at another.
#include <dnncost/nn/precision.hpp>

namespace dnncost::nn::kernels {

namespace detail {
inline Precision& thread_precision() {
    thread_local Precision p = Precision::fp32;
    return p;
}
}  // namespace detail

/// The precision GEMMs issued from this thread use.
inline Precision precision() { return detail::thread_precision(); }

/// Sets this thread's GEMM precision for its lifetime and restores the previous one.
class PrecisionScope {
public:
    explicit PrecisionScope(Precision p) : m_prev(detail::thread_precision()) { detail::thread_precision() = p; }
    PrecisionScope(const PrecisionScope&) = delete;
    PrecisionScope& operator=(const PrecisionScope&) = delete;
    ~PrecisionScope() { detail::thread_precision() = m_prev; }

private:
    Precision m_prev;
};

}  // namespace dnncost::nn::kernels
