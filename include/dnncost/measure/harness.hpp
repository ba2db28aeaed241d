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
/// every `every` network requests, and at its end, with the same settings (one request each
/// time); the result and the machine's load over the run are the run's conditions
/// (run_conditions.hpp), which say whether it was disturbed.
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

    void check() const {
        if (rounds < 1 || rounds > 1000) raise<config_error>("rounds must be in [1, 1000], got ", rounds);
        if (warmup < 0 || warmup > 1000000) raise<config_error>("warm-up runs must be in [0, 10^6], got ", warmup);
        if (repeats < 1 || repeats > 1000000) raise<config_error>("timed runs must be in [1, 10^6], got ", repeats);
        if (!(round_ms >= 0) || !std::isfinite(round_ms) || round_ms > 3.6e6)
            raise<config_error>("the time of a round's timed runs must be in [0, 3.6e6] ms, got ", round_ms);
        if (max_repeats < repeats || max_repeats > 1000000)
            raise<config_error>("the cap on timed runs per round must be in [", repeats, ", 10^6], got ", max_repeats);
        if (!(remeasure_spread >= 0) || !std::isfinite(remeasure_spread))
            raise<config_error>("the re-measure spread threshold must be a finite number >= 0, got ", remeasure_spread);
        if (max_rounds < rounds)
            raise<config_error>("the cap on rounds (", max_rounds, ") is below the number of rounds (", rounds, ")");
        if (interleave < 0 || interleave > 1000000)
            raise<config_error>("the networks measured together must be in [0, 10^6] (0: all), got ", interleave);
    }
    /// The settings as a JSON object (stored in the sidecar).
    std::string to_json() const {
        auto v = json::Value::object();
        v.set("rounds", json::Value::of(static_cast<double>(rounds)));
        v.set("warmup", json::Value::of(static_cast<double>(warmup)));
        v.set("repeats", json::Value::of(static_cast<double>(repeats)));
        v.set("round_ms", json::Value::of(round_ms));
        v.set("max_repeats", json::Value::of(static_cast<double>(max_repeats)));
        v.set("statistic", json::Value::of(std::string(measure::to_string(statistic))));
        v.set("remeasure_spread", json::Value::of(remeasure_spread));
        v.set("max_rounds", json::Value::of(static_cast<double>(max_rounds)));
        v.set("interleave", json::Value::of(static_cast<double>(interleave)));
        v.set("keep_sessions", json::Value::of(keep_sessions));
        return json::dump(v);
    }
};

/// What a run records and checks about where it measures: the reference network (reference.hpp,
/// reference_model.hpp) and the store it appends to.
struct ProvenanceOptions {
    std::filesystem::path reference_model;  ///< the reference network's model file; empty: none
    std::string reference_key;              ///< its network_key
    std::size_t every = 100;                ///< the reference is measured again after this many requests
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
    /// A network's result (ok or failed), as appended to the store.
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
    std::vector<Record> results;  ///< this run's results, in network order
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

    Harness(RunnerPool& pool, HarnessOptions options, ProvenanceOptions provenance = {})
        : m_pool(pool), m_options(options), m_provenance(std::move(provenance)) {
        m_options.check();
        if (m_provenance.every == 0) raise<config_error>("the reference network's interval must be at least 1");
        m_sampler = [this] {
            std::set<pid_t> groups;
            for (std::size_t i = 0; i < m_pool.size(); ++i)
                if (m_pool.runner(i).pid() > 0) groups.insert(m_pool.runner(i).pid());
            return sample_machine(groups);
        };
    }
    const HarnessOptions& options() const { return m_options; }
    /// Replace how the machine's load is sampled (tests plant samples; the default reads /proc).
    void set_load_sampler(LoadSampler sampler) { m_sampler = std::move(sampler); }

