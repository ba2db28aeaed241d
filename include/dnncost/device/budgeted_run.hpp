#pragma once
/// @file budgeted_run.hpp
/// The frame that kernel sampling and network profiling share: a resumable run over one results
/// store within a time budget. It checks the setup, keeps the run's clock, opens the store (one
/// that holds another device's or other runners' measurements is refused, so that runs never
/// mix), sizes each chunk to the budget left from the time per item so far, reports progress with
/// an estimate of the time left, and starts the runners only when something is to be measured.
/// Every chunk measures the reference network at its start and end, as `measure` does: a host
/// whose speed changes under a build is then reported, not taken into the model unnoticed, and
/// the disturbed chunks are measured again at the end (twice at most) while the budget lasts.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/reference.hpp>
#include <dnncost/measure/reference_model.hpp>
#include <dnncost/measure/run_conditions.hpp>
#include <dnncost/measure/runner_pool.hpp>
#include <dnncost/measure/sidecar.hpp>
#include <dnncost/measure/store.hpp>

namespace dnncost::device {

/// Where a sampling or profiling run stands.
struct SamplingProgress {
    std::size_t done = 0;                      ///< items with a result (from the store or measured now)
    std::size_t total = 0;                     ///< items asked for
    std::size_t measured = 0;                  ///< measured in this run
    double elapsed_seconds = 0;                ///< of this run
    double seconds_per_sample = std::nan("");  ///< NaN until something was measured
    double eta_seconds = std::nan("");         ///< for the items left (NaN: unknown yet)
};

/// Why the runs of a sampling or profiling run were disturbed: one reason per disturbed chunk,
/// empty when every chunk ran on a quiet machine. A chunk is disturbed when the harness judged it
/// so (RunConditions::reasons: other processes, a reference that drifted within it), or when its
/// reference disagrees with the level that most chunks agree on: a host that was slow (or fast)
/// for a whole chunk shows no drift within it, and samples taken at two speeds do not describe
/// one machine. The level is the one the largest group of chunks agrees with (every measurement
/// of a chunk's reference within max(5 %, 3 x its spread) of it); of groups as large, the
/// fastest's. A host slow most of the time is thus described as it mostly ran, and the few
/// chunks of a faster spell are the ones measured again, not the many of the usual speed.
struct Disturbance {
    std::size_t chunks = 0, disturbed = 0;  ///< harness runs, and those disturbed
    std::vector<std::string> reasons;
    std::size_t retaken = 0;  ///< chunks measured again (retake), once or more, whatever their last judgement
    /// Items the harness measured again within their chunks, having measured them only while the
    /// host ran slow (harness.hpp), over the chunks as they stand.
    std::size_t slow_span_retaken = 0;

