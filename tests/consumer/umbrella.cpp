// The umbrella header and every estimator preset, header-only (see main_onnx.cpp).
#include <string>
#include <vector>

#include <dnncost/dnncost.hpp>
#include <dnncost/estimators/registry.hpp>

std::vector<std::string> umbrella_estimator_names() {
    // An untrained preset is made through the registry, so its factory is compiled here.
    const auto hifisage = dnncost::estimators::make_estimator("hifisage");
    if (hifisage == nullptr) return {};
    return dnncost::estimators::estimator_names();
}
