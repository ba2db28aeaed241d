// The search spaces: architecture parsing, graph builders, the space registry.
// The only library source that includes these definitions (core/config.hpp).
#include <dnncost/spaces/fbnet_impl.hpp>
#include <dnncost/spaces/kws_impl.hpp>
#include <dnncost/spaces/nb201_impl.hpp>
#include <dnncost/spaces/network_name_impl.hpp>
#include <dnncost/spaces/ofa_impl.hpp>
#include <dnncost/spaces/parse_impl.hpp>
#include <dnncost/spaces/registry_impl.hpp>
#include <dnncost/spaces/sample_impl.hpp>
#include <dnncost/spaces/synthetic_impl.hpp>
#include <dnncost/spaces/vit_impl.hpp>