    /// Measure the networks the store lacks (all with `force`), resuming rounds in progress.
    /// Every round and result is appended to `store` as it finishes; the store is compacted at
    /// the end. Failed networks are recorded with their reason and never stop the run.
    /// @throws config_error when a runner cannot be started; io_error when the store cannot be written
    Summary run(ResultsStore& store, const std::vector<Network>& networks, const HarnessEvents& events = {}) {
        Summary summary;
        const auto start = Clock::now();
        std::vector<Network> todo;
        std::vector<std::vector<Record>> resumed;
        std::set<std::string> seen;
        for (const auto& n : networks) {
            if (!seen.insert(n.key).second) {
                ++summary.duplicates;
                continue;
            }
            const Record* r = store.result(n.key);
            if (!m_options.force && r && r->ok()) {
                ++summary.skipped;
                continue;
            }
            todo.push_back(n);
            resumed.push_back(m_options.force ? std::vector<Record>{} : store.rounds_in_progress(n.key));
        }
        auto& conditions = summary.conditions;
        conditions.cpu = m_pool.options().runner.process.cpu;
        conditions.realtime = m_pool.options().runner.process.realtime;
        const bool with_reference = !m_provenance.reference_model.empty() && !todo.empty();
        m_reference_spreads.clear();
        const auto first_sample = m_sampler();
        std::size_t since_reference = 0;
        std::function<void(std::size_t)> between;
        conditions.host = local_host();
        if (with_reference) {
            measure_reference(conditions);
            add_runner_device(conditions.host, m_pool.device());
        }
        check_provenance(conditions);
        if (with_reference) {
            between = [&](std::size_t requests) {
                since_reference += requests;
                if (since_reference < m_provenance.every) return;
                measure_reference(conditions);
                since_reference = 0;
            };
        }
        const auto results = measure_networks(
            todo, std::move(resumed), events, [&](const Record& r) { store.append(r); }, summary.requests, between);
        if (with_reference) measure_reference(conditions);
        if (conditions.host.runtime.empty()) add_runner_device(conditions.host, m_pool.device());
        conditions.load = load_between(first_sample, m_sampler(), clock_ticks_per_second(), conditions.cpu);
        const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
        judge_conditions(conditions, m_pool.size(), cpus > 0 ? static_cast<int>(cpus) : 0);
        for (std::size_t i = 0; i < results.size(); ++i) {
            const auto& r = results[i];
            if (r.ok())
                ++summary.measured;
            else {
                ++summary.failed;
                ++summary.failed_by_reason[std::string(to_string(r.status))];
            }
            if (r.rounds > m_options.rounds) ++summary.remeasured;
        }
        summary.results = results;
        store.compact();
        summary.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        return summary;
    }

    /// Re-measure `networks` from scratch with fresh runner processes and compare with
    /// `first[i]`, their earlier values: the agreement of repeated measurements.
    /// @throws config_error on a size mismatch or when a runner cannot be started
    NoiseReport noise_check(const std::vector<Network>& networks, const std::vector<double>& first,
                            const HarnessEvents& events = {}) {
        if (first.size() != networks.size())
            raise<config_error>("noise_check: ", networks.size(), " networks but ", first.size(), " earlier values");
        NoiseReport report;
        const auto start = Clock::now();
        m_pool.restart();
        std::size_t requests = 0;
        const auto again = measure_networks(
            networks, std::vector<std::vector<Record>>(networks.size()), events, [](const Record&) {}, requests);
        report.networks = networks.size();
        for (std::size_t i = 0; i < again.size(); ++i) {
            if (again[i].ok() && first[i] > 0)
                report.pairs.emplace_back(first[i], again[i].latency_ms);
            else
                ++report.failed;
        }
        if (!report.pairs.empty()) {
            report.within_5 = train::pair_noise(report.pairs, 0.05);
            report.within_10 = train::pair_noise(report.pairs, 0.10);
        }
        report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        return report;
    }

private:
    /// Measure the reference network once (one request, the run's settings) into `c.reference`.
    void measure_reference(RunConditions& c) {
        const auto model = m_provenance.reference_model.string();
        if (m_reference_repeats == 0) {
            // a first, unrecorded request learns how many runs fill a round (and warms the runner
            // up): N runs of a sub-millisecond network give a minimum that wanders by tens of %
            const auto probe = m_pool.run({Request{0, model, m_options.warmup, m_options.repeats}});
            if (probe.front().ok())
                m_reference_repeats =
                    repeats_for(statistic_of(probe.front().answer.latency_ms, Statistic::minimum));
        }
        const int repeats = m_reference_repeats > 0 ? m_reference_repeats : m_options.repeats;
        const auto out = m_pool.run({Request{0, model, m_options.warmup, repeats}});
        const auto& o = out.front();
        if (!o.ok()) {
            c.warnings.push_back("the reference network could not be measured (" + std::string(to_string(o.failure)) +
                                 ": " + o.detail + ")");
            return;
        }
        if (!c.reference) {
            c.reference.emplace();
            c.reference->key = m_provenance.reference_key;
            c.reference->time = utc_now();
        }
        auto& ref = *c.reference;
        ref.values_ms.push_back(statistic_of(o.answer.latency_ms, m_options.statistic));
        ref.latency_ms = statistic_of(ref.values_ms, m_options.statistic);
        m_reference_spreads.push_back(
            relative_spread(o.answer.latency_ms, statistic_of(o.answer.latency_ms, Statistic::median)));
        ref.spread = statistic_of(m_reference_spreads, Statistic::median);
    }

