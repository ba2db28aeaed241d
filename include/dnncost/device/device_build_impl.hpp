#pragma once
/// @file device_build_impl.hpp
/// The definitions of device_build.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by device_build.hpp in header-only mode.
#include <algorithm>
#include <initializer_list>
#include <set>
#include <utility>

#include <dnncost/device/device_build.hpp>
#include <dnncost/measure/kernel_profiles.hpp>
#include <dnncost/measure/reference_model.hpp>
#include <dnncost/spaces/kws.hpp>
#include <dnncost/spaces/network_name.hpp>

DNNCOST_FUNC auto dnncost::device::device_sampler_options() -> KernelSamplerOptions {
    KernelSamplerOptions o;
    o.prior_share = 0.7;
    o.max_macs = 2'000'000'000;
    o.max_elements = 6'000'000;
    return o;
}

DNNCOST_FUNC auto dnncost::device::detail::overhead_sample() -> KernelSample {
    graph::Graph g("run-overhead");
    const int x = g.add_input("x", {1, 8});
    g.mark_output(g.add_op("Relu", "relu", {x}, {1, 8}));
    KernelSample s;
    s.config.kind = "Activation";
    s.config.op = "Relu";
    s.key = graph::canonical_hash(g).hex();
    s.graph = std::move(g);
    return s;
}

