// Building device models and operator tables by measuring.
// The only library source that includes these definitions (core/config.hpp).
#include <dnncost/measure/device_build_impl.hpp>
#include <dnncost/measure/fusion_probe_impl.hpp>
#include <dnncost/measure/in_context_impl.hpp>
#include <dnncost/measure/kernel_check_impl.hpp>
#include <dnncost/measure/kernel_sample_file_impl.hpp>
#include <dnncost/measure/kernel_sampling_impl.hpp>
#include <dnncost/measure/model_file_impl.hpp>
#include <dnncost/measure/network_profiling_impl.hpp>
#include <dnncost/measure/op_table_build_impl.hpp>
#include <dnncost/measure/op_table_campaign_impl.hpp>
#include <dnncost/measure/probe_impl.hpp>