    /// Stop a run appending to a store from another host or whose reference differs beyond the
    /// noise, unless allowed (then warn).
    void check_provenance(RunConditions& c) const {
        const auto& p = m_provenance;
        if (!p.stored) return;
        for (auto& w : check_append(p.store_name, *p.stored, c.host, p.allow_other_host, p.how_to_allow))
            c.warnings.push_back(std::move(w));
        const auto* stored = detail::store_reference(*p.stored);
        if (!stored || !c.reference) return;
        if (!stored->key.empty() && stored->key != c.reference->key) return;  // another yardstick
        if (!references_differ(*stored, *c.reference)) return;
        const std::string what = p.store_name + ": the reference network measures " +
                                 detail::reference_gap(*stored, *c.reference) + " when the store was measured";
        if (!p.allow_other_host)
            raise<config_error>(what,
                                ": this machine, or its state, differs from the one that measured the store; "
                                "measure into another store, or ",
                                p.how_to_allow);
        c.warnings.push_back(what + "; appending anyway: the store now mixes two conditions");
    }

    /// The result of a network from its finished rounds.
    Record summarise(const Network& n, const std::vector<Record>& rounds) const {
        Record r;
        r.key = n.key;
        r.id = n.id;
        r.status = Status::ok();
        r.rounds = static_cast<int>(rounds.size());
        std::vector<double> stats, peaks, energies;
        for (const auto& x : rounds) {
            stats.push_back(x.latency_ms);
            if (x.peak_memory_bytes) peaks.push_back(*x.peak_memory_bytes);
            if (x.energy_mj) energies.push_back(*x.energy_mj);
        }
        r.latency_ms = statistic_of(stats, m_options.statistic);
        r.spread = rounds.size() == 1 ? (std::isfinite(rounds[0].spread) ? rounds[0].spread : 0.0)
                                      : relative_spread(stats, r.latency_ms);
        if (!peaks.empty()) r.peak_memory_bytes = statistic_of(peaks, Statistic::median);
        if (!energies.empty()) r.energy_mj = statistic_of(energies, Statistic::median);
        return r;
    }

    /// Timed runs per round for a network with these rounds: enough to fill round_ms at the
    /// fastest round's latency, never fewer than N nor more than the cap.
    int calibrated_repeats(const std::vector<Record>& done_rounds) const {
        double fastest = std::numeric_limits<double>::infinity();
        for (const auto& r : done_rounds)
            if (r.latency_ms > 0 && std::isfinite(r.latency_ms)) fastest = std::min(fastest, r.latency_ms);
        return repeats_for(fastest);
    }
    int repeats_for(double fastest) const {
        if (!(m_options.round_ms > 0) || !(fastest > 0) || !std::isfinite(fastest)) return m_options.repeats;
        const double want = std::ceil(m_options.round_ms / fastest);
        return static_cast<int>(std::clamp(want, static_cast<double>(m_options.repeats),
                                           static_cast<double>(m_options.max_repeats)));
    }

