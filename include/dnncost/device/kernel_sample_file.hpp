#pragma once
/// @file kernel_sample_file.hpp
/// The kernel measurements a device build fitted its model to, saved beside its stores
/// (`kernel_samples.json` in the work directory): the rules, the run overhead and every sample's
/// kind, store key, latency (a kernel's own time in a profiled network where "in_context": true)
/// and features. With it the model can be fitted again, with other
/// options, without measuring (`dnncost device build --refit`). One JSON document:
///
///   {"format": "dnncost-kernel-samples 1", "device": ..., "rules_text": ..., "run_overhead_ms": ...,
///    "feature_names": [...], "samples": [{"kind": ..., "key": ..., "latency_ms": ..., "features": [...]}]}
#include <cmath>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/device/device_model.hpp>
#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/device/kernel_features.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/measure/json.hpp>

namespace dnncost::device {

inline constexpr std::string_view kernel_sample_format = "dnncost-kernel-samples 1";

struct KernelSampleFile {
    std::string device;
    FusionRules rules;
    double run_overhead_ms = 0;
    std::vector<std::string> keys;  ///< store key of each sample, in order
    std::vector<KernelMeasurement> samples;
};

/// Write the file atomically.
DNNCOST_FUNC void write_kernel_sample_file(const std::filesystem::path& path, const KernelSampleFile& f);

/// Read a file written by write_kernel_sample_file.
/// @throws parse_error naming the file (and the sample) for anything else: another format,
///         other feature names (a build of another version), a missing or non-finite value
DNNCOST_FUNC KernelSampleFile read_kernel_sample_file(const std::filesystem::path& path);

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/kernel_sample_file_impl.hpp>
#endif
