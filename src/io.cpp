// Files (reading, atomic writing), model containers, the printable form of error messages and the
// thread pool.
// The only library source that includes these definitions (core/config.hpp).
#include <dnncost/core/error_impl.hpp>
#include <dnncost/core/parallel_impl.hpp>
#include <dnncost/io/file_impl.hpp>
#include <dnncost/io/serialize_impl.hpp>
