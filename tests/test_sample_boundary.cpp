// The sample-boundary correction of the device model: planted per-byte rates recovered from
// networks, the floor that keeps every kernel priced, and bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/device/sample_boundary.hpp>

using namespace dnncost;
using device::BoundaryKernel;
using device::BoundaryNetwork;
using device::SampleBoundaryCost;

namespace {
/// Networks of 5-60 kernels whose measured latency follows the planted rates and scale exactly:
/// small kernels with large outputs (the edge dominates) and large ones with small outputs.
std::vector<BoundaryNetwork> planted(const SampleBoundaryCost& c, double scale, int count, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<BoundaryNetwork> nets;
    for (int i = 0; i < count; ++i) {
        BoundaryNetwork n;
        n.overhead_ms = 0.02;
        const int kernels = 5 + static_cast<int>(rng.uniform() * 55);
        const double size = std::pow(10.0, rng.uniform() * 3);  // networks from small to 1,000x larger
        for (int k = 0; k < kernels; ++k) {
            BoundaryKernel b;
            b.output_bytes = size * 4096 * (0.5 + rng.uniform());
            b.sample_ms = 1e-3 + b.output_bytes / (1024.0 * 1024.0) * (0.05 + 2 * rng.uniform());
            b.reorder_bytes = rng.uniform() < 0.6 ? 2 * b.output_bytes : 0.0;
            n.kernels.push_back(b);
        }
        double sum = n.overhead_ms;
        for (const auto& k : n.kernels) sum += c.in_network_ms(k.sample_ms, k.output_bytes, k.reorder_bytes);
        n.measured_ms = scale * sum;
        nets.push_back(n);
    }
    return nets;
}
}  // namespace

TEST_CASE("sample boundary: a kernel loses its edge bytes' cost, never more than 90 % of its time") {
    const SampleBoundaryCost c{0, 0.1, 0.05};
    // 1 MiB out, 2 MiB reordered: 0.1 + 0.1 ms of edge off 1 ms
    CHECK(c.in_network_ms(1.0, 1024 * 1024, 2 * 1024 * 1024) == doctest::Approx(0.8));
    CHECK(SampleBoundaryCost{0.01, 0, 0}.in_network_ms(1.0, 1e9, 1e9) == doctest::Approx(0.99));
    // a kernel whose whole sample was edge keeps a tenth
    CHECK(c.in_network_ms(0.05, 1024 * 1024, 0) == doctest::Approx(0.005));
    CHECK(SampleBoundaryCost{}.in_network_ms(0.3, 1e9, 1e9) == 0.3);
    CHECK(SampleBoundaryCost{}.is_zero());
    CHECK_FALSE(c.is_zero());
}

TEST_CASE("sample boundary: a kernel beyond the bounds loses what a kernel at them does") {
    SampleBoundaryCost c{0, 0.1, 0.05};
    c.max_output_mb = 2;
    c.max_reorder_mb = 3;
    constexpr double mib = 1024 * 1024;
    // inside the bounds as without them: 1 MiB out, 2 MiB reordered, 0.2 ms off
    CHECK(c.in_network_ms(1.0, mib, 2 * mib) == doctest::Approx(0.8));
    // 8 MiB out, 16 MiB reordered: charged 2 and 3 MiB, 0.1 * 2 + 0.05 * 3 = 0.35 ms off
    CHECK(c.in_network_ms(10.0, 8 * mib, 16 * mib) == doctest::Approx(9.65));
    CHECK(c.in_network_ms(10.0, 8 * mib, 16 * mib) == doctest::Approx(c.in_network_ms(10.0, 2 * mib, 3 * mib)));
    // unbounded (a model written before the bounds): the rates apply to every byte
    CHECK(SampleBoundaryCost{0, 0.1, 0.05}.in_network_ms(10.0, 8 * mib, 16 * mib) == doctest::Approx(8.4));
}

TEST_CASE("sample boundary: the fit bounds the bytes at the fitted networks' largest kernel, pricing them as before") {
    const SampleBoundaryCost truth{0.002, 0.2, 0.08};
    const auto nets = planted(truth, 1.0, 30, 5);
    double most_out = 0, most_reorder = 0;
    for (const auto& n : nets)
        for (const auto& k : n.kernels) {
            most_out = std::max(most_out, k.output_bytes / (1024.0 * 1024.0));
            most_reorder = std::max(most_reorder, k.reorder_bytes / (1024.0 * 1024.0));
        }
    for (const auto level : {device::BoundaryScale::free, device::BoundaryScale::one}) {
        const auto fit = device::fit_sample_boundary(nets, level);
        CHECK(fit.cost.max_output_mb == doctest::Approx(most_out));
        CHECK(fit.cost.max_reorder_mb == doctest::Approx(most_reorder));
        // the networks fitted are priced as by the unbounded rates
        auto unbounded = fit.cost;
        unbounded.max_output_mb = unbounded.max_reorder_mb = std::numeric_limits<double>::infinity();
        CHECK(device::detail::boundary_log_rms(nets, fit.cost, fit.scale) ==
              device::detail::boundary_log_rms(nets, unbounded, fit.scale));
        CHECK(fit.rms_log_fitted == doctest::Approx(device::detail::boundary_log_rms(nets, fit.cost, fit.scale)));
    }
}

