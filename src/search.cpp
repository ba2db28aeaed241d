// Compression: channel coupling, pruning, the measured compression search.
// The only library source that includes these definitions (core/config.hpp).
#include <dnncost/search/compression/channels_impl.hpp>
#include <dnncost/search/compression/measured_compression_impl.hpp>
#include <dnncost/search/compression/prune_impl.hpp>
