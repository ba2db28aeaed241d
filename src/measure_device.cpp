// Building device models and operator tables by measuring.
// The only library source that includes these definitions (core/config.hpp).
#include <dnncost/device/device_build_impl.hpp>
#include <dnncost/device/fusion_discovery_impl.hpp>
#include <dnncost/device/fusion_probe_impl.hpp>
#include <dnncost/device/in_context_impl.hpp>
#include <dnncost/device/kernel_check_impl.hpp>
#include <dnncost/device/kernel_sample_file_impl.hpp>
#include <dnncost/device/kernel_sampler_impl.hpp>
#include <dnncost/device/kernel_sampling_impl.hpp>
#include <dnncost/device/network_profiling_impl.hpp>
#include <dnncost/measure/model_file_impl.hpp>
#include <dnncost/measure/op_table_build_impl.hpp>
#include <dnncost/measure/op_table_campaign_impl.hpp>
#include <dnncost/measure/probe_impl.hpp>