TEST_CASE("sample boundary: planted rates and scale are recovered from whole networks") {
    const SampleBoundaryCost truth{0.002, 0.2, 0.08};
    const auto nets = planted(truth, 1.3, 60, 11);
    const auto fit = device::fit_sample_boundary(nets, device::BoundaryScale::free);
    CHECK(fit.cost.ms_per_kernel == doctest::Approx(truth.ms_per_kernel).epsilon(0.02));
    CHECK(fit.cost.ms_per_output_mb == doctest::Approx(truth.ms_per_output_mb).epsilon(0.02));
    CHECK(fit.cost.ms_per_reorder_mb == doctest::Approx(truth.ms_per_reorder_mb).epsilon(0.02));
    CHECK(fit.scale == doctest::Approx(1.3).epsilon(0.01));
    CHECK(fit.rms_log_fitted < 1e-3);
    CHECK(fit.rms_log_zero > 0.02);  // without the correction the networks disagree with the sum
}

TEST_CASE("sample boundary: networks that are their kernels' sum keep rates near zero") {
    const auto nets = planted({}, 0.7, 40, 3);
    const auto fit = device::fit_sample_boundary(nets, device::BoundaryScale::free);
    CHECK(fit.cost.ms_per_kernel < 1e-5);
    CHECK(fit.cost.ms_per_output_mb < 1e-3);
    CHECK(fit.cost.ms_per_reorder_mb < 1e-3);
    CHECK(fit.scale == doctest::Approx(0.7).epsilon(1e-3));
    CHECK(fit.rms_log_fitted <= fit.rms_log_zero + 1e-12);
}

TEST_CASE("sample boundary without a scale: planted rates recovered, and a level the rates cannot reach left alone") {
    const SampleBoundaryCost truth{0.002, 0.2, 0.08};
    const auto fit = device::fit_sample_boundary(planted(truth, 1.0, 60, 11), device::BoundaryScale::one);
    CHECK(fit.cost.ms_per_kernel == doctest::Approx(truth.ms_per_kernel).epsilon(0.02));
    CHECK(fit.cost.ms_per_output_mb == doctest::Approx(truth.ms_per_output_mb).epsilon(0.02));
    CHECK(fit.cost.ms_per_reorder_mb == doctest::Approx(truth.ms_per_reorder_mb).epsilon(0.02));
    CHECK(fit.scale == 1.0);
    CHECK(fit.rms_log_fitted < 1e-3);
    // networks 1.2x their kernels' sum: the rates only take time off, so none helps, and no scale
    // is made up from them (the free fit takes the level as its scale)
    const auto slow = planted({}, 1.2, 40, 3);
    const auto one = device::fit_sample_boundary(slow, device::BoundaryScale::one);
    CHECK(one.cost.is_zero());
    CHECK(one.scale == 1.0);
    CHECK(one.rms_log_fitted == doctest::Approx(std::log(1.2)));
    CHECK(one.rms_log_zero == doctest::Approx(std::log(1.2)));
    CHECK(device::fit_sample_boundary(slow, device::BoundaryScale::free).scale == doctest::Approx(1.2).epsilon(1e-3));
}

TEST_CASE("sample boundary, scale alone: the level of networks 0.9x their kernels' sum, no rates, even where rates would fit") {
    // networks at a level of their own, and networks whose edges rates would take off: the scale
    // is exp(mean log(measured / sum)) either way, and no time comes off by output size
    const auto level = device::fit_sample_boundary(planted({}, 0.9, 40, 3), device::BoundaryScale::alone);
    CHECK(level.cost.is_zero());
    CHECK(level.scale == doctest::Approx(0.9).epsilon(1e-9));
    CHECK(level.rms_log_zero == doctest::Approx(-std::log(0.9)));
    CHECK(level.rms_log_fitted < 1e-9);
    const auto edged = planted({0.002, 0.2, 0.08}, 1.0, 60, 11);
    const auto alone = device::fit_sample_boundary(edged, device::BoundaryScale::alone);
    CHECK(alone.cost.is_zero());
    double mean = 0;
    for (const auto& n : edged) {
        double sum = n.overhead_ms;
        for (const auto& k : n.kernels) sum += k.sample_ms;
        mean += std::log(n.measured_ms / sum) / static_cast<double>(edged.size());
    }
    CHECK(alone.scale == doctest::Approx(std::exp(mean)).epsilon(1e-12));
    CHECK(alone.rms_log_fitted <= alone.rms_log_zero);
    CHECK_THROWS_AS(device::fit_sample_boundary(std::span(edged).first(2), device::BoundaryScale::alone),
                    config_error);
}

TEST_CASE("sample boundary: too few networks, empty networks and bad figures are errors naming them") {
    auto nets = planted({0, 0.1, 0.1}, 1.0, 5, 1);
    CHECK_THROWS_AS(device::fit_sample_boundary(std::span(nets).first(2), device::BoundaryScale::one), config_error);
    auto bad = nets;
    bad[2].measured_ms = std::nan("");
    CHECK_THROWS_WITH_AS(device::fit_sample_boundary(bad, device::BoundaryScale::one), doctest::Contains("network 3"),
                         config_error);
    bad = nets;
    bad[1].kernels.clear();
    CHECK_THROWS_WITH_AS(device::fit_sample_boundary(bad, device::BoundaryScale::one),
                         doctest::Contains("network 2 has no kernels"), config_error);
    bad = nets;
    bad[4].kernels[0].sample_ms = -1;
    CHECK_THROWS_WITH_AS(device::fit_sample_boundary(bad, device::BoundaryScale::one), doctest::Contains("network 5"),
                         config_error);
}
