// Measuring: runners and their protocol, the harness, results stores, hosts.
// The only library source that includes these definitions (core/config.hpp).
#include <dnncost/measure/campaign_impl.hpp>
#include <dnncost/measure/candidates_impl.hpp>
#include <dnncost/measure/harness_impl.hpp>
#include <dnncost/measure/host_impl.hpp>
#include <dnncost/measure/json_impl.hpp>
#include <dnncost/measure/kernel_profiles_impl.hpp>
#include <dnncost/measure/machine_load_impl.hpp>
#include <dnncost/measure/process_impl.hpp>
#include <dnncost/measure/reference_impl.hpp>
#include <dnncost/measure/reference_model_impl.hpp>
#include <dnncost/measure/run_conditions_impl.hpp>
#include <dnncost/measure/runner_impl.hpp>
#include <dnncost/measure/runner_pool_impl.hpp>
#include <dnncost/measure/runner_protocol_impl.hpp>
#include <dnncost/measure/scratch_dir_impl.hpp>
#include <dnncost/measure/sidecar_impl.hpp>
#include <dnncost/measure/store_impl.hpp>
#include <dnncost/measure/store_mix_impl.hpp>
