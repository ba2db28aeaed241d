#pragma once
/// @file measured_compression.hpp
/// The compression search on a real ONNX network with hardware in the loop, as `dnncost
/// compress` runs it: candidates measured through a runner pool into a results store (so an
/// interrupted search resumes without measuring again), accuracy figures from an accuracy
/// command (kept in DIR/accuracy.csv) or the built-in proxy, and the trained estimators kept in
/// DIR/estimator-SIGNATURE.dnncost between runs. The search itself is handover.hpp.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/estimators/preset_registry.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/measure/runner_pool.hpp>
#include <dnncost/measure/scratch_dir.hpp>
#include <dnncost/measure/store.hpp>
#include <dnncost/search/compression/handover.hpp>
#include <dnncost/search/compression/prune.hpp>

namespace dnncost::search::compression {

/// Accuracy answers by network key, kept in a CSV file so a resumed search asks again for none.
class AccuracyCache {
public:
    explicit AccuracyCache(std::filesystem::path path) : m_path(std::move(path)) {
        std::error_code ec;
        if (!std::filesystem::exists(m_path, ec)) return;
        std::istringstream in(io::read_file(m_path));
        for (std::string line; std::getline(in, line);) {
            const auto comma = line.find(',');
            if (comma == std::string::npos || line.rfind("key,", 0) == 0) continue;
            try {
                m_values[line.substr(0, comma)] = std::stod(line.substr(comma + 1));
            } catch (const std::exception&) {}  // a torn last line: asked again
        }
    }
    const double* find(const std::string& key) const {
        const auto it = m_values.find(key);
        return it == m_values.end() ? nullptr : &it->second;
    }
    void add(const std::string& key, double v) {
        m_values[key] = v;
        const bool fresh = !std::filesystem::exists(m_path);
        std::ofstream out(m_path, std::ios::app);
        if (fresh) out << "key,accuracy\n";
        out << key << ',' << std::setprecision(17) << v << '\n';
        out.flush();
        if (!out) raise<io_error>("cannot append to ", m_path.string());
    }

private:
    std::filesystem::path m_path;
    std::map<std::string, double> m_values;
};

struct MeasuredCompressionOptions {
    std::filesystem::path network;  ///< the ONNX network to prune
    std::filesystem::path out;      ///< output directory
    std::filesystem::path store;    ///< results store; empty: OUT/results.csv
    std::string runner;             ///< runner command measuring latency
    std::string accuracy;           ///< accuracy command; empty: the built-in kept-parameter proxy
    HandoverOptions search;
    measure::HarnessOptions harness;
    measure::PoolOptions pool;
};

struct MeasuredCompressionEvents {
    std::function<void(const std::string& name, const Pruner&)> on_network;  ///< before any measurement
    measure::HarnessEvents measuring;                                         ///< latency progress, results
    std::function<void()> on_batch_done;                                      ///< after each measured batch
    /// An accuracy request that failed: the network's key, the failure and its detail.
    std::function<void(const std::string&, const std::string&, const std::string&)> on_accuracy_failure;
    HandoverSearch::Events search;
};

struct MeasuredCompression {
    std::string name;  ///< the network's file stem
    std::size_t channel_groups = 0;
    std::vector<FixedLayer> layers_left_whole;
    HandoverResult result;
    std::filesystem::path store;
    std::string runner_device;  ///< the runner's device line (JSON), empty if it gave none
};

namespace detail {
/// A latency as the store keeps it (6 significant digits), so a resumed search sees the same values.
inline double as_stored(double ms) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", ms);
    return std::stod(buf);
}
}  // namespace detail

/// Run the search. @throws config_error for an unknown estimator preset (before any
/// measurement), io_error for an unusable output directory, and what the runner pool throws
DNNCOST_FUNC MeasuredCompression run_measured_compression(const MeasuredCompressionOptions& o,
                                                    const MeasuredCompressionEvents& events = {});

}  // namespace dnncost::search::compression

#if !defined(DNNCOST_COMPILED)
#include <dnncost/search/compression/measured_compression_impl.hpp>
#endif
