#pragma once
/// @file harness.hpp
/// Measuring many networks well on a noisy device.
///
/// A single timing loop per network lets slow drift (thermal state, other processes, frequency
/// changes) fall on whichever networks happen to run then. The harness instead measures in
/// rounds: each round sends every pending network of a group (HarnessOptions::interleave) once
/// (W untimed warm-up runs, then N timed runs), round-robin, so drift hits the group's networks
/// alike; the runner may keep a network's session between its rounds. A round's statistic is the median
/// (or minimum) of its N timed runs; a network's value is the median (or minimum) of its round
/// statistics, and its spread is the median absolute deviation of the round statistics relative
/// to that value (with one round: of its timed runs). Networks whose spread exceeds a threshold
/// get further rounds, interleaved among themselves, until the spread falls below it or a cap
/// on rounds is reached. Every finished round is appended to the store at once, so an
/// interrupted run resumes where it stopped. noise_check() re-measures networks from scratch
/// (fresh runner processes) and reports how well the two values agree (train::pair_noise).
///
/// With a reference network (ReferenceOptions), run() measures it at its start, between rounds
/// every `every` network requests or `every_seconds` seconds, whichever comes first, and at its
/// end, with the same settings (one request each time); the result and the machine's load over
/// the run are the run's conditions (run_conditions.hpp), which say whether it was disturbed.
/// The reference measurements cut the run into spans. A span at whose start or end the reference
/// ran slower than the run's fastest measurement of it by more than its noise is slow: a host
/// can slow down for a minute or two and recover, and a network whose rounds all fell in slow
/// spans carries that slowdown. Such networks get another round (twice at most, while max_rounds
/// allows), and a network with rounds inside and outside slow spans is summarised from those
/// outside. When none is left with only slow rounds, the drift is covered and does not mark the
/// run disturbed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/robust_statistics.hpp>
#include <dnncost/measure/machine_load.hpp>
#include <dnncost/measure/reference.hpp>
#include <dnncost/measure/run_conditions.hpp>
#include <dnncost/measure/runner_pool.hpp>
#include <dnncost/measure/store.hpp>
#include <dnncost/measure/store_mix.hpp>
#include <dnncost/train/noise.hpp>

namespace dnncost::measure {

enum class Statistic { median, minimum };

inline Statistic parse_statistic(std::string_view s) {
    if (s == "median") return Statistic::median;
    if (s == "min" || s == "minimum") return Statistic::minimum;
    raise<config_error>("unknown statistic '", s, "' (expected median or min)");
}
inline std::string_view to_string(Statistic s) { return s == Statistic::median ? "median" : "min"; }

struct HarnessOptions {
    int rounds = 5;    ///< R: rounds per network
    int warmup = 5;    ///< W: untimed runs per round
    int repeats = 20;  ///< N: timed runs per round (the first round's; later rounds see round_ms)
    /// After a network's first round, its timed runs per round are raised so that they last at
    /// least this many milliseconds (up to max_repeats): the minimum of many runs is what repeats
    /// on a shared machine (docs/measure.md, "Why measurements varied"). 0: always N runs.
    double round_ms = 150;
    int max_repeats = 1000;
    /// The minimum resists the slow-downs that other tenants of a machine cause (they only ever
    /// add time); the median keeps them.
    Statistic statistic = Statistic::minimum;
    double remeasure_spread = 0.02;  ///< networks whose spread exceeds this get more rounds...
    int max_rounds = 10;             ///< ...up to this many in total
    bool force = false;              ///< re-measure networks the store already has
    /// Networks measured together: their rounds go round-robin among at most this many pending
    /// networks at a time, so drift hits them alike while a network's rounds stay seconds apart
    /// and its loaded model can be kept between them. 0: all pending networks at once.
    int interleave = 16;
    /// Ask the runner to keep a network's loaded model (its session) between the network's
    /// planned rounds (Request::keep): loading is the harness's largest cost per round, and the
    /// minimum repeats as well with a kept session as with fresh ones (docs/measure.md).
    bool keep_sessions = true;

