// The operator graph's larger members (graph/graph_impl.hpp), built once for every program.
#include <dnncost/graph/graph_impl.hpp>
