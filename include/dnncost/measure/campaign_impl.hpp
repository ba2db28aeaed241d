#pragma once
/// @file campaign_impl.hpp
/// The definitions of campaign.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by campaign.hpp in header-only mode.
#include <map>

#include <dnncost/measure/campaign.hpp>

DNNCOST_FUNC auto dnncost::measure::detail::check_store_owner(const std::optional<StoreInfo>& info,
                                                              const CampaignOptions& o) -> void {
    std::error_code ec;
    const bool has_rows = std::filesystem::exists(o.out, ec) && std::filesystem::file_size(o.out, ec) > 0;
    if (!info || !has_rows || (info->device == o.device && info->runners == o.runners)) return;
    std::string was;
    for (const auto& r : info->runners) was += (was.empty() ? "'" : ", '") + r + "'";
    raise<config_error>(o.out.string(), " holds measurements of device '", info->device, "' by runner ", was,
                        "; this run is device '", o.device,
                        "' with other runners: measure into another --out (one results file per device and runner)");
}

DNNCOST_FUNC auto dnncost::measure::detail::noise_check(Harness& harness, const ResultsStore& store,
                                                        const std::vector<Network>& networks,
                                                        const NetworkSource& source, const CampaignOptions& o,
                                                        const std::filesystem::path& scratch, const CampaignEvents& ev)
    -> std::optional<NoiseReport> {
    std::vector<Network> chosen;
    std::vector<double> first;
    std::vector<std::size_t> order(networks.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    Rng rng(o.seed ^ 0x6e6f697365ULL);
    rng.shuffle(order.begin(), order.end());
    const auto store_dir = std::filesystem::absolute(o.out).parent_path();
    for (const auto i : order) {
        if (chosen.size() == o.noise_check) break;
        auto n = networks[i];
        const auto* r = store.result(n.key);
        if (!r || !r->ok()) continue;
        if (n.model.empty()) {  // networks the store already had were not exported
            n.model = scratch / (n.key + ".onnx");
            const auto c = candidate_from_id(n.id, store_dir, source.space_options);
            write_model_for_runner(c.graph, n.model, o.seed, c.opset);
        }
        first.push_back(r->latency_ms);
        chosen.push_back(std::move(n));
    }
    if (chosen.size() < o.noise_check)
        warn(ev, "--noise-check " + std::to_string(o.noise_check) + ": only " + std::to_string(chosen.size()) +
                     " networks have a result to compare with");
    if (chosen.empty()) return std::nullopt;
    HarnessEvents nev;
    nev.on_progress = ev.harness.on_progress;
    return harness.noise_check(chosen, first, nev);
}

DNNCOST_FUNC auto dnncost::measure::run_campaign(const NetworkSource& source, const CampaignOptions& o,
                                                 const CampaignEvents& events) -> CampaignReport {
    namespace fs = std::filesystem;
    auto ho = o.harness;
    if (ho.max_rounds < ho.rounds) ho.max_rounds = ho.rounds;
    ho.check();
    io::check_writable(o.out);
    CampaignReport rep;
    rep.sidecar = sidecar_path(o.out);
    const auto old_info = read_store_info(rep.sidecar);
    detail::check_store_owner(old_info, o);
    ResultsStore store(o.out);
    if (store.torn_bytes_repaired() > 0)
        detail::warn(events, o.out.string() + ": cut off " + std::to_string(store.torn_bytes_repaired()) +
                                 " bytes of an interrupted write at its end");
    if (!store.issues().empty())
        detail::warn(events, o.out.string() + ":" + std::to_string(store.issues().front().line) +
                                 ": unreadable row ignored (" + store.issues().front().message + ")" +
                                 (store.issues().size() > 1 ? " and more" : ""));
    StoreInfo info{o.device, o.runners, old_info ? old_info->runner_device : std::string(), ho.to_json()};
    if (old_info) {
        info.host = old_info->host;
        info.references = old_info->references;
    }
    write_store_info(rep.sidecar, info);

    // the networks: graphs, keys, model files for the runner (the graphs are dropped once exported)
    ScratchDir scratch;
    std::vector<Network> networks;
    {
        const auto candidates = detail::candidates_of(source, o);
        for (const auto& c : candidates) {
            Network n{network_key(c.graph), c.id, {}};
            const auto* present = store.result(n.key);
            if (!(present && present->ok() && !ho.force)) {
                n.model = scratch.path() / (n.key + ".onnx");
                if (!fs::exists(n.model)) write_model_for_runner(c.graph, n.model, o.seed, c.opset);
            }
            networks.push_back(std::move(n));
        }
    }
    PoolOptions po;
    po.timeout = Millis(static_cast<std::int64_t>(o.timeout_seconds * 1000));
    po.retries = o.retries;
    po.runner.startup_timeout = Millis(static_cast<std::int64_t>(o.startup_timeout_seconds * 1000));
    if (o.cpu) {
        const auto allowed = allowed_cpus();
        if (std::find(allowed.begin(), allowed.end(), *o.cpu) == allowed.end())
            raise<config_error>("CPU ", *o.cpu, " is not a CPU this process may run on");
        po.runner.process.cpu = *o.cpu;
    }
    if (o.realtime) {
        std::string why;
        if (realtime_permitted(&why))
            po.runner.process.realtime = true;
        else
            detail::warn(events, "warning: real-time scheduling ignored: " + why);
    }
    // the reference network, measured with the run so that its figures can be compared with
    // other hosts' and days'
    ProvenanceOptions prov;
    prov.reference_model = scratch.path() / "reference.onnx";
    write_reference_model(prov.reference_model);
    prov.reference_key = network_key(reference_graph());
    {
        std::error_code ec;
        if (old_info && fs::exists(o.out, ec) && fs::file_size(o.out, ec) > 0) prov.stored = old_info;
    }
    prov.store_name = o.out.string();
    prov.allow_other_host = o.allow_other_host;
    prov.how_to_allow = "pass --allow-other-host to append anyway";
    // a malformed kernel file stops the run before anything is measured, not after
    if (o.profile) (void)read_kernel_profiles(kernel_profiles_path(o.out));
    RunnerPool pool(o.runners, po);
    Harness harness(pool, ho, prov);

    // other processes are noise in every measurement of a local device: say so up front
    if (std::ifstream loadavg("/proc/loadavg"); loadavg) {
        double load = 0;
        const auto cpus = std::max(1u, std::thread::hardware_concurrency());
        if (loadavg >> load && load > 0.5 * cpus) {
            std::ostringstream os;
            os << "warning: load average " << load << " on " << cpus
               << " CPUs: other processes will disturb measurements made on this machine";
            detail::warn(events, os.str());
        }
    }
    auto save_device = [&] {  // as soon as the runner has described itself
        if (!info.runner_device.empty() || pool.device().empty()) return;
        info.runner_device = pool.device();
        write_store_info(rep.sidecar, info);
    };
    HarnessEvents ev = events.harness;
    ev.on_progress = [&](const Progress& p) {
        save_device();
        if (events.harness.on_progress) events.harness.on_progress(p);
    };
    rep.summary = harness.run(store, networks, ev);
    for (const auto& w : rep.summary.conditions.warnings) detail::warn(events, "warning: " + w);
    for (const auto& r : rep.summary.conditions.reasons) detail::warn(events, "warning: this run was disturbed: " + r);
    if (!info.host) info.host = rep.summary.conditions.host;
    if (rep.summary.conditions.reference) info.references.push_back(*rep.summary.conditions.reference);
    write_store_info(rep.sidecar, info);
    std::vector<double> spreads;
    for (const auto& r : rep.summary.results)
        if (r.ok()) spreads.push_back(r.spread);
    const double typical = statistic_of(spreads, Statistic::median);
    if (std::isfinite(typical) && typical > ho.remeasure_spread)
        detail::warn(events, "warning: the median spread of this run's networks is " + detail::percent(typical) +
                                 ", above the re-measure threshold " + detail::percent(ho.remeasure_spread) +
                                 ": the device was noisy (see docs/measure.md)");
    save_device();
    if (o.profile) {
        // separate requests: the profiler slows the runs it records, and none of them is stored
        std::map<std::string, const Network*> by_key;
        for (const auto& n : networks) by_key.emplace(n.key, &n);
        std::vector<const Network*> todo;
        for (const auto& r : rep.summary.results)
            if (r.ok() && by_key.count(r.key)) todo.push_back(by_key[r.key]);
        std::vector<Request> requests;
        for (const auto* n : todo) {
            Request req{0, n->model.string(), ho.warmup, ho.repeats};
            req.profile = true;
            requests.push_back(std::move(req));
        }
        std::vector<KernelProfile> profiles;
        pool.run(requests, [&](std::size_t k, const Outcome& out) {
            if (!out.ok() || out.answer.kernels.empty()) {
                ++rep.profile_failed;
                detail::warn(events, "warning: no kernels for " + todo[k]->id + ": " +
                                         (out.ok() ? std::string("the runner does not profile") : out.detail));
                return;
            }
            profiles.push_back({todo[k]->key, todo[k]->id, out.answer.kernels, {}});
            std::error_code ec;
            if (!out.answer.optimized_model.empty()) fs::remove(out.answer.optimized_model, ec);
        });
        if (!profiles.empty()) merge_kernel_profiles(kernel_profiles_path(o.out), profiles);
        rep.profiled = profiles.size();
    }
    if (o.noise_check > 0) rep.noise = detail::noise_check(harness, store, networks, source, o, scratch.path(), events);
    rep.runner_device = pool.device();
    if (rep.summary.measured) rep.seconds_per_network = rep.summary.seconds / static_cast<double>(rep.summary.measured);
    return rep;
}

DNNCOST_FUNC dnncost::measure::json::Value dnncost::measure::report_json(const CampaignReport& rep,
                                                                        const CampaignOptions& o) {
    using json::Value;
    const auto count = [](std::size_t n) { return Value::of(static_cast<double>(n)); };
    const auto finite_or_null = [](double x) { return std::isfinite(x) ? Value::of(x) : Value{}; };
    const auto& s = rep.summary;
    Value j = Value::object();
    j.set("measured", count(s.measured));
    j.set("skipped", count(s.skipped));
    j.set("failed", count(s.failed));
    Value reasons = Value::object();
    for (const auto& [reason, n] : s.failed_by_reason) reasons.set(reason, count(n));
    j.set("failed_by_reason", std::move(reasons));
    j.set("duplicates", count(s.duplicates));
    j.set("remeasured", count(s.remeasured));
    j.set("requests", count(s.requests));
    j.set("seconds", Value::of(s.seconds));
    j.set("seconds_per_network", finite_or_null(rep.seconds_per_network));
    j.set("out", Value::of(o.out.string()));
    j.set("device", Value::of(o.device));
    j.set("runner_device", rep.runner_device.empty() ? Value{} : json::parse(rep.runner_device));
    j.set("settings", json::parse(o.harness.to_json()));
    j.set("host", to_json(s.conditions.host));
    j.set("disturbed", Value::of(s.conditions.disturbed));
    j.set("conditions", to_json(s.conditions));
    if (o.profile) {
        Value p = Value::object();
        p.set("networks", count(rep.profiled));
        p.set("failed", count(rep.profile_failed));
        j.set("profiled", std::move(p));
    }
    if (const auto& noise = rep.noise) {
        const bool none = noise->pairs.empty();  // no network could be re-measured: no agreement to give
        Value n = Value::object();
        n.set("networks", count(noise->networks));
        n.set("pairs", count(noise->pairs.size()));
        n.set("failed", count(noise->failed));
        n.set("within_5", none ? Value{} : Value::of(noise->within_5.agreement));
        n.set("within_10", none ? Value{} : Value::of(noise->within_10.agreement));
        n.set("sigma", none ? Value{} : Value::of(noise->within_5.sigma));
        n.set("seconds", Value::of(noise->seconds));
        j.set("noise_check", std::move(n));
    }
    return j;
}