    void check() const;
    /// The settings as a JSON object (stored in the sidecar).
    std::string to_json() const;
};

/// What a run records and checks about where it measures: the reference network (reference.hpp,
/// reference_model.hpp) and the store it appends to.
struct ProvenanceOptions {
    std::filesystem::path reference_model;  ///< the reference network's model file; empty: none
    std::string reference_key;              ///< its network_key
    std::size_t every = 100;                ///< the reference is measured again after this many requests...
    /// ...or after this many seconds of requests, if sooner: a slow spell of the host is then
    /// seen while it lasts, however long the networks' requests take. 0: by requests only (they
    /// are then sent in batches of `every`).
    double every_seconds = 10;
    /// The sidecar of the store appended to: a run on another host (fingerprint), or whose
    /// reference differs from the store's beyond the noise, stops before measuring any network
    /// (config_error) unless `allow_other_host`; then it warns.
    std::optional<StoreInfo> stored;
    std::string store_name;  ///< for messages
    bool allow_other_host = false;
    std::string how_to_allow = "allow appending anyway";  ///< ends the refusal's message
};

/// A network to measure: its store key, its id, and the model file the runner loads.
struct Network {
    std::string key;
    std::string id;
    std::filesystem::path model;
};

struct Progress {
    std::size_t requests_done = 0, requests_total = 0;  ///< total grows when networks are re-measured
    std::size_t networks_done = 0, networks_total = 0;
    double elapsed_seconds = 0;
};

struct HarnessEvents {
    std::function<void(const Progress&)> on_progress;
    /// A network's result (ok or failed), as appended to the store; once more for a network whose
    /// result changed after a slow span (see the file comment).
    std::function<void(const Network&, const Record&)> on_result;
    /// Every successful answer of a network's round, as the runner gave it (its timed runs).
    std::function<void(const Network&, const Answer&)> on_answer;
};

struct Summary {
    std::size_t measured = 0, skipped = 0, failed = 0, duplicates = 0;
    std::size_t remeasured = 0;                           ///< networks that needed rounds beyond the first R
    std::size_t requests = 0;                             ///< requests answered or failed (retries not counted)
    std::map<std::string, std::size_t> failed_by_reason;  ///< by failure name (to_string(Failure))
    double seconds = 0;
    std::size_t slow_span_networks = 0;  ///< networks whose rounds all fell in slow spans at first
    std::size_t slow_span_retaken = 0;   ///< of those, measured again outside slow spans
    std::vector<Record> results;         ///< this run's results, in network order
    RunConditions conditions;     ///< reference network, machine load, disturbed or not
};

struct NoiseReport {
    std::size_t networks = 0, failed = 0;
    train::PairNoise within_5, within_10;  ///< pair_noise at bounds 0.05 and 0.10
    std::vector<std::pair<double, double>> pairs;
    double seconds = 0;
};

/// The statistic of some values (median: the mean of the middle two for an even count); NaN
/// when empty.
DNNCOST_FUNC double statistic_of(std::vector<double> v, Statistic s);

/// The median absolute deviation from `center`, relative to it (0 for fewer than two values or
/// a center that is not positive).
DNNCOST_FUNC double relative_spread(const std::vector<double>& v, double center);

class Harness {
public:
    using LoadSampler = std::function<LoadSample()>;

    Harness(RunnerPool& pool, HarnessOptions options, ProvenanceOptions provenance = {});
    const HarnessOptions& options() const { return m_options; }
    /// Replace how the machine's load is sampled (tests plant samples; the default reads /proc).
    void set_load_sampler(LoadSampler sampler) { m_sampler = std::move(sampler); }

    /// Measure the networks the store lacks (all with `force`), resuming rounds in progress.
    /// Every round and result is appended to `store` as it finishes; the store is compacted at
    /// the end. Failed networks are recorded with their reason and never stop the run.
    /// @throws config_error when a runner cannot be started; io_error when the store cannot be written
    Summary run(ResultsStore& store, const std::vector<Network>& networks, const HarnessEvents& events = {});

    /// Re-measure `networks` from scratch with fresh runner processes and compare with
    /// `first[i]`, their earlier values: the agreement of repeated measurements.
    /// @throws config_error on a size mismatch or when a runner cannot be started
    NoiseReport noise_check(const std::vector<Network>& networks, const std::vector<double>& first,
                            const HarnessEvents& events = {});

private:
    /// Measure the reference network once (one request, the run's settings) into `c.reference`.
    void measure_reference(RunConditions& c);

    /// Stop a run appending to a store from another host or whose reference differs beyond the
    /// noise, unless allowed (then warn).
    void check_provenance(RunConditions& c) const;

    /// The result of a network from its finished rounds.
    Record summarise(const Network& n, const std::vector<Record>& rounds) const;

    /// Timed runs per round for a network with these rounds: enough to fill round_ms at the
    /// fastest round's latency, never fewer than N nor more than the cap.
    int calibrated_repeats(const std::vector<Record>& done_rounds) const;
    int repeats_for(double fastest) const;

    /// What measure_networks asks of a run with a reference network.
    struct ReferenceWatch {
        std::function<void(std::size_t)> between;  ///< after every batch of requests, with its size
        std::function<void()> close_span;          ///< measure the reference now, unless just measured
        std::function<std::size_t()> span;         ///< the span the run is in: reference measurements so far
        std::function<bool(std::size_t)> slow;     ///< whether span s (1, 2, ...) was slow
    };
    /// Rounds of one network in this run, each with the span it finished in (0: resumed from the
    /// store, before this run).
    using SpannedRounds = std::vector<std::pair<Record, std::size_t>>;

    /// Measure `nets` in rounds; with a `watch`, the reference is measured between batches of
    /// requests (ProvenanceOptions::every) and networks measured only in slow spans are measured
    /// again (see the file comment).
    std::vector<Record> measure_networks(const std::vector<Network>& nets, std::vector<std::vector<Record>> rounds,
                                         const HarnessEvents& events, const std::function<void(const Record&)>& sink,
                                         std::size_t& requests_done, const ReferenceWatch* watch = nullptr,
                                         Summary* summary = nullptr);
    RunnerPool& m_pool;
    HarnessOptions m_options;
    ProvenanceOptions m_provenance;
    LoadSampler m_sampler;
    std::vector<double> m_reference_spreads;  ///< within each reference measurement of this run
    int m_reference_repeats = 0;              ///< timed runs of a reference request; 0: not yet known
};

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/harness_impl.hpp>
#endif
