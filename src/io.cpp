// Files (reading, atomic writing), model containers and the printable form of error messages.
// The only library source that includes these definitions (core/config.hpp).
#include <dnncost/core/error_impl.hpp>
#include <dnncost/io/file_impl.hpp>
#include <dnncost/io/serialize_impl.hpp>
