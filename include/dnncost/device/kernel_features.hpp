#pragma once
/// @file kernel_features.hpp
/// The feature vector of one kernel of a device::KernelGraph, and the kernel kind key that groups
/// kernels so that one latency regressor per kind makes sense.
///
/// The kind key (device/kernel_kind.hpp) says which regressor prices a kernel.
///
/// Features are the same for every kind (one fixed vector, named by kernel_feature_names()); a
/// size that spans orders of magnitude enters as log2(1 + x).
///
/// The larger functions are defined in kernel_features_impl.hpp: compiled into dnncost::compiled in
/// compiled mode (core/config.hpp), included at the end of this header otherwise.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_kind.hpp>
#include <dnncost/graph/flat_view.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::device {

namespace detail {
/// log2(1 + x) of an x that is not a whole number below 1024 (log2p() reads those from a
/// table): larger ones (MACs, bytes) recur from kernel to kernel and network to network, and are
/// remembered by their bits in a small cache of the thread: bit for bit what the call would give.
inline double log2p_remembered(double x) {
    // direct-mapped by the bits' hash; the empty slot's bits (those of +0.0) never get here
    struct Slot {
        std::uint64_t bits;
        double value;
    };
    thread_local std::array<Slot, 512> memo{};
    std::uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    auto& slot = memo[static_cast<std::size_t>((bits * 0x9e3779b97f4a7c15ull) >> 55)];
    if (slot.bits != bits) slot = {bits, std::log2(1.0 + std::max(0.0, x))};
    return slot.value;
}
/// log2(1 + x) for x >= 0 (0 below). Dimensions and counts are mostly small whole numbers,
/// read from a table of the same function's values; small enough to inline, as a kernel's
/// features ask for it some twenty times.
inline double log2p(double x) {
    static const auto small = [] {
        std::array<double, 1024> t{};
        for (std::size_t i = 0; i < t.size(); ++i) t[i] = std::log2(1.0 + static_cast<double>(i));
        return t;
    }();
    if (x >= 0 && x < static_cast<double>(small.size())) {
        const auto i = static_cast<std::size_t>(x);
        if (static_cast<double>(i) == x) return small[i];
    }
    return log2p_remembered(x);
}
}  // namespace detail

/// The names of the features kernel_features() returns, in order.
DNNCOST_FUNC const std::vector<std::string>& kernel_feature_names();

/// A kernel's kind and features (kernel_feature_names() order).
struct KernelFeatures {
    KernelKind kind;
    std::vector<double> values;
};

/// The canonical dimensions of a kernel: batch N, input channels C and spatial H x W (for a
/// token tensor [B, T, D]: C = D, H = T, W = 1; for a matrix product [.., M, K] x [K, N]:
/// C = K, H = M, W = 1, out channels = N), out channels and out spatial size.
struct KernelDims {
    std::int64_t n = 1, c = 1, h = 1, w = 1, k = 1, oh = 1, ow = 1;
};

DNNCOST_FUNC KernelDims kernel_dims(const graph::Shape& in, const graph::Shape& out);

namespace detail {
/// The features of kernel `k` of `kg` (a kernel graph of `g`) of kind `kind`, written to
/// `values` (as many as kernel_feature_names()); windows read from `view` (of `g`) when given.
DNNCOST_FUNC void write_kernel_features(const graph::Graph& g, const graph::FlatView* view, const KernelGraph& kg,
                                        const Kernel& k, std::int64_t block, const KernelKind& kind,
                                        std::span<double> values);

inline void check_kernel_features_call(const KernelGraph& kg, std::size_t index, std::span<double> values) {
    if (index >= kg.kernels.size())
        raise<config_error>("kernel_features: kernel ", index, " of ", kg.kernels.size(), " does not exist");
    if (values.size() != kernel_feature_names().size())
        raise<shape_error>("kernel_features: room for ", values.size(), " features, there are ",
                           kernel_feature_names().size());
}
}  // namespace detail

/// The features of kernel `index` of `kg` (a kernel graph of `g`) written to `values`
/// (kernel_feature_names() order, as many), and its kind: kernel_features() without a vector of
/// its own, for a caller that prices many kernels. `block` as for kernel_features().
/// @throws config_error for an index out of range; shape_error for `values` of another size
inline KernelKind kernel_features_into(const graph::Graph& g, const KernelGraph& kg, std::size_t index,
                                       std::int64_t block, std::span<double> values) {
    detail::check_kernel_features_call(kg, index, values);
    const auto& k = kg.kernels[index];
    KernelKind kind = kernel_kind(g, kg, k);
    detail::write_kernel_features(g, nullptr, kg, k, block, kind, values);
    return kind;
}

/// kernel_features_into() of a kernel of the graph of `view` whose kind is known (kernel_kind()
/// of it), its windows read from the view: for a caller that prices many kernels and works out
/// a kind once for the many kernels that share it.
/// @throws as kernel_features_into()
inline void kernel_features_into(const graph::FlatView& view, const KernelGraph& kg, std::size_t index,
                                 std::int64_t block, const KernelKind& kind, std::span<double> values) {
    detail::check_kernel_features_call(kg, index, values);
    detail::write_kernel_features(view.graph(), &view, kg, kg.kernels[index], block, kind, values);
}

/// The features of kernel `index` of `kg` (a kernel graph of `g`). `block` is the device's
/// layout block (its rule set's), used to judge channel alignment even for a kernel that runs
/// in the plain layout (0: no blocked layout).
/// @throws config_error for an index out of range
inline KernelFeatures kernel_features(const graph::Graph& g, const KernelGraph& kg, std::size_t index,
                                      std::int64_t block) {
    KernelFeatures out;
    out.values.resize(kernel_feature_names().size());
    out.kind = kernel_features_into(g, kg, index, block, out.values);
    return out;
}

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/kernel_features_impl.hpp>
#endif
