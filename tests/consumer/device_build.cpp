// Device builds, header-only (see main_onnx.cpp).
#include <string>

#include <dnncost/device/device_build.hpp>

std::string device_build_check() {
    // The calibration shots are seeded: the same networks on every machine, each named by its
    // qualified architecture.
    const auto a = dnncost::device::calibration_networks(2);
    const auto b = dnncost::device::calibration_networks(2);
    if (a.size() != 2 || b.size() != 2) return "calibration_networks(2) gave another count";
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].name().empty() || a[i].name() != b[i].name() || a[i].num_nodes() != b[i].num_nodes())
            return "calibration_networks is not the same twice";
    }
    return {};
}