    /// Counts one harness run (a chunk) as the harness judged it.
    void note(const measure::RunConditions& c) {
        m_runs.push_back(c);
        m_retaken.push_back(0);
        judge();
    }
    /// The judgement of chunk `i` (in the order noted) replaced by that of its measurement again.
    void retake(std::size_t i, const measure::RunConditions& c) {
        if (i >= m_runs.size()) return;
        m_runs[i] = c;
        if (!m_retaken[i]) ++retaken;
        m_retaken[i] = 1;
        judge();
    }
    /// Counts the chunks of another run too (the same reference network and runners).
    void add(const Disturbance& other) {
        m_runs.insert(m_runs.end(), other.m_runs.begin(), other.m_runs.end());
        m_retaken.insert(m_retaken.end(), other.m_retaken.begin(), other.m_retaken.end());
        retaken += other.retaken;
        judge();
    }
    /// Lets the chunks of an earlier step of the same build (its whole networks, say) vote on the
    /// speed too, without counting or judging them here: every step then keeps samples of one
    /// speed, rather than each step the speed of its own majority.
    void vote_with(const Disturbance& earlier) {
        m_earlier.insert(m_earlier.end(), earlier.m_earlier.begin(), earlier.m_earlier.end());
        m_earlier.insert(m_earlier.end(), earlier.m_runs.begin(), earlier.m_runs.end());
        judge();
    }
    /// The chunks judged disturbed, in the order noted.
    std::vector<std::size_t> disturbed_chunks() const {
        std::vector<std::size_t> out;
        const auto agreed = agreed_level_ms();
        for (std::size_t i = 0; i < m_runs.size(); ++i)
            if (!reason_of(i, agreed).empty()) out.push_back(i);
        return out;
    }
    /// "N of M chunks ...: first reason", or empty when none was disturbed.
    std::string summary() const {
        if (disturbed == 0) return {};
        return std::to_string(disturbed) + " of " + std::to_string(chunks) +
               " chunks measured while the machine was disturbed" +
               (retaken > 0 ? " (" + std::to_string(retaken) + " measured again)" : std::string()) +
               "; the first: " + reasons.front();
    }

private:
    /// The level most chunks agree with (see the struct's comment), and how many do; 0 and 0 when
    /// no undisturbed chunk measured its reference.
    std::pair<double, std::size_t> agreed_level_ms() const {
        double level = 0;
        std::size_t most = 0;
        // a level is one measurement of a chunk's reference; chunks the harness judged disturbed
        // (other processes, a drift within them) have no vote
        const auto votes = [](const measure::RunConditions& c, double b) { return !c.disturbed && agrees_with(c, b); };
        for (const auto* runs : {&m_runs, &m_earlier})
            for (const auto& base : *runs) {
                if (base.disturbed || !base.reference || !base.reference->known()) continue;
                for (const double b : usual_values(base)) {
                    if (!(b > 0)) continue;
                    std::size_t agree = 0;
                    for (const auto& c : m_runs) agree += votes(c, b);
                    for (const auto& c : m_earlier) agree += votes(c, b);
                    if (agree > most || (agree == most && b < level)) {
                        level = b;
                        most = agree;
                    }
                }
            }
        return {level, most};
    }
    /// The measurements of a chunk's reference at the speed its results were measured at: those
    /// of slow spans whose networks the harness measured again do not count.
    static std::vector<double> usual_values(const measure::RunConditions& c) {
        if (!c.reference) return {};
        return measure::usual_reference_values(*c.reference, c.slow_spans_covered());
    }
    /// Whether every usual measurement of a chunk's known reference lies within its noise bound
    /// of `level_ms`.
    static bool agrees_with(const measure::RunConditions& c, double level_ms) {
        if (!c.reference || !c.reference->known()) return false;
        const auto v = usual_values(c);
        if (v.empty()) return false;
        const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
        const auto& r = *c.reference;
        const double bound = std::max(measure::reference_min_difference, measure::reference_spread_factor * r.spread);
        return *hi / level_ms - 1 <= bound && level_ms / *lo - 1 <= bound;
    }
    /// Why chunk `i` is disturbed; empty when it is not.
    std::string reason_of(std::size_t i, std::pair<double, std::size_t> agreed) const {
        const auto& c = m_runs[i];
        if (c.disturbed) return c.reasons.empty() ? std::string("disturbed") : c.reasons.front();
        const auto [level, agree] = agreed;
        if (level > 0 && c.reference && c.reference->known() && !usual_values(c).empty() && !agrees_with(c, level)) {
            const auto v = usual_values(c);
            const double slowest = *std::max_element(v.begin(), v.end());
            const double fastest = *std::min_element(v.begin(), v.end());
            const bool slower = slowest > level;
            const double off = slower ? slowest : fastest;
            return "the reference network ran " + measure::detail::percent(slower ? off / level - 1 : level / off - 1) +
                   (slower ? " slower" : " faster") + " than in the " + std::to_string(agree) + " of " +
                   std::to_string(m_runs.size() + m_earlier.size()) + " chunks that agree on its speed (" +
                   measure::detail::fixed(off, 4) + " against " + measure::detail::fixed(level, 4) +
                   " ms): the machine ran at another speed for the whole chunk";
        }
        return {};
    }
    void judge() {
        chunks = m_runs.size();
        disturbed = 0;
        slow_span_retaken = 0;
        for (const auto& c : m_runs) slow_span_retaken += c.slow_span_retaken;
        reasons.clear();
        const auto agreed = agreed_level_ms();
        for (std::size_t i = 0; i < m_runs.size(); ++i)
            if (auto r = reason_of(i, agreed); !r.empty()) {
                ++disturbed;
                reasons.push_back(std::move(r));
            }
    }
    std::vector<measure::RunConditions> m_runs;
    std::vector<char> m_retaken;                    ///< per chunk of m_runs: measured again
    std::vector<measure::RunConditions> m_earlier;  ///< chunks of earlier steps: they vote, are not judged
};

/// Where and how a budgeted run measures; kernel sampling and network profiling add their chunk.
struct MeasuringSetup {
    std::vector<std::string> runners;  ///< runner commands (run with /bin/sh -c)
    std::string device;                ///< stored in the store's sidecar
    std::filesystem::path store;       ///< results store (CSV; resumable)
    std::filesystem::path model_dir;   ///< model files; empty: "<store>.models" beside the store
    measure::HarnessOptions harness{};
    measure::PoolOptions pool{};
    std::uint64_t seed = 0;  ///< of the weight values
    int opset = 13;
    double budget_minutes = 0;  ///< 0: no time budget
    std::function<void(const SamplingProgress&)> on_progress;
    /// Seconds since an arbitrary origin; empty: a steady clock. Lets a caller (or a test)
    /// decide what elapsed time means.
    std::function<double()> clock;
    /// The machine's load, which says whether other processes disturbed a measurement; empty:
    /// the harness reads it from the machine (a test plants one).
    measure::Harness::LoadSampler load_sampler;
    /// Measure the disturbed chunks again at the end (up to retake_passes times each), while the
    /// budget lasts (Disturbance): a host that changes speed by itself would otherwise leave a
    /// share of the samples at another speed than the rest.
    bool retake_disturbed = true;
    /// The chunks of the build's earlier steps (Disturbance::vote_with): this run keeps their speed.
    Disturbance earlier_chunks;
};

/// The most times a run measures one disturbed chunk again (MeasuringSetup::retake_disturbed).
inline constexpr int retake_passes = 2;

namespace detail {

/// `Setup` is a MeasuringSetup with a chunk size (KernelSamplingSetup, NetworkProfilingSetup).
template <class Setup>
class BudgetedRun {
public:
    /// Checks the setup; `what` names the run in messages ("kernel sampling").
    /// @throws config_error
    BudgetedRun(const Setup& setup, std::string_view what) : m_setup(setup), m_what(what) {
        if (setup.runners.empty()) raise<config_error>(m_what, ": no runner command");
        if (setup.store.empty()) raise<config_error>(m_what, ": no results store path");
        if (!(setup.budget_minutes >= 0) || !std::isfinite(setup.budget_minutes))
            raise<config_error>(m_what, ": the budget must be a finite number of minutes >= 0, got ",
                                setup.budget_minutes);
        if (setup.chunk < 1) raise<config_error>(m_what, ": the chunk size must be at least 1");
        setup.harness.check();
        disturbance.vote_with(setup.earlier_chunks);
        m_start = now();
    }

