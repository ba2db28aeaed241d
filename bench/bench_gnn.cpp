// GNN engine benchmarks: this machine's Eigen SGEMM and bf16 GEMM peaks (1 and 2 threads), the
// core's AVX-512 issue peaks (fp32 FMA, bf16 dot product), forward/backward
// per layer kind on 8 NB201 graphs at width 128, a full HiFi-SAGE training epoch on 100 NB201
// graphs (GFLOP/s and fraction of the SGEMM peak) and batched inference throughput.
#include <benchmark/benchmark.h>

#include <dnncost/estimators/presets.hpp>
#include <dnncost/io/csv.hpp>
#include <dnncost/spaces/nb201.hpp>

#include <sys/resource.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <chrono>
#include <map>
#include <numeric>

using namespace dnncost;
using namespace dnncost::nn;

namespace {
struct Nb201Set {
    std::vector<graph::Graph> graphs;
    std::vector<const graph::Graph*> ptrs;
    std::vector<double> y;
    explicit Nb201Set(int n) {
        Rng rng(11);
        for (int i = 0; i < n; ++i)
            graphs.push_back(nb201::build_graph(nb201::from_index(static_cast<std::int64_t>(rng.below(15625)))));
        for (const auto& g : graphs) {
            ptrs.push_back(&g);
            y.push_back(static_cast<double>(cost::total_cost(g).macs) * 1e-8);
        }
    }
};

// SGEMM GFLOP/s per thread count as measured by BM_SgemmPeak in this run (wall clock), the
// reference of the epoch's fraction-of-peak figure.
std::map<unsigned, double>& sgemm_peak() {
    static std::map<unsigned, double> peak;
    return peak;
}
double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
// CPU seconds of the whole process (all threads): on a shared, loaded machine wall-clock rates
// measure the neighbours too, while GFLOP per CPU-second measures this code (the pool's idle
// workers sleep, so they add no CPU time).
double process_cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}
std::map<unsigned, double>& sgemm_peak_cpu() {
    static std::map<unsigned, double> peak;
    return peak;
}

constexpr const char* no_bf16_unit = "no bf16 unit (AMX or AVX512-BF16) in use: bf16 would be emulated";
// Where this run's bf16 products run, for the labels.
std::string bf16_label() {
    const auto unit = kernels::bf16_unit();
    return unit == kernels::Bf16Unit::emulated ? "bf16 emulated (no bf16 unit)"
                                               : std::string("bf16 on ") + kernels::to_string(unit);
}

