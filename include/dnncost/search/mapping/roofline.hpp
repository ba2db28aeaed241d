#pragma once
/// @file roofline.hpp
/// A platform of compute units costed by the roofline model, layered on the pricing layer:
/// each unit is a cost::DeviceSpec (cost/analytic.hpp) and each layer takes
/// cost::roofline_seconds of its FLOPs and bytes on that device derated by an efficiency that
/// depends on the unit and the layer's operator class (dataflow affinity), i.e.
/// max(FLOPs / (peak x efficiency), bytes / (bandwidth x efficiency)) + the device's
/// per-operator overhead. What this file adds to the roofline is the mapping's own view: energy
/// (FLOPs x energy per FLOP + bytes x energy per byte + static power x time), the support
/// relation (a unit with efficiency 0 for a class does not run blocks containing that class)
/// and transfers between units through the shared memory at its bandwidth.
///
/// three_accelerator_platform() is the example in the spirit of MaGNAS Sec. 5.7.2 (three
/// MAESTRO accelerators with the kcp_ws, ykp_os and dpt dataflows): a weight-stationary, an
/// output-stationary and a depthwise-friendly accelerator, each with its own efficiency per
/// operator class.
#include <array>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/search/mapping/platform.hpp>
#include <dnncost/search/mapping/workload.hpp>

namespace dnncost::search::mapping {

/// One compute unit of a roofline platform.
struct RooflineUnit {
    /// The unit's name, peak FLOP/s, bandwidth (B/s between the unit and the shared memory)
    /// and per-layer overhead.
    cost::DeviceSpec device{"", 1e12, 25.6e9, 0.0};
    /// Fraction of peak and bandwidth a layer of each OpClass reaches (0 = not supported).
    std::array<double, num_op_classes> efficiency{1.0, 1.0, 1.0, 1.0};
    double energy_per_flop = 1e-12;   ///< J
    double energy_per_byte = 20e-12;  ///< J per byte of memory traffic
    double static_power = 0.0;        ///< W while the unit runs a block
};

/// Roofline costs of block workloads on a set of units (one DVFS setting, "nominal").
class RooflinePlatform {
public:
    /// @param transfer_bandwidth B/s of the shared memory for inter-unit transfers
    /// @param transfer_energy_per_byte J per byte written or read in a transfer
    /// @throws config_error for no unit, a non-positive peak or bandwidth, a negative overhead,
    ///         an efficiency outside [0, 1], negative energies.
    DNNCOST_FUNC RooflinePlatform(std::string name, std::vector<RooflineUnit> units, double transfer_bandwidth,
                                  double transfer_energy_per_byte);

    const Platform& platform() const { return m_platform; }
    const std::vector<RooflineUnit>& units() const { return m_units; }

    /// Cost of a block on unit `cu` (ms, mJ), or nullopt if the unit lacks one of its classes.
    DNNCOST_FUNC std::optional<BlockCost> cost(const BlockWork& w, std::size_t cu, std::size_t dvfs) const;

private:
    Platform m_platform;
    std::vector<RooflineUnit> m_units;
    double m_transfer_bandwidth, m_transfer_energy;
};

/// Three accelerators sharing a 51.2 GB/s LPDDR memory (efficiencies in class order conv,
/// dense, gather, elementwise):
///   DSA-k  weight-stationary, 4 TFLOP/s: 0.55 / 0.85 / 0 (no gather unit: cannot run a
///          Grapher) / 0.30; 0.5 pJ/FLOP; 0.4 W static
///   DSA-y  output-stationary, 4 TFLOP/s: 0.85 / 0.55 / 0.25 / 0.40; 0.6 pJ/FLOP; 0.5 W
///   DSA-d  depthwise-friendly, 2 TFLOP/s: 0.35 / 0.30 / 0.70 / 0.80; 0.35 pJ/FLOP; 0.2 W
/// 20 pJ per byte of memory traffic on all three; transfers at 51.2 GB/s and 20 pJ/byte.
/// These are illustrative design points, not a measured chip.
DNNCOST_FUNC RooflinePlatform three_accelerator_platform();

}  // namespace dnncost::search::mapping

#if !defined(DNNCOST_COMPILED)
#include <dnncost/search/mapping/roofline_impl.hpp>
#endif
