// Training and evaluation, adaptation to a device, model selection, warm starts.
// The only library source that includes these definitions (core/config.hpp).
#include <dnncost/device/device_adaptation_impl.hpp>
#include <dnncost/device/pool_prior_impl.hpp>
#include <dnncost/estimators/adaptation_impl.hpp>
#include <dnncost/estimators/model_selection_impl.hpp>
#include <dnncost/estimators/ridge_impl.hpp>
#include <dnncost/estimators/training_impl.hpp>
#include <dnncost/estimators/warm_start_impl.hpp>