void BM_SgemmPeak(benchmark::State& state) {
    const auto threads = static_cast<std::size_t>(state.range(0));
    const Index n = 1536;
    ThreadPool pool(threads);
    const bool bf16 = state.range(1) != 0;
    if (bf16 && !kernels::bf16_in_hardware()) return state.SkipWithError(no_bf16_unit);
    const kernels::PrecisionScope scope(bf16 ? Precision::bf16 : Precision::fp32);
    Mat<float> a = Mat<float>::Random(n, n), b = Mat<float>::Random(n, n), c;
    kernels::gemm<float>(c, a, b, false, &pool);
    const auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = process_cpu_seconds();
    for (auto _ : state) {
        kernels::gemm<float>(c, a, b, false, &pool);
        benchmark::DoNotOptimize(c.data());
    }
    const double gflop = 2.0 * n * n * n * static_cast<double>(state.iterations()) / 1e9;
    if (!bf16) {
        sgemm_peak()[static_cast<unsigned>(threads)] = gflop / seconds_since(t0);
        sgemm_peak_cpu()[static_cast<unsigned>(threads)] = gflop / (process_cpu_seconds() - cpu0);
    }
    state.SetLabel(bf16 ? bf16_label() + " (packing included)" : "fp32");
    state.counters["GFLOP/cpu-s"] = gflop / (process_cpu_seconds() - cpu0);
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * n * n * static_cast<double>(state.iterations()) / 1e9,
                                                   benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SgemmPeak)->ArgsProduct({{1, 2}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// The core's issue rate of one 512-bit instruction on independent accumulators, one thread:
// arg 0 = fp32 FMA (VFMADD, 32 FLOP each), 1 = bf16 dot product (VDPBF16PS, 64 FLOP each). 24
// chains hide the latency, so this is the ceiling any GEMM kernel on that instruction can reach.
// The sum of the 24 chains' lanes, so that none of them is dead code (not _mm512_reduce_add_ps:
// GCC 12 warns inside it).
__attribute__((target("avx512f"))) inline float sum_chains(__m512 (&acc)[24]) {
    for (int i = 1; i < 24; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc[0]);
    return std::accumulate(lanes, lanes + 16, 0.0f);
}
__attribute__((target("avx512f"), noinline)) float fma_chains(long n) {
    __m512 acc[24];
    for (int i = 0; i < 24; ++i) acc[i] = _mm512_set1_ps(1e-3f * static_cast<float>(i));
    __m512 a = _mm512_set1_ps(1.0000001f);
    const __m512 b = _mm512_set1_ps(0.9999999f);
    for (long i = 0; i < n; ++i) {
#pragma GCC unroll 24
        for (int k = 0; k < 24; ++k) acc[k] = _mm512_fmadd_ps(a, acc[k], b);
        __asm__ volatile("" : "+v"(a));
    }
    return sum_chains(acc);
}
__attribute__((target("avx512f,avx512bw,avx512bf16"), noinline)) float dpbf16_chains(long n) {
    __m512 acc[24];
    for (int i = 0; i < 24; ++i) acc[i] = _mm512_set1_ps(1e-3f * static_cast<float>(i));
    __m512i one = _mm512_set1_epi16(0x3f80);  // bf16 1.0
    for (long i = 0; i < n; ++i) {
        const __m512bh x = reinterpret_cast<const __m512bh&>(one);
#pragma GCC unroll 24
        for (int k = 0; k < 24; ++k) acc[k] = _mm512_dpbf16_ps(acc[k], x, x);
        __asm__ volatile("" : "+v"(one));
    }
    return sum_chains(acc);
}
void BM_IssuePeak(benchmark::State& state) {
    const bool bf16 = state.range(0) != 0;
    if (bf16 && !kernels::avx512bf16_available()) return state.SkipWithError("no AVX512-BF16 on this CPU");
    if (!bf16 && !__builtin_cpu_supports("avx512f")) return state.SkipWithError("no AVX-512 on this CPU");
    const long n = 1'000'000;
    for (auto _ : state) benchmark::DoNotOptimize(bf16 ? dpbf16_chains(n) : fma_chains(n));
    state.counters["GFLOP/s"] = benchmark::Counter(
        24.0 * static_cast<double>(n) * (bf16 ? 64.0 : 32.0) * static_cast<double>(state.iterations()) / 1e9,
        benchmark::Counter::kIsRate);
    state.SetLabel(bf16 ? "VDPBF16PS zmm, 1 thread" : "VFMADD zmm fp32, 1 thread");
}
BENCHMARK(BM_IssuePeak)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

// Per-layer forward+backward on a batch of 8 NB201 graphs, 128 features in and out.
enum Kind { sage_mean, sage_max, gcn, gin, edge_conv, mr_conv, pool_smm, lcm };
const char* kind_name(int k) {
    static const char* names[] = {"sage_mean", "sage_max", "gcn", "gin", "edge_conv", "mr_conv", "sum_mean_max", "lcm"};
    return names[k];
}
void BM_Layer(benchmark::State& state) {
    const int kind = static_cast<int>(state.range(0));
    const bool backward = state.range(1) != 0;
    static Nb201Set set(8);
    features::FeatureEncoder enc;
    enc.fit(set.ptrs);
    std::vector<features::EncodedGraph> e;
    for (const auto* g : set.ptrs) {
        auto x = enc.encode(*g);
        x.num_features = 128;
        Rng r(1);
        x.x.resize(static_cast<std::size_t>(x.num_nodes) * 128);
        for (auto& v : x.x) v = static_cast<float>(r.normal());
        e.push_back(std::move(x));
    }
    std::vector<const features::EncodedGraph*> ptrs;
    for (const auto& x : e) ptrs.push_back(&x);
    features::GraphBatch<float> batch(ptrs);
    Rng rng(2);
    ModulePtr<float> m;
    switch (kind) {
        case sage_mean:
            m = std::make_unique<SageConv<float>>(128, 128, rng);
            break;
        case sage_max:
            m = std::make_unique<SageConv<float>>(128, 128, rng, Aggr::max);
            break;
        case gcn:
            m = std::make_unique<GcnConv<float>>(128, 128, rng);
            break;
        case gin:
            m = std::make_unique<GinConv<float>>(128, std::vector<Index>{128, 128}, rng);
            break;
        case edge_conv:
            m = std::make_unique<EdgeConv<float>>(128, 128, rng);
            break;
        case mr_conv:
            m = std::make_unique<MrConv<float>>(128, 128, rng);
            break;
        case pool_smm:
            m = std::make_unique<Pooling<float>>(pool_sum | pool_mean | pool_max);
            break;
        default:
            m = std::make_unique<LcmReadout<float>>(128, 128, rng, true);
            break;
    }
    Context<float> ctx{&batch, false, nullptr, nullptr};
    const Mat<float>& y0 = m->forward(batch.x, ctx);
    Mat<float> dy = Mat<float>::Ones(y0.rows(), y0.cols());
    for (auto _ : state) {
        const Mat<float>& y = m->forward(batch.x, ctx);
        benchmark::DoNotOptimize(y.data());
        if (backward) benchmark::DoNotOptimize(m->backward(dy, ctx).data());
    }
    state.SetLabel(std::string(kind_name(kind)) + (backward ? " fwd+bwd" : " fwd") + ", " +
                   std::to_string(batch.num_nodes()) + " nodes");
}
BENCHMARK(BM_Layer)->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1}})->Unit(benchmark::kMicrosecond);

