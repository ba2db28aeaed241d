#pragma once
/// @file campaign.hpp
/// A measuring campaign as `dnncost measure` runs it: the networks asked for (measure/candidates.hpp)
/// measured through a runner pool into a resumable results store, the store's sidecar kept
/// (device name, runners, the runner's own device line, the harness settings), and optionally a
/// noise check that re-measures some networks from scratch.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/measure/candidates.hpp>
#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/json.hpp>
#include <dnncost/measure/kernel_profiles.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/measure/process.hpp>
#include <dnncost/measure/run_conditions.hpp>
#include <dnncost/measure/reference_model.hpp>
#include <dnncost/measure/runner_pool.hpp>
#include <dnncost/measure/scratch_dir.hpp>
#include <dnncost/measure/store.hpp>
#include <dnncost/spaces/registry.hpp>

namespace dnncost::measure {

/// Where the networks come from: exactly one of a space sample, an architecture file or list, ONNX
/// files.
struct NetworkSource {
    std::string space;        ///< search space of `sample` and of bare strings in `arch_file`
    std::size_t sample = 0;   ///< distinct architectures to draw from `space`
    std::string arch_file;    ///< architecture strings or network names, one per line
    std::vector<std::string> onnx_files;
    spaces::SpaceOptions space_options;
    std::vector<std::string> archs;  ///< architecture strings (of `space`) or network names given directly
};

struct CampaignOptions {
    std::vector<std::string> runners;  ///< a pool of identical boards, one request in flight each
    std::string device;                ///< the device name stored with the results
    std::filesystem::path out;         ///< the results store
    HarnessOptions harness;
    double timeout_seconds = 120, startup_timeout_seconds = 10;
    int retries = 1;
    std::size_t noise_check = 0;  ///< networks re-measured from scratch at the end
    std::uint64_t seed = 0;       ///< of the sample, the model weights and the noise check's choice
    std::optional<int> cpu;       ///< pin the runners to this CPU
    bool realtime = false;        ///< run the runners under SCHED_FIFO when permitted (a warning otherwise)
    /// Append to a store measured on another host, or whose reference network differs beyond
    /// the noise (refused otherwise).
    bool allow_other_host = false;
    /// After the rounds, one profiled request per network measured in this run; the runtime's
    /// kernels go to the store's kernel file (kernel_profiles.hpp).
    bool profile = false;
};

struct CampaignEvents {
    HarnessEvents harness;  ///< progress and each network's result
    std::function<void(const std::string&)> on_warning;
};

struct CampaignReport {
    Summary summary;
    std::optional<NoiseReport> noise;
    std::string runner_device;  ///< the runner's device line (JSON), empty if it gave none
    std::filesystem::path sidecar;
    std::size_t profiled = 0;  ///< networks whose kernels were written to the kernel file (profile)
    std::size_t profile_failed = 0;  ///< profiled requests that failed or came back without kernels
    double seconds_per_network = std::nan("");
};

namespace detail {
/// A store holding another device's or runner's measurements is refused.
DNNCOST_FUNC void check_store_owner(const std::optional<StoreInfo>& info, const CampaignOptions& o);

inline std::vector<Candidate> candidates_of(const NetworkSource& s, const CampaignOptions& o) {
    if (s.sample > 0) return sample_candidates(spaces::find_space(s.space), s.sample, o.seed, s.space_options);
    if (!s.arch_file.empty()) return read_arch_file(s.arch_file, s.space, s.space_options);
    if (!s.archs.empty()) {
        std::vector<Candidate> out;
        for (const auto& a : s.archs) out.push_back(named_candidate(a, s.space, s.space_options));
        return out;
    }
    return onnx_candidates(s.onnx_files, std::filesystem::absolute(o.out).parent_path());
}

inline void warn(const CampaignEvents& ev, const std::string& message) {
    if (ev.on_warning) ev.on_warning(message);
}

/// K networks of this campaign that have a result, chosen with the seed, re-measured from scratch.
DNNCOST_FUNC std::optional<NoiseReport> noise_check(Harness& harness, const ResultsStore& store,
                                              const std::vector<Network>& networks, const NetworkSource& source,
                                              const CampaignOptions& o, const std::filesystem::path& scratch,
                                              const CampaignEvents& ev);

}  // namespace detail

/// Measure the networks of `source` into `options.out`. Networks the store already has are
/// skipped (unless harness.force), so an interrupted campaign resumes where it stopped.
/// @throws config_error for a store of another device or runner, or bad options; parse_error
///         for a bad architecture file or ONNX file; io_error for an unwritable store
DNNCOST_FUNC CampaignReport run_campaign(const NetworkSource& source, const CampaignOptions& o,
                                   const CampaignEvents& events = {});

/// The campaign's summary as one JSON object, as `dnncost measure --json` prints it and the Python
/// module returns it: counts, seconds, the store, device, settings, host and run conditions, and
/// the noise check's agreement when there was one (null where a figure does not exist).
DNNCOST_FUNC json::Value report_json(const CampaignReport& r, const CampaignOptions& o);

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/campaign_impl.hpp>
#endif
