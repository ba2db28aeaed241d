#pragma once
/// @file kernel_profiles.hpp
/// The runtime kernels of a results store's networks (`results.kernels.jsonl` beside
/// `results.csv`): one JSON line per network, `{"key": ..., "id": ..., "kernels": [{"name", "op",
/// "ms"}, ...]}`, as a profiling runner answered them (runner_protocol.hpp), and, where the runner
/// wrote its optimised graph, that graph's nodes (`"nodes": [{"name", "op", "inputs", "outputs"},
/// ...]`, without weights): what maps the runtime's kernels to the network's. Written by
/// `dnncost measure --profile`, one profiled request per network after its rounds, so that the
/// profiler's cost never lands on a stored latency.
#include <filesystem>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/measure/runner_protocol.hpp>

namespace dnncost::measure {

struct KernelProfile {
    std::string key;  ///< the network's store key
    std::string id;   ///< its store id
    std::vector<RuntimeKernel> kernels;
    std::vector<RuntimeNode> nodes;  ///< of the runtime's optimised graph; empty: not written
};

/// The kernel file of a store: `results.csv` -> `results.kernels.jsonl`.
inline std::filesystem::path kernel_profiles_path(const std::filesystem::path& store) {
    auto p = store;
    return p.replace_extension(".kernels.jsonl");
}

/// Read a kernel file; empty when it does not exist.
/// @throws parse_error naming the file and line of a malformed line
DNNCOST_FUNC std::vector<KernelProfile> read_kernel_profiles(const std::filesystem::path& path);

/// Add `profiles` to the kernel file at `path`, replacing the lines of the same networks;
/// written atomically. @throws parse_error for a malformed existing file, io_error
DNNCOST_FUNC void merge_kernel_profiles(const std::filesystem::path& path, const std::vector<KernelProfile>& profiles);

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/kernel_profiles_impl.hpp>
#endif