DNNCOST_FUNC auto dnncost::device::build_device_model(const std::vector<graph::Graph>& graphs,
                                                      const DeviceBuildSetup& setup) -> DeviceBuildResult {
    if (setup.runners.empty()) raise<config_error>("device build: no runner command");
    if (setup.work_dir.empty()) raise<config_error>("device build: no work directory");
    if (!(setup.budget_minutes >= 0) || !std::isfinite(setup.budget_minutes))
        raise<config_error>("device build: the budget must be a finite number of minutes >= 0");
    std::error_code ec;
    std::filesystem::create_directories(setup.work_dir, ec);
    if (!std::filesystem::is_directory(setup.work_dir))
        raise<io_error>("device build: cannot create the work directory '", setup.work_dir.string(), "'");
    const auto t0 = std::chrono::steady_clock::now();
    const auto now = [&] {
        return setup.clock ? setup.clock()
                           : std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    const double start = now();
    DeviceBuildResult out;
    const auto progress = [&](const std::string& step, const SamplingProgress& p) {
        if (setup.on_progress) setup.on_progress({step, p, now() - start});
    };
    if (!(setup.network_share > 0 && setup.network_share <= 1))
        raise<config_error>("device build: the networks' share of the budget must be in (0, 1], got ",
                            setup.network_share);

    // 1. rules
    FusionRules rules;
    if (setup.rules) {
        rules = *setup.rules;
    } else {
        FusionProbeSetup p;
        p.runners = setup.runners;
        p.device = setup.device;
        p.store = setup.work_dir / "fusion.csv";
        p.rules_out = setup.work_dir / "fusion.rules";
        p.evidence_out = setup.work_dir / "fusion.json";
        p.harness = setup.probe_harness;
        p.pool = setup.pool;
        p.discovery = setup.discovery;
        p.seed = setup.seed;
        p.opset = spaces_opset();
        p.events.on_progress = [&](const measure::Progress& h) {
            SamplingProgress s;
            s.done = h.requests_done;
            s.total = h.requests_total;
            progress("rules", s);
        };
        // the space networks bring what the given networks may lack (BatchNorm after Conv, LayerNorm, GELU)
        auto probe_graphs = graphs;
        Rng probe_rng(setup.seed);
        for (const auto& space : spaces::all_spaces())
            for (std::size_t i = 0; i < setup.probe_per_space; ++i)
                probe_graphs.push_back(space.build_graph(space.sample(probe_rng), {}));
        auto r = probe_fusion_rules(probe_graphs, p);
        out.probe_model_errors = r.model_errors;
        rules = r.discovery.rules;
        out.discovery = std::move(r.discovery);
    }
    rules.device = setup.device;

    // 2. the run overhead, and the single kernels later, in one store
    MeasuringSetup on_device;
    on_device.runners = setup.runners;
    on_device.device = setup.device;
    on_device.harness = setup.harness;
    on_device.pool = setup.pool;
    on_device.seed = setup.seed;
    on_device.clock = setup.clock;
    on_device.retake_disturbed = setup.retake_disturbed;
    KernelSamplingSetup ks;
    static_cast<MeasuringSetup&>(ks) = on_device;
    ks.store = setup.work_dir / "kernels.csv";
    ks.opset = spaces_opset();
    const auto overhead = measure_kernel_samples({detail::overhead_sample()}, rules, ks);
    if (overhead.rows.empty())
        raise<config_error>("device build: the run-overhead model could not be measured (see ", ks.store.string(), ")");
    const double overhead_ms = overhead.rows.front().latency_ms;
    const auto remaining_minutes = [&] {
        return setup.budget_minutes > 0 ? std::max(0.0, setup.budget_minutes - (now() - start) / 60.0) : 0.0;
    };

    // 3. whole networks, profiled: their kernels in context
    std::vector<KernelRow> context_rows;
    Disturbance network_chunks;  // how their chunks ran: the speed later steps keep
    if (setup.in_context != InContext::off) {
        const auto nets = setup.profiled_networks.empty()
                              ? context_networks(setup.networks, setup.seed, setup.network_limits)
                              : setup.profiled_networks;
        if (nets.empty())
            raise<config_error>(
                "device build: no whole networks to profile for in-context samples; ask for some, or "
                "build from single kernels only (in-context samples off)");
        NetworkProfilingSetup ps;
        static_cast<MeasuringSetup&>(ps) = on_device;
        ps.store = setup.work_dir / "networks.csv";
        ps.confirm_latency = setup.confirm_latency;
        ps.opset = std::max(spaces_opset(), synthetic::onnx_opset);
        if (setup.budget_minutes > 0) ps.budget_minutes = std::max(1e-9, remaining_minutes() * setup.network_share);
        ps.on_progress = [&](const SamplingProgress& p) { progress("networks", p); };
        auto pr = profile_networks(nets, rules, overhead_ms, ps);
        const auto files = ps.store.string() + " and " + measure::kernel_profiles_path(ps.store).string();
        if (!pr.profiles) {
            if (setup.in_context == InContext::on)
                raise<config_error>(
                    "device build: the runner answered a profiled request without kernels: it cannot "
                    "profile, so there are no in-context samples; build from single kernels only "
                    "(in-context samples off)");
            out.in_context_note = "the runner does not profile: single-kernel samples only";
        } else {
            if (pr.rows.empty())
                raise<config_error>(
                    "device build: none of the ", nets.size(), " networks gave an in-context sample (",
                    pr.measured + pr.from_store, " with a latency, ", pr.failed, " failed, ", pr.without_profile,
                    " without a profile, ", pr.over_budget, " over the budget, ", pr.unmapped, " of ", pr.pass_kernels,
                    " kernels mapped to no runtime kernel, ", pr.merged, " were fused with those)",
                    pr.problems.empty() ? std::string() : "; first: " + pr.problems.front(), "; see ", files);
            out.in_context = true;
            context_rows = pr.rows;
            if (pr.pass_kernels > 0 && 4 * (pr.unmapped + pr.merged) > pr.pass_kernels)
                out.warnings.push_back(std::to_string(pr.unmapped) + " of the profiled networks' " +
                                       std::to_string(pr.pass_kernels) + " kernels mapped to no runtime kernel and " +
                                       std::to_string(pr.merged) +
                                       " were fused with them, all left out: the rules are not the runtime's "
                                       "(see dnncost device check)");
            if (pr.without_profile + pr.failed > 0)
                out.warnings.push_back(std::to_string(pr.without_profile) + " networks came without a profile and " +
                                       std::to_string(pr.failed) + " failed to measure (see " + files + ")");
            if (pr.over_budget > 0)
                out.warnings.push_back(std::to_string(pr.over_budget) + " of " + std::to_string(nets.size()) +
                                       " networks were not profiled within the budget");
            if (pr.unconfirmed > 0)
                out.warnings.push_back(std::to_string(pr.unconfirmed) + " of the profiled networks' latencies were " +
                                       "measured once: the budget ran out before they were measured again");
            for (const auto& d : pr.disagreements)
                if (d.find("no third measurement") != std::string::npos) out.warnings.push_back(d);
            if (const auto d = pr.disturbance.summary(); !d.empty())
                out.warnings.push_back("whole networks: " + d + "; build again on a quiet machine");
            network_chunks = pr.disturbance;
            out.profiling = std::move(pr);
        }
    }

    // 4. single kernels: of the kinds whose regressors the profiles left short of samples (all
    // kinds without profiles)
    KernelSampler sampler(rules, setup.sampler);
    Rng rng(setup.seed);
    add_space_prior(sampler, setup.prior_per_space, rng);
    for (const auto& g : graphs) sampler.add_prior(g);
    {
        std::map<std::string, std::int64_t> per_group;
        const auto group_of = [&](const std::string& k) {
            return setup.model.family_regressors ? k.substr(0, k.find('+')) : k;
        };
        for (const auto& r : context_rows) ++per_group[group_of(r.kind)];
        for (const auto& k : sampler.kinds())
            if (per_group[group_of(k)] < setup.model.min_samples) out.isolated_kinds.push_back(k);
    }
    std::vector<KernelSample> samples;
    for (const auto& kind : out.isolated_kinds)
        for (auto& s : sampler.draw(kind, setup.per_kind, rng)) samples.push_back(std::move(s));
    // the single kernels keep the speed the whole networks were measured at, round after round
    Disturbance kernels_disturbed;
    kernels_disturbed.vote_with(network_chunks);
    const auto measure_all = [&](const std::string& step) {
        if (samples.empty()) return KernelSamplingResult{};
        auto s = ks;
        s.earlier_chunks = kernels_disturbed;
        s.budget_minutes = remaining_minutes();
        if (setup.budget_minutes > 0 && s.budget_minutes <= 0) s.budget_minutes = 1e-9;
        s.on_progress = [&](const SamplingProgress& p) { progress(step, p); };
        auto r = measure_kernel_samples(samples, rules, s);
        kernels_disturbed.add(r.disturbance);
        out.measured += r.measured;
        out.failed += r.failed;
        out.over_budget = r.over_budget;
        return r;
    };
    const auto fit = [&](const KernelSamplingResult& m) {
        auto rows = context_rows;
        rows.insert(rows.end(), m.rows.begin(), m.rows.end());
        return DeviceModel::build(rules, detail::measurements(rows), overhead_ms, setup.model);
    };
    auto measured = measure_all("kernels");
    out.model = fit(measured);

    // adaptive rounds: more single kernels where a kind's held-out error is large, while time remains
    for (int round = 1; round <= setup.adaptive_rounds && !out.isolated_kinds.empty(); ++round) {
        if (measured.over_budget > 0 || (setup.budget_minutes > 0 && remaining_minutes() <= 0)) break;
        std::map<std::string, double> errors;
        for (const auto& kind : out.isolated_kinds) {
            const auto it = out.model.kinds().find(kind);
            double e = std::nan("");
            if (it != out.model.kinds().end() && it->second.regressor)
                for (const auto& s : it->second.scores)
                    if (s.name == it->second.chosen) e = s.mape;
            errors[kind] = e;
        }
        const auto extra = allocate_samples(errors, setup.adaptive_samples);
        std::size_t drawn = 0;
        for (const auto& [kind, n] : extra) {
            if (n == 0) continue;
            for (auto& s : sampler.draw(kind, n, rng)) {
                samples.push_back(std::move(s));
                ++drawn;
            }
        }
        if (drawn == 0) break;
        measured = measure_all("adaptive round " + std::to_string(round));
        out.model = fit(measured);
        out.adaptive_rounds = round;
    }
    if (const auto d = kernels_disturbed.summary(); !d.empty())
        out.warnings.push_back("single kernels: " + d + "; build again on a quiet machine");
    out.kernel_disturbance = kernels_disturbed;
    out.context_samples = context_rows.size();
    out.isolated_samples = measured.rows.size();
    out.samples = out.context_samples + out.isolated_samples;
    // what the model was fitted to, so that it can be fitted again without measuring
    KernelSampleFile file{setup.device, rules, overhead_ms, {}, detail::measurements(context_rows)};
    for (const auto& r : context_rows) file.keys.push_back(r.key);
    for (const auto& m : detail::measurements(measured.rows)) file.samples.push_back(m);
    for (const auto& r : measured.rows) file.keys.push_back(r.key);
    write_kernel_sample_file(setup.work_dir / "kernel_samples.json", file);
    out.seconds = now() - start;
    return out;
}

DNNCOST_FUNC auto dnncost::device::parse_in_context(std::string_view s) -> InContext {
    if (s == "auto") return InContext::automatic;
    if (s == "on") return InContext::on;
    if (s == "off") return InContext::off;
    raise<config_error>("in-context samples: '", s, "' is not auto, on or off");
}

namespace dnncost::device::detail {
/// `n` networks of distinct structure from one seeded stream: `draw(i, rng)` gives the i-th draw
/// (slot i of a plan); a draw that repeats an earlier network is dropped, after at most 4n + 16
/// draws the networks so far are all.
template <class Draw>
std::vector<graph::Graph> distinct_networks(std::size_t n, std::uint64_t seed, Draw draw) {
    Rng rng(seed);
    std::vector<graph::Graph> out;
    std::set<std::string> keys;
    for (std::size_t i = 0; out.size() < n && i < 4 * n + 16; ++i) {
        auto g = draw(i, rng);
        if (keys.insert(measure::network_key(g)).second) out.push_back(std::move(g));
    }
    return out;
}
}  // namespace dnncost::device::detail

DNNCOST_FUNC auto dnncost::device::context_networks(std::size_t n, std::uint64_t seed, const synthetic::Limits& limits)
    -> std::vector<graph::Graph> {
    limits.check();
    // a small network first: a runner that cannot profile is found on it
    // one convolutional slot a round has parallel branches: their channel concatenations are the
    // only ones most builds see in context, and a random block kind can leave a build without them
    static const std::string_view plan[] = {"nb201", "cnn",         "transformer", "ofa",         "branched-cnn",
                                            "fbnet", "vit",         "cnn",         "transformer", "kws",
                                            "cnn",   "transformer", "ofa",         "cnn"};
    const auto nth_of_its_kind = [](std::size_t i) {  // how many slots of draw i's kind came before it
        const auto slot = plan + i % std::size(plan);
        return static_cast<std::size_t>(std::count(std::begin(plan), std::end(plan), *slot)) * (i / std::size(plan)) +
               static_cast<std::size_t>(std::count(std::begin(plan), slot, *slot));
    };
    return detail::distinct_networks(n, seed, [&](std::size_t i, Rng& rng) {
        const auto pick = [&](std::initializer_list<int> choices) {
            return *(choices.begin() + rng.below(choices.size()));
        };
        const auto what = plan[i % std::size(plan)];
        graph::Graph g;
        if (what == "cnn") {
            // the plain convolutional slots take the other block kinds in turn: random draws may
            // leave a build with large k x k convolutions only between the branched blocks'
            // concatenations, whose neighbours slow them as plain and bottleneck blocks do not;
            // and real networks run grouped convolutions, channel shuffles, channels-last layer
            // norms and wide classifiers on flattened maps, whose kernels and neighbours no other
            // kind gives
            static const synthetic::Block turn[] = {synthetic::Block::basic,      synthetic::Block::grouped,
                                                    synthetic::Block::bottleneck, synthetic::Block::depthwise_mlp,
                                                    synthetic::Block::inverted,   synthetic::Block::shuffle,
                                                    synthetic::Block::plain};
            g = synthetic::build_cnn(synthetic::sample_cnn(rng, turn[nth_of_its_kind(i) % std::size(turn)]), limits);
        } else if (what == "branched-cnn") {
            g = synthetic::build_cnn(synthetic::sample_cnn(rng, synthetic::Block::branched), limits);
        } else if (what == "transformer") {
            // the transformer slots take short, medium and long sequences in turn: random draws
            // may leave a build without matrix products of a few dozen rows (ViT-B/32's 50
            // tokens), which run far below the longer sequences' FLOP rate. The length within a
            // range comes from the draw's index, so the other slots' draws stay as they were
            static const synthetic::Sequence turn[] = {
                synthetic::Sequence::short_range, synthetic::Sequence::medium_range, synthetic::Sequence::long_range};
            const std::size_t choice = (i * 2654435761u) >> 7;  // Knuth's multiplicative hash of the index
            g = synthetic::build_transformer(
                synthetic::with_sequence(synthetic::sample_transformer(rng), turn[nth_of_its_kind(i) % std::size(turn)],
                                         choice),
                limits);
        } else {
            const auto& space = spaces::find_space(what);
            std::string arch;
            if (what != "kws") {
                arch = space.sample(rng);
            } else {
                // the keyword-spotting slots take the stem strides in turn, and their windows
                // alternate between k x 1 and k x 3: a 2x2 stem leaves a map of five columns, on
                // which depthwise k x 3 windows run at another rate than k x 1 ones or either on
                // ten columns, and random draws may leave a build without one of the four
                static const std::pair<kws::Extent, int> turn[] = {{{2, 2}, 3}, {{2, 1}, 1}, {{2, 2}, 1}, {{2, 1}, 3}};
                const auto& [stride, first_width] = turn[nth_of_its_kind(i) % std::size(turn)];
                auto a = kws::sample(rng);  // the draw space.sample makes
                a.stem_stride = stride;
                for (std::size_t b = 0; b < a.blocks.size(); ++b)
                    a.blocks[b].kernel[1] = b % 2 == 0 ? first_width : first_width == 3 ? 1 : 3;
                arch = kws::to_string(a);
            }
            spaces::SpaceOptions o;
            if (what == "ofa")
                o["resolution"] = std::to_string(pick({160, 192, 224, 256, 288, 320}));
            else {
                // NB201, FBNet, ViT: real sizes at larger batches, and as searched (batch 1; each
                // space in the first round): the small kernels of small networks, which no larger
                // network shows. Keyword spotting runs on audio frames one at a time: batch 1 always
                const int batch = what == "vit" ? pick({1, 4, 8, 16}) : pick({1, 8, 16, 32});
                o["batch"] = std::to_string(i < std::size(plan) || what == "kws" ? 1 : batch);
            }
            g = space.build_graph(arch, o);
            const auto size = synthetic::network_size(g);
            if (size.params > limits.max_params || size.macs > limits.max_macs) {
                g = synthetic::build_cnn(synthetic::sample_cnn(rng), limits);  // a smaller one in its place
            } else {
                g.set_name(spaces::network_name(what, arch, o));
            }
        }
        return g;
    });
}

DNNCOST_FUNC auto dnncost::device::calibration_networks(std::size_t n, std::uint64_t seed)
    -> std::vector<graph::Graph> {
    // what a user prices: convolutional networks of each block kind, transformers and
    // Once-for-All at ImageNet sizes. A factor fitted on the spaces' own small networks carries
    // their error (kernels far smaller than a deployed network's) to every network priced after.
    static const std::string_view plan[] = {"inverted",    "transformer", "basic",    "ofa",         "branched",
                                            "transformer", "bottleneck",  "inverted", "transformer", "basic"};
    synthetic::Limits limits;
    limits.max_macs = calibration_max_macs;
    return detail::distinct_networks(n, seed, [&](std::size_t i, Rng& rng) {
        const auto what = plan[i % std::size(plan)];
        graph::Graph g;
        if (what == "transformer") {
            g = synthetic::build_transformer(synthetic::sample_transformer(rng), limits);
        } else if (what == "ofa") {
            const auto& space = spaces::find_space(what);
            const auto arch = space.sample(rng);
            const std::int64_t resolution = rng.below(2) ? 224 : 256;
            g = space.build_graph(arch, {{"resolution", std::to_string(resolution)}});
            if (synthetic::network_size(g).macs > limits.max_macs)
                g = synthetic::build_cnn(synthetic::sample_cnn(rng, synthetic::Block::inverted), limits);
            else
                g.set_name(spaces::network_name(what, arch, {{"resolution", std::to_string(resolution)}}));
        } else {
            const auto block = what == "basic"        ? synthetic::Block::basic
                               : what == "bottleneck" ? synthetic::Block::bottleneck
                               : what == "inverted"   ? synthetic::Block::inverted
                                                      : synthetic::Block::branched;
            auto arch = synthetic::sample_cnn(rng, block);
            // deployed dense networks end wide (basic blocks at 512 channels, bottlenecks at
            // 2,048 outputs), and their wide convolutions run at another rate against the model
            // than narrow ones do: narrow shots leave a calibration blind to it. Redrawn from a
            // stream of the slot's own, so the other shots stay as drawn.
            const std::int64_t deployed_width = what == "basic" ? 384 : what == "bottleneck" ? 1024 : 0;
            Rng redraw(seed ^ (0x9e3779b97f4a7c15ULL * (i + 1)));
            for (int t = 0; t < 100 && arch.stages.back().width < deployed_width; ++t)
                arch = synthetic::sample_cnn(redraw, block);
            g = synthetic::build_cnn(arch, limits);
        }
        return g;
    });
}

namespace dnncost::device::detail {

/// Whether a graph's name builds that graph again (a search space's or a synthesised network's
/// name, spaces/network_name.hpp), so that a store may name it by its name alone: an imported
/// model may carry such a name and be another network.
inline bool names_itself(const graph::Graph& g, const std::string& key) {
    try {
        const auto n = spaces::parse_network_name(g.name());
        return n && graph::canonical_hash(n->build()).hex() == key;
    } catch (const std::exception&) {
        return false;
    }
}

/// The shots measured for a calibration: per shot its latency (NaN: none) and its profiled
/// kernels, the harness's disturbance, why a shot or the runner gave no profile.
struct MeasuredShots {
    bool profiled = false;  ///< false: the runner cannot profile, or no profile was asked for
    std::vector<double> latency;
    std::vector<std::vector<ProfiledKernel>> kernels;
    std::size_t profiled_kernels = 0;
    Disturbance disturbance;
    std::vector<std::string> problems;
};

/// The shots measured and profiled at once (profile_networks), each opset's networks together,
/// under their store names; the latencies are measured without the profiler. A shot the runtime
/// would not profile still counts by its latency. Not `profiled` when the runner answered a
/// profiled request without kernels: nothing was measured then.
template <class OpsetOf>
MeasuredShots profile_shots(const DeviceModel& model, const std::vector<graph::Graph>& shots,
                            const std::vector<measure::Network>& networks, const OpsetOf& opset_of,
                            const std::filesystem::path& store_path, const DeviceCalibrationSetup& setup) {
    MeasuredShots out;
    out.profiled = true;
    out.latency.assign(shots.size(), std::nan(""));
    out.kernels.resize(shots.size());
    std::map<int, std::vector<std::size_t>> by_opset;
    for (std::size_t i = 0; i < shots.size(); ++i) by_opset[opset_of(i)].push_back(i);
    for (const auto& [opset, which] : by_opset) {
        std::vector<graph::Graph> named;
        std::map<std::string, std::size_t, std::less<>> shot_of;
        for (const auto i : which) {
            named.push_back(shots[i]);
            named.back().set_name(networks[i].id);
            shot_of.emplace(networks[i].key, i);
        }
        NetworkProfilingSetup p;
        p.runners = setup.runners;
        p.device = setup.device;
        p.store = store_path;
        p.model_dir = setup.work_dir / "models";
        p.harness = setup.harness;
        p.pool = setup.pool;
        p.seed = setup.seed;
        p.opset = opset;
        p.retake_disturbed = setup.retake_disturbed;
        // the shots are few and the calibration's time is short: one latency each, the harness's
        // reference and retakes watching the host
        p.confirm_latency = false;
        if (setup.events.on_progress)
            p.on_progress = [&](const SamplingProgress& sp) {
                measure::Progress q;
                q.networks_done = sp.done;
                q.networks_total = sp.total;
                q.elapsed_seconds = sp.elapsed_seconds;
                setup.events.on_progress(q);
            };
        const auto r = profile_networks(named, model.rules(), model.run_overhead_ms(), p);
        if (!r.profiles) {
            MeasuredShots none;
            none.problems.push_back(
                "the runner answered a profiled request without kernels: family factors from the shots' latencies "
                "only");
            return none;
        }
        out.disturbance.add(r.disturbance);
        for (const auto& why : r.problems) out.problems.push_back(why);
        std::size_t row = 0;
        for (const auto& n : r.networks) {
            const auto i = shot_of.at(n.key);
            out.latency[i] = n.latency_ms;
            for (std::size_t k = 0; k < n.samples; ++k, ++row) {
                const auto& key = r.rows[row].key;
                out.kernels[i].push_back({std::stoul(key.substr(key.rfind('#') + 1)), r.rows[row].latency_ms});
                ++out.profiled_kernels;
            }
        }
    }
    measure::ResultsStore store(store_path);
    for (std::size_t i = 0; i < shots.size(); ++i)
        if (const auto* r = store.result(networks[i].key); std::isnan(out.latency[i]) && r && r->ok())
            out.latency[i] = r->latency_ms;
    return out;
}

/// The shots timed alone by the harness, the reference network at the run's start and end as
/// `measure` and `device build` have it (factors of shots measured while the host changed speed
/// would carry the change), once more when disturbed.
template <class OpsetOf>
MeasuredShots time_shots(const std::vector<graph::Graph>& shots, const std::vector<measure::Network>& networks,
                         const OpsetOf& opset_of, const std::filesystem::path& store_path,
                         const DeviceCalibrationSetup& setup) {
    MeasuredShots out;
    out.latency.assign(shots.size(), std::nan(""));
    out.kernels.resize(shots.size());
    measure::ResultsStore store(store_path);
    for (std::size_t i = 0; i < shots.size(); ++i)
        if (!std::filesystem::exists(networks[i].model))
            measure::write_model_for_runner(shots[i], networks[i].model, setup.seed, opset_of(i));
    measure::ProvenanceOptions reference;
    reference.reference_model = setup.work_dir / "reference.onnx";
    reference.reference_key = measure::network_key(measure::reference_graph());
    measure::write_reference_model(reference.reference_model);
    struct RemoveOnExit {
        std::filesystem::path path;
        ~RemoveOnExit() {
            std::error_code e;
            std::filesystem::remove(path, e);
        }
    } remove_reference{reference.reference_model};
    measure::RunnerPool pool(setup.runners, setup.pool);
    measure::Harness harness(pool, setup.harness, reference);
    const auto summary = harness.run(store, networks, setup.events);
    if (!networks.empty()) out.disturbance.note(summary.conditions);
    if (out.disturbance.disturbed > 0 && setup.retake_disturbed) {
        auto again = setup.harness;
        again.force = true;
        measure::Harness afresh(pool, again, reference);
        out.disturbance.retake(0, afresh.run(store, networks, setup.events).conditions);
    }
    for (std::size_t i = 0; i < shots.size(); ++i)
        if (const auto* r = store.result(networks[i].key); r && r->ok()) out.latency[i] = r->latency_ms;
    return out;
}

}  // namespace dnncost::device::detail

DNNCOST_FUNC auto dnncost::device::calibrate_device_model(DeviceModel& model, const std::vector<graph::Graph>& shots,
                                                          const DeviceCalibrationSetup& setup,
                                                          const CalibrationOptions& options)
    -> DeviceCalibrationResult {
    if (setup.runners.empty()) raise<config_error>("device calibrate: no runner command");
    if (shots.empty()) raise<config_error>("device calibrate: no networks to measure");
    std::error_code ec;
    std::filesystem::create_directories(setup.work_dir / "models", ec);
    if (!std::filesystem::is_directory(setup.work_dir / "models"))
        raise<io_error>("device calibrate: cannot create the work directory '", setup.work_dir.string(), "'");
    if (!setup.opsets.empty() && setup.opsets.size() != shots.size())
        raise<config_error>("device calibrate: ", setup.opsets.size(), " opsets for ", shots.size(), " networks");
    const auto opset_of = [&](std::size_t i) { return setup.opsets.empty() ? spaces_opset() : setup.opsets[i]; };
    const auto store_path = setup.work_dir / "shots.csv";
    std::vector<measure::Network> networks;
    for (const auto& g : shots) {
        const auto key = graph::canonical_hash(g).hex();
        // stored under a name that reads back as the network (`device calibrate --data` on the
        // shots' store): its own name where that builds it again, any other by its model file
        networks.push_back({key, detail::names_itself(g, key) ? g.name() : "models/" + key + ".onnx",
                            setup.work_dir / "models" / (key + ".onnx")});
    }
    DeviceCalibrationResult out;
    auto got = setup.profile ? detail::profile_shots(model, shots, networks, opset_of, store_path, setup)
                             : detail::MeasuredShots{};
    out.profile_problems = std::move(got.problems);
    if (!got.profiled) got = detail::time_shots(shots, networks, opset_of, store_path, setup);
    out.disturbance = got.disturbance;
    out.profiled_kernels = got.profiled_kernels;
    const auto& latency = got.latency;
    // the store's model-file names read back as the files: profiling removes them once measured
    for (std::size_t i = 0; i < shots.size(); ++i)
        if (!std::isnan(latency[i]) && networks[i].id != shots[i].name() && !std::filesystem::exists(networks[i].model))
            measure::write_model_for_runner(shots[i], networks[i].model, setup.seed, opset_of(i));
    std::vector<const graph::Graph*> used;
    std::vector<std::vector<ProfiledKernel>> profiles;
    for (std::size_t i = 0; i < shots.size(); ++i) {
        if (!(std::isfinite(latency[i]) && latency[i] > 0)) continue;
        used.push_back(&shots[i]);
        out.shots.push_back(shots[i].name());
        out.measured_ms.push_back(latency[i]);
        profiles.push_back(std::move(got.kernels[i]));
    }
    if (used.empty())
        raise<config_error>("device calibrate: none of the ", shots.size(), " networks could be measured (see ",
                            store_path.string(), ")");
    out.predicted_ms = model.predict_mean(used);
    out.report = model.calibrate(used, out.measured_ms, options,
                                 got.profiled ? std::span<const std::vector<ProfiledKernel>>(profiles)
                                              : std::span<const std::vector<ProfiledKernel>>());
    out.factor = model.calibration_factor();
    return out;
}

DNNCOST_FUNC auto dnncost::device::calibrate_device_model(DeviceModel& model, const train::TrainData& measured,
                                                          std::size_t shots, const CalibrationOptions& options)
    -> DeviceCalibrationResult {
    if (measured.graphs.empty()) raise<config_error>("device calibrate: no measured networks");
    if (shots < 1) raise<config_error>("device calibrate: at least one shot");
    std::vector<std::size_t> order(measured.graphs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return measured.targets[a] < measured.targets[b] || (measured.targets[a] == measured.targets[b] && a < b);
    });
    const std::size_t n = std::min(shots, order.size());
    std::vector<const graph::Graph*> used;
    DeviceCalibrationResult out;
    for (std::size_t k = 0; k < n; ++k) {
        // the k-th of n evenly spaced quantiles, ends included
        const auto i = order[n == 1 ? order.size() / 2 : k * (order.size() - 1) / (n - 1)];
        used.push_back(measured.graphs[i]);
        out.shots.push_back(measured.graphs[i]->name());
        out.measured_ms.push_back(measured.targets[i]);
    }
    out.predicted_ms = model.predict_mean(used);
    out.report = model.calibrate(used, out.measured_ms, options);
    out.factor = model.calibration_factor();
    return out;
}