    BudgetedRun(const BudgetedRun&) = delete;
    BudgetedRun& operator=(const BudgetedRun&) = delete;
    /// The model directory keeps only what is still to be measured: the reference network goes.
    ~BudgetedRun() {
        std::error_code ec;
        if (!m_reference_model.empty()) std::filesystem::remove(m_reference_model, ec);
    }

    /// Seconds on the setup's clock (or a steady clock).
    double now() const {
        return m_setup.clock ? m_setup.clock()
                             : std::chrono::duration<double>(std::chrono::steady_clock::now() - m_steady_start).count();
    }
    double elapsed() const { return now() - m_start; }

    /// Opens the store and the model directory; `verb` says what to do instead when the store
    /// belongs to another device ("sample"). @throws config_error, io_error, parse_error
    void open_store(std::string_view verb) {
        m_sidecar = measure::sidecar_path(m_setup.store);
        const auto info = checked_store_info(m_setup.store, verb);
        m_store.emplace(m_setup.store);
        m_info = measure::StoreInfo{m_setup.device, m_setup.runners, info ? info->runner_device : std::string(),
                                    m_setup.harness.to_json()};
        measure::write_store_info(m_sidecar, m_info);
        std::error_code ec;
        m_model_dir =
            m_setup.model_dir.empty() ? std::filesystem::path(m_setup.store.string() + ".models") : m_setup.model_dir;
        std::filesystem::create_directories(m_model_dir, ec);
        if (!std::filesystem::is_directory(m_model_dir))
            raise<io_error>(m_what, ": cannot create the model directory '", m_model_dir.string(), "'");
    }
    measure::ResultsStore& store() { return *m_store; }

    /// A second store of the same run at `path` (more measurements of the same items), checked
    /// and described as the first (open_store, which comes first).
    /// @throws config_error, io_error, parse_error
    std::unique_ptr<measure::ResultsStore> open_second_store(const std::filesystem::path& path, std::string_view verb) {
        (void)checked_store_info(path, verb);
        auto store = std::make_unique<measure::ResultsStore>(path);
        m_second_sidecars.push_back(measure::sidecar_path(path));
        measure::write_store_info(m_second_sidecars.back(), m_info);
        return store;
    }
    const std::filesystem::path& model_dir() const { return m_model_dir; }

    SamplingProgress progress;

    /// Updates the time figures of `progress` and hands it to the setup's callback.
    void report() {
        progress.elapsed_seconds = elapsed();
        const auto left = progress.total - progress.done;
        if (progress.measured > 0) {
            progress.seconds_per_sample = progress.elapsed_seconds / double(progress.measured);
            progress.eta_seconds = progress.seconds_per_sample * double(left);
        }
        if (left == 0) progress.eta_seconds = 0;
        if (m_setup.on_progress) m_setup.on_progress(progress);
    }