// One HiFi-SAGE training epoch on 100 NB201 graphs (batch 8).
void BM_HifiSageEpoch(benchmark::State& state) {
    const auto threads = static_cast<unsigned>(state.range(0));
    const bool bf16 = state.range(1) != 0;
    if (bf16 && !kernels::bf16_in_hardware()) return state.SkipWithError(no_bf16_unit);
    static Nb201Set set(100);
    estimators::HiFiSage est;
    est.set_precision(bf16 ? Precision::bf16 : Precision::fp32);
    train::TrainData d{set.ptrs, set.y};
    est.prepare(d, 1);
    const auto x = est.encode(set.ptrs);
    ThreadPool pool(threads);
    Rng rng(3);
    est.train_epoch(x, set.y, rng, &pool);  // warm-up: buffers reach their final shapes
    const auto f0 = kernels::gemm_flops().load();
    const auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = process_cpu_seconds();
    for (auto _ : state) benchmark::DoNotOptimize(est.train_epoch(x, set.y, rng, &pool));
    const double secs = seconds_since(t0), cpu = process_cpu_seconds() - cpu0;
    const double flops = static_cast<double>(kernels::gemm_flops().load() - f0);
    state.counters["GFLOP/s"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsRate);
    state.counters["GFLOP/epoch"] = flops / 1e9 / static_cast<double>(state.iterations());
    if (const auto it = sgemm_peak().find(threads); it != sgemm_peak().end())
        state.counters["of_peak"] = flops / 1e9 / secs / it->second;  // vs this run's fp32 SGEMM peak, same threads
    state.SetLabel(bf16 ? bf16_label() : "fp32");
    state.counters["GFLOP/cpu-s"] = flops / 1e9 / cpu;
    if (const auto it = sgemm_peak_cpu().find(threads); it != sgemm_peak_cpu().end())
        state.counters["of_peak_cpu"] = flops / 1e9 / cpu / it->second;  // the same ratio in CPU time
}
BENCHMARK(BM_HifiSageEpoch)->ArgsProduct({{1, 2}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// Batched inference throughput of HiFi-SAGE's network on 256 NB201 graphs: arg 0 = threads, arg 1 = 1 to
// include the feature encoding (GnnEstimator::predict_mean on operator graphs), 0 for encoded graphs.
void BM_HifiSageInference(benchmark::State& state) {
    const auto threads = static_cast<unsigned>(state.range(0));
    const bool with_encoding = state.range(1) != 0;
    const bool bf16 = state.range(2) != 0, emulated = state.range(2) == 2;  // 2: bf16 without the tile unit
    if (bf16 && !emulated && !kernels::bf16_in_hardware()) return state.SkipWithError(no_bf16_unit);
    struct UnitsAllowed {  // the emulated variant forbids both bf16 units for its own duration only
        bool forbid;
        explicit UnitsAllowed(bool f) : forbid(f) {
            if (forbid) kernels::set_amx_allowed(false), kernels::set_avx512bf16_allowed(false);
        }
        ~UnitsAllowed() {
            if (forbid) kernels::set_amx_allowed(true), kernels::set_avx512bf16_allowed(true);
        }
    } units_guard(emulated);
    static Nb201Set set(256);
    estimators::HiFiSage est;
    est.set_precision(bf16 ? Precision::bf16 : Precision::fp32);
    train::TrainData d{set.ptrs, set.y};
    est.prepare(d, 1);
    ThreadPool pool(threads);
    const auto x = est.encode(set.ptrs, &pool);
    // One epoch moves the head's last layer off zero: the network must run. (An untrained or
    // untrained-kept model predicts through its additive path alone: BM_HifiSageInferenceZeroNetwork.)
    Rng rng(3);
    est.train_epoch(x, set.y, rng, &pool);
    if (est.model().network_is_zero()) return state.SkipWithError("the network's output is still identically zero");
    const auto f0 = kernels::gemm_flops().load();
    const double cpu0 = process_cpu_seconds();
    for (auto _ : state) {
        if (with_encoding)
            benchmark::DoNotOptimize(est.predict_mean(set.ptrs, threads).data());
        else
            benchmark::DoNotOptimize(est.predict_encoded(x, &pool).data());
    }
    const double graphs = static_cast<double>(x.size() * state.iterations());
    state.counters["graphs/s"] = benchmark::Counter(graphs, benchmark::Counter::kIsRate);
    state.counters["graphs/cpu-s"] = graphs / (process_cpu_seconds() - cpu0);
    state.counters["MFLOP/graph"] = static_cast<double>(kernels::gemm_flops().load() - f0) / 1e6 / graphs;
    state.SetLabel(std::string(with_encoding ? "encoding included" : "encoding excluded") +
                   (emulated ? ", bf16 emulated (no bf16 unit)"
                    : bf16   ? ", " + bf16_label()
                             : ", fp32"));
}
BENCHMARK(BM_HifiSageInference)
    ->ArgsProduct({{1, 2}, {0, 1}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(1.0);

// The same 256 graphs through a model whose network output is identically zero (before
// training, or when fit keeps the untrained network): predictions are the additive path alone
// (GnnEstimator::predict_additive_path). Arg: 1 to include the feature encoding.
void BM_HifiSageInferenceZeroNetwork(benchmark::State& state) {
    const bool with_encoding = state.range(0) != 0;
    static Nb201Set set(256);
    estimators::HiFiSage est;
    train::TrainData d{set.ptrs, set.y};
    est.prepare(d, 1);
    if (!est.model().network_is_zero()) return state.SkipWithError("the untrained network's output should be zero");
    const auto x = est.encode(set.ptrs);
    for (auto _ : state) {
        if (with_encoding)
            benchmark::DoNotOptimize(est.predict_mean(set.ptrs, 1).data());
        else
            benchmark::DoNotOptimize(est.predict_encoded(x, nullptr).data());
    }
    state.counters["graphs/s"] =
        benchmark::Counter(static_cast<double>(x.size() * state.iterations()), benchmark::Counter::kIsRate);
    state.SetLabel(std::string(with_encoding ? "encoding included" : "encoding excluded") +
                   ", 1 thread, additive path only");
}
BENCHMARK(BM_HifiSageInferenceZeroNetwork)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

// A full HiFi-SAGE training with early stopping (the preset's patience and epoch limit) on 100
// NB201 architectures, validated on 100 others, against a measured device latency column of
// data/nb201/latency_ms.csv.
struct LatencyData {
    std::vector<graph::Graph> graphs;
    train::TrainData train, val;
    std::string device;
    explicit LatencyData(const std::string& column) : device(column) {
        const auto table = io::read_csv(std::string(DNNCOST_DATA_DIR) + "/nb201/latency_ms.csv");
        const auto col = table.column(column), arch = table.column("arch");
        Rng rng(2024);
        std::vector<std::size_t> idx(table.rows.size());
        std::iota(idx.begin(), idx.end(), 0);
        rng.shuffle(idx.begin(), idx.end());
        graphs.reserve(200);
        for (std::size_t i = 0; i < 200; ++i) graphs.push_back(nb201::build_graph(table.rows[idx[i]][arch]));
        for (std::size_t i = 0; i < 200; ++i) {
            auto& part = i < 100 ? train : val;
            part.graphs.push_back(&graphs[i]);
            part.targets.push_back(std::stod(table.rows[idx[i]][col]));
        }
    }
};
void BM_HifiSageFullTraining(benchmark::State& state) {
    static LatencyData data("gold_6240");
    estimators::FitResult r;
    for (auto _ : state) {
        estimators::HiFiSage est;
        est.set_options({.precision = state.range(1) != 0 ? Precision::bf16 : Precision::fp32});
        estimators::FitOptions o;
        o.seed = 7;
        o.threads = static_cast<unsigned>(state.range(0));
        r = est.fit(data.train, data.val, o);
    }
    state.counters["epochs"] = r.epochs;
    state.counters["s/epoch"] = r.seconds / r.epochs;
    state.counters["best_val"] = r.best_validation;
    state.SetLabel(data.device + ", 100 train + 100 validation graphs" +
                   (state.range(1) ? ", " + bf16_label() : std::string(", fp32")));
}
BENCHMARK(BM_HifiSageFullTraining)
    ->ArgsProduct({{1, 2}, {0, 1}})
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

// One Adam step over HiFi-SAGE's trainable parameters (13 per epoch at batch size 8); arg:
// threads (the update runs in blocks of 16,384 elements across the pool).
void BM_AdamStep(benchmark::State& state) {
    static Nb201Set set(8);
    estimators::HiFiSage est;
    est.prepare(train::TrainData{set.ptrs, set.y}, 1);
    auto params = est.model().trainable_parameters();
    std::size_t n = 0;
    Rng rng(4);
    for (auto* p : params) {
        n += static_cast<std::size_t>(p->value.size());
        for (Index i = 0; i < p->grad.size(); ++i) p->grad.data()[i] = static_cast<float>(rng.normal());
    }
    optim::Adam<float> opt(params);
    ThreadPool pool(static_cast<unsigned>(state.range(0)));
    for (auto _ : state) opt.step(&pool);
    state.counters["parameters"] = static_cast<double>(n);
}
BENCHMARK(BM_AdamStep)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Feature encoding cost per graph (operator graph -> node features incl. random walks).
void BM_Encode(benchmark::State& state) {
    static Nb201Set set(16);
    features::FeatureEncoder enc(estimators::HiFiSage::encode_options());
    enc.fit(set.ptrs);
    std::size_t i = 0;
    for (auto _ : state) benchmark::DoNotOptimize(enc.encode(set.graphs[i++ % set.graphs.size()]).x.data());
}
BENCHMARK(BM_Encode)->Unit(benchmark::kMicrosecond);
}  // namespace

BENCHMARK_MAIN();
