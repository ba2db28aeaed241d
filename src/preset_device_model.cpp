// The kernel-level device model, its kernel pass, kernel features, regressors and residual,
// compiled once: the only library source that includes their _impl headers (a second one would
// define their functions twice).
#include <dnncost/device/device_model.hpp>
#include <dnncost/device/device_model_impl.hpp>
#include <dnncost/device/device_model_training.hpp>
#include <dnncost/device/fusion_rules_impl.hpp>
#include <dnncost/device/kernel_features_impl.hpp>
#include <dnncost/device/kernel_graph_impl.hpp>
#include <dnncost/device/kernel_graph_sample_impl.hpp>
#include <dnncost/device/kernel_kind_impl.hpp>
#include <dnncost/device/kernel_residual_impl.hpp>
#include <dnncost/device/kernel_residual_training.hpp>
#include <dnncost/device/mlp_regressor_impl.hpp>
#include <dnncost/device/roofline_base_fit_impl.hpp>
#include <dnncost/device/roofline_regressor_impl.hpp>
#include <dnncost/device/tabular_choice_impl.hpp>
#include <dnncost/device/tabular_regressor_impl.hpp>
#if defined(DNNCOST_HAS_XGBOOST)
#include <dnncost/device/gbt_regressor_impl.hpp>
#endif

namespace dnncost::estimators::detail {
RegistryEntry builtin_device_model_entry() { return device::detail::device_model_entry(); }
}  // namespace dnncost::estimators::detail
