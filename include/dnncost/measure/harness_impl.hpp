#pragma once
/// @file harness_impl.hpp
/// The definitions of harness.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by harness.hpp in header-only mode.
#include <dnncost/measure/harness.hpp>

DNNCOST_FUNC double dnncost::measure::statistic_of(std::vector<double> v, Statistic s) {
    if (v.empty()) return std::nan("");
    if (s == Statistic::minimum) return *std::min_element(v.begin(), v.end());
    return median(v);
}

DNNCOST_FUNC double dnncost::measure::relative_spread(const std::vector<double>& v, double center) {
    if (v.size() < 2 || !(center > 0)) return 0.0;
    return mad(v, center) / center;
}

namespace dnncost::measure {

DNNCOST_FUNC Harness::Harness(RunnerPool& pool, HarnessOptions options, ProvenanceOptions provenance)
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

DNNCOST_FUNC auto Harness::run(ResultsStore& store, const std::vector<Network>& networks, const HarnessEvents& events)
    -> Summary {
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
    auto last_reference = Clock::now();
    const auto reference_now = [&] {
        measure_reference(conditions);
        since_reference = 0;
        last_reference = Clock::now();
    };
    conditions.host = local_host();
    if (with_reference) {
        reference_now();
        add_runner_device(conditions.host, m_pool.device());
    }
    check_provenance(conditions);
    ReferenceWatch watch;
    if (with_reference) {
        watch.between = [&](std::size_t requests) {
            since_reference += requests;
            const bool due =
                since_reference >= m_provenance.every ||
                (m_provenance.every_seconds > 0 &&
                 std::chrono::duration<double>(Clock::now() - last_reference).count() >= m_provenance.every_seconds);
            if (due) reference_now();
        };
        watch.close_span = [&] {
            if (since_reference > 0) reference_now();
        };
        watch.span = [&] { return conditions.reference ? conditions.reference->values_ms.size() : std::size_t{0}; };
        watch.slow = [&](std::size_t span) { return conditions.reference && slow_span(*conditions.reference, span); };
    }
    const auto results = measure_networks(
        todo, std::move(resumed), events, [&](const Record& r) { store.append(r); }, summary.requests,
        with_reference ? &watch : nullptr, &summary);
    conditions.slow_spans_checked = with_reference;
    conditions.slow_span_networks = summary.slow_span_networks;
    conditions.slow_span_retaken = summary.slow_span_retaken;
    if (conditions.reference) conditions.reference->slow_spans_covered = conditions.slow_spans_covered();
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

DNNCOST_FUNC auto Harness::noise_check(const std::vector<Network>& networks, const std::vector<double>& first,
                                       const HarnessEvents& events) -> NoiseReport {
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

DNNCOST_FUNC void Harness::measure_reference(RunConditions& c) {
    const auto model = m_provenance.reference_model.string();
    if (m_reference_repeats == 0) {
        // a first, unrecorded request learns how many runs fill a round (and warms the runner
        // up): N runs of a sub-millisecond network give a minimum that wanders by tens of %
        const auto probe = m_pool.run({Request{0, model, m_options.warmup, m_options.repeats}});
        if (probe.front().ok())
            m_reference_repeats = repeats_for(statistic_of(probe.front().answer.latency_ms, Statistic::minimum));
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

DNNCOST_FUNC void Harness::check_provenance(RunConditions& c) const {
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

DNNCOST_FUNC auto Harness::summarise(const Network& n, const std::vector<Record>& rounds) const -> Record {
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

DNNCOST_FUNC int Harness::calibrated_repeats(const std::vector<Record>& done_rounds) const {
    double fastest = std::numeric_limits<double>::infinity();
    for (const auto& r : done_rounds)
        if (r.latency_ms > 0 && std::isfinite(r.latency_ms)) fastest = std::min(fastest, r.latency_ms);
    return repeats_for(fastest);
}

DNNCOST_FUNC int Harness::repeats_for(double fastest) const {
    if (!(m_options.round_ms > 0) || !(fastest > 0) || !std::isfinite(fastest)) return m_options.repeats;
    const double want = std::ceil(m_options.round_ms / fastest);
    return static_cast<int>(
        std::clamp(want, static_cast<double>(m_options.repeats), static_cast<double>(m_options.max_repeats)));
}

DNNCOST_FUNC auto Harness::measure_networks(const std::vector<Network>& nets, std::vector<std::vector<Record>> rounds,
                                            const HarnessEvents& events, const std::function<void(const Record&)>& sink,
                                            std::size_t& requests_done, const ReferenceWatch* watch, Summary* summary)
    -> std::vector<Record> {
    const std::size_t n = nets.size();
    std::vector<Record> results(n);
    std::vector<int> target(n, m_options.rounds);
    std::vector<int> repeats(n, m_options.repeats);
    for (std::size_t i = 0; i < n; ++i) repeats[i] = calibrated_repeats(rounds[i]);
    // per round, the span of the run it finished in; 0 for the rounds resumed from the store
    std::vector<std::vector<std::size_t>> span_of(n);
    for (std::size_t i = 0; i < n; ++i) span_of[i].assign(rounds[i].size(), 0);
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
    // a successful answer as network i's next round, appended to the store
    const auto take_round = [&](std::size_t i, const Outcome& o) {
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
        span_of[i].push_back(watch ? watch->span() : 0);
        repeats[i] = calibrated_repeats(rounds[i]);
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
            take_round(i, o);
            settle(i);
        }
        progress();
    };
    // requests go in batches: all at once without a reference; with one, as many as measure
    // before the reference is due by count, or, when it is due by time too, one per runner
    const auto batch_size = [&](std::size_t pending) -> std::size_t {
        if (!watch) return pending;
        if (m_provenance.every_seconds > 0)
            return std::max<std::size_t>(1, std::min(m_provenance.every, m_pool.size()));
        return m_provenance.every;
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
            const std::size_t batch = batch_size(pending.size());
            for (std::size_t from = 0; from < pending.size(); from += batch) {
                const std::size_t to = std::min(pending.size(), from + batch);
                std::vector<Request> requests;
                for (std::size_t k = from; k < to; ++k) {
                    const auto i = pending[k];
                    // kept only for a planned round to come: an unstable network's extra
                    // rounds each load the model afresh
                    const bool keep = m_options.keep_sessions && static_cast<int>(rounds[i].size()) + 1 < target[i];
                    requests.push_back({0, nets[i].model.string(), m_options.warmup, repeats[i], keep});
                }
                m_pool.run(requests, [&](std::size_t k, const Outcome& o) { on_outcome(pending[from + k], o); });
                if (watch) watch->between(to - from);
            }
        }
    }
    if (!watch) return results;

    // Networks measured only while the host was slow: one round more each, twice at most. A
    // retake round that fails leaves the result as it was.
    const auto in_slow_span = [&](std::size_t i, std::size_t k) {
        return span_of[i][k] > 0 && watch->slow(span_of[i][k]);
    };
    const auto only_slow = [&](std::size_t i) {
        if (!results[i].ok() || span_of[i].empty()) return false;
        for (std::size_t k = 0; k < span_of[i].size(); ++k)
            if (!in_slow_span(i, k)) return false;
        return true;
    };
    std::vector<char> retaken(n, 0), was_slow(n, 0);
    for (int pass = 0; pass < 2; ++pass) {
        watch->close_span();  // the last span's end is known before it is judged
        std::vector<std::size_t> again;
        for (std::size_t i = 0; i < n; ++i) {
            if (!only_slow(i)) continue;
            was_slow[i] = 1;
            if (static_cast<int>(rounds[i].size()) < m_options.max_rounds) again.push_back(i);
        }
        if (again.empty()) break;
        const std::size_t batch = batch_size(again.size());
        for (std::size_t from = 0; from < again.size(); from += batch) {
            const std::size_t to = std::min(again.size(), from + batch);
            std::vector<Request> requests;
            for (std::size_t k = from; k < to; ++k)
                requests.push_back({0, nets[again[k]].model.string(), m_options.warmup, repeats[again[k]], false});
            m_pool.run(requests, [&](std::size_t k, const Outcome& o) {
                ++requests_done;
                if (!o.ok()) return;
                take_round(again[from + k], o);
                retaken[again[from + k]] = 1;
            });
            watch->between(to - from);
        }
    }
    watch->close_span();
    // every network with rounds in slow spans or new rounds: summarised from the rounds outside
    // slow spans where it has any, reported again when that changes its result
    for (std::size_t i = 0; i < n; ++i) {
        if (!results[i].ok() || span_of[i].empty()) continue;
        std::vector<Record> usual;
        for (std::size_t k = 0; k < rounds[i].size(); ++k)
            if (!in_slow_span(i, k)) usual.push_back(rounds[i][k]);
        if (!retaken[i] && (usual.empty() || usual.size() == rounds[i].size())) continue;
        auto r = summarise(nets[i], usual.empty() ? rounds[i] : usual);
        if (r.latency_ms == results[i].latency_ms && r.rounds == results[i].rounds && r.spread == results[i].spread)
            continue;
        sink(r);
        results[i] = r;
        if (events.on_result) events.on_result(nets[i], r);
    }
    if (summary)
        for (std::size_t i = 0; i < n; ++i) {
            summary->slow_span_networks += was_slow[i];
            summary->slow_span_retaken += was_slow[i] && !only_slow(i);
        }
    return results;
}

DNNCOST_FUNC void HarnessOptions::check() const {
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

DNNCOST_FUNC std::string HarnessOptions::to_json() const {
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

}  // namespace dnncost::measure