    /// Measure `nets` in rounds; `between`, when set, is called after every batch of at most
    /// ReferenceOptions::every requests with the batch's size.
    std::vector<Record> measure_networks(const std::vector<Network>& nets, std::vector<std::vector<Record>> rounds,
                                         const HarnessEvents& events, const std::function<void(const Record&)>& sink,
                                         std::size_t& requests_done,
                                         const std::function<void(std::size_t)>& between = {}) {
        const std::size_t n = nets.size();
        std::vector<Record> results(n);
        std::vector<int> target(n, m_options.rounds);
        std::vector<int> repeats(n, m_options.repeats);
        for (std::size_t i = 0; i < n; ++i) repeats[i] = calibrated_repeats(rounds[i]);
        std::vector<char> done(n, 0);
        std::size_t networks_done = 0;
        const auto start = Clock::now();
        const auto progress = [&] {
            if (!events.on_progress) return;
            Progress p;
            p.requests_done = requests_done;
            p.requests_total = requests_done;
            for (std::size_t i = 0; i < n; ++i)
                if (!done[i])
                    p.requests_total +=
                        static_cast<std::size_t>(std::max(0, target[i] - static_cast<int>(rounds[i].size())));
            p.networks_done = networks_done;
            p.networks_total = n;
            p.elapsed_seconds = std::chrono::duration<double>(Clock::now() - start).count();
            events.on_progress(p);
        };
        const auto finish = [&](std::size_t i, Record r) {
            sink(r);
            results[i] = r;
            done[i] = 1;
            ++networks_done;
            if (events.on_result) events.on_result(nets[i], r);
        };
        // A network whose rounds are complete is finished, or given another round if unstable.
        const auto settle = [&](std::size_t i) {
            if (done[i] || static_cast<int>(rounds[i].size()) < target[i]) return;
            auto r = summarise(nets[i], rounds[i]);
            if (r.spread > m_options.remeasure_spread && r.rounds < m_options.max_rounds) {
                // one round more than it has: a resumed network may already hold more than R rounds
                target[i] = r.rounds + 1;
                return;
            }
            finish(i, std::move(r));
        };
        const auto on_outcome = [&](std::size_t i, const Outcome& o) {
            ++requests_done;
            if (!o.ok()) {
                Record f;
                f.key = nets[i].key;
                f.id = nets[i].id;
                f.status = Status::failed(o.failure);
                f.rounds = static_cast<int>(rounds[i].size());
                f.detail = o.detail + " (round " + std::to_string(rounds[i].size() + 1) + ", " +
                           std::to_string(o.attempts) + (o.attempts == 1 ? " attempt)" : " attempts)");
                finish(i, std::move(f));
            } else {
                if (events.on_answer) events.on_answer(nets[i], o.answer);
                Record r;
                r.key = nets[i].key;
                r.id = nets[i].id;
                r.status = Status::in_round();
                r.latency_ms = statistic_of(o.answer.latency_ms, m_options.statistic);
                r.spread = relative_spread(o.answer.latency_ms, statistic_of(o.answer.latency_ms, Statistic::median));
                r.rounds = static_cast<int>(rounds[i].size()) + 1;
                r.peak_memory_bytes = o.answer.peak_memory_bytes;
                r.energy_mj = o.answer.energy_mj;
                sink(r);
                rounds[i].push_back(std::move(r));
                repeats[i] = calibrated_repeats(rounds[i]);
                settle(i);
            }
            progress();
        };
        for (std::size_t i = 0; i < n; ++i) settle(i);
        progress();
        // Groups of at most `interleave` networks, each measured to the end before the next.
        std::vector<std::size_t> open;
        for (std::size_t i = 0; i < n; ++i)
            if (!done[i]) open.push_back(i);
        const std::size_t group = m_options.interleave > 0 ? static_cast<std::size_t>(m_options.interleave) : n;
        for (std::size_t first = 0; first < open.size(); first += group) {
            const std::size_t last = std::min(open.size(), first + group);
            for (;;) {
                std::vector<std::size_t> pending;
                for (std::size_t g = first; g < last; ++g) {
                    const auto i = open[g];
                    if (!done[i] && static_cast<int>(rounds[i].size()) < target[i]) pending.push_back(i);
                }
                if (pending.empty()) break;
                const std::size_t batch = between ? m_provenance.every : pending.size();
                for (std::size_t from = 0; from < pending.size(); from += batch) {
                    const std::size_t to = std::min(pending.size(), from + batch);
                    std::vector<Request> requests;
                    for (std::size_t k = from; k < to; ++k) {
                        const auto i = pending[k];
                        // kept only for a planned round to come: an unstable network's extra
                        // rounds each load the model afresh
                        const bool keep =
                            m_options.keep_sessions && static_cast<int>(rounds[i].size()) + 1 < target[i];
                        requests.push_back({0, nets[i].model.string(), m_options.warmup, repeats[i], keep});
                    }
                    m_pool.run(requests, [&](std::size_t k, const Outcome& o) { on_outcome(pending[from + k], o); });
                    if (between) between(to - from);
                }
            }
        }
        return results;
    }
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