    /// How many of the `left` items to measure next, at most `cap`; 0 when the budget is spent.
    /// Before anything was measured it is one: the first item tells how long one takes. An item
    /// here takes `item_share` of the time of one measured so far (more than 1: it reserves time
    /// for a later step over the same items).
    std::size_t next_chunk(std::size_t left, std::size_t cap, double item_share = 1) const {
        std::size_t take = std::min(cap, left);
        const double budget = m_setup.budget_minutes * 60.0;
        if (budget <= 0) return take;
        const double spent = elapsed();
        if (spent >= budget) return 0;
        if (progress.measured == 0) return std::min<std::size_t>(take, 1);
        const double per = item_share * spent / double(progress.measured);
        const auto fit = static_cast<std::size_t>(std::floor((budget - spent) / std::max(per, 1e-9)));
        return std::min(take, fit);
    }

    /// The runners and the harness over them, started on first use.
    measure::RunnerPool& pool() {
        start_runners();
        return *m_pool;
    }
    measure::Harness& harness() {
        start_runners();
        return *m_harness;
    }

    /// A harness over the same runners that measures every item again (HarnessOptions::force).
    measure::Harness& harness_afresh() {
        start_runners();
        if (!m_harness_afresh) {
            auto o = m_setup.harness;
            o.force = true;
            m_harness_afresh = std::make_unique<measure::Harness>(*m_pool, o, m_reference);
            if (m_setup.load_sampler) m_harness_afresh->set_load_sampler(m_setup.load_sampler);
        }
        return *m_harness_afresh;
    }

    /// How the harness judged the run's chunks (Disturbance::note after each harness run).
    Disturbance disturbance;

    /// Measures the disturbed chunks once more, in the order noted, while the budget lasts
    /// (MeasuringSetup::retake_disturbed), and those still disturbed then a second time: a slow
    /// spell of the host can outlast one retake. `chunk_items[i]` holds the items of the i-th
    /// chunk noted (empty: not measured again); `measure_again(i, items)` measures chunk i's items
    /// afresh (harness_afresh) and returns that run's conditions, which replace its judgement.
    template <class MeasureAgain>
    void retake_disturbed(const std::vector<std::vector<std::size_t>>& chunk_items, MeasureAgain&& measure_again) {
        if (!m_setup.retake_disturbed) return;
        for (int pass = 0; pass < retake_passes; ++pass)
            for (const auto i : disturbance.disturbed_chunks()) {
                if (i >= chunk_items.size() || chunk_items[i].empty()) continue;
                const auto n = chunk_items[i].size();
                if (next_chunk(n, n) < n) return;  // the budget is spent
                disturbance.retake(i, measure_again(i, chunk_items[i]));
                progress.measured += n;
                report();
            }
    }

    /// Records in the store's sidecar what device the runners said they run on.
    void finish() {
        if (m_pool && m_info.runner_device.empty() && !m_pool->device().empty()) {
            m_info.runner_device = m_pool->device();
            measure::write_store_info(m_sidecar, m_info);
            for (const auto& p : m_second_sidecars) measure::write_store_info(p, m_info);
        }
    }

private:
    /// The sidecar of the store at `path`; refused when the store holds another device's or
    /// other runners' measurements.
    std::optional<measure::StoreInfo> checked_store_info(const std::filesystem::path& path,
                                                         std::string_view verb) const {
        auto info = measure::read_store_info(measure::sidecar_path(path));
        std::error_code ec;
        const bool has_rows = std::filesystem::exists(path, ec) && std::filesystem::file_size(path, ec) > 0;
        if (info && has_rows && (info->device != m_setup.device || info->runners != m_setup.runners))
            raise<config_error>(m_what, ": ", path.string(), " holds measurements of device '", info->device,
                                "' by other runners; ", verb, " this device into another store");
        return info;
    }
    void start_runners() {
        if (m_pool) return;
        if (!m_model_dir.empty()) {
            m_reference_model = m_model_dir / "reference.onnx";
            measure::write_reference_model(m_reference_model);
            m_reference.reference_model = m_reference_model;
            m_reference.reference_key = measure::network_key(measure::reference_graph());
        }
        m_pool = std::make_unique<measure::RunnerPool>(m_setup.runners, m_setup.pool);
        m_harness = std::make_unique<measure::Harness>(*m_pool, m_setup.harness, m_reference);
        if (m_setup.load_sampler) m_harness->set_load_sampler(m_setup.load_sampler);
    }

    const Setup& m_setup;
    std::string m_what;
    std::chrono::steady_clock::time_point m_steady_start = std::chrono::steady_clock::now();
    double m_start = 0;
    std::filesystem::path m_sidecar, m_model_dir, m_reference_model;
    std::vector<std::filesystem::path> m_second_sidecars;
    std::optional<measure::ResultsStore> m_store;
    measure::StoreInfo m_info;
    std::unique_ptr<measure::RunnerPool> m_pool;
    std::unique_ptr<measure::Harness> m_harness, m_harness_afresh;
    measure::ProvenanceOptions m_reference;  ///< the reference network every chunk measures
};

}  // namespace detail
}  // namespace dnncost::device
