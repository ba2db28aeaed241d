#pragma once
/// @file device_model_impl.hpp
/// The definitions of device_model.hpp's DeviceModel: compiled once into dnncost::compiled in
/// compiled mode (core/config.hpp), included by device_model.hpp in header-only mode.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <Eigen/Cholesky>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/core/robust_statistics.hpp>
#include <dnncost/cost/source.hpp>
#include <dnncost/device/device_model.hpp>
#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/device/kernel_batches.hpp>
#include <dnncost/device/kernel_features.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_kind.hpp>
#include <dnncost/device/kernel_kind_table.hpp>
#include <dnncost/device/kernel_graph_sample.hpp>
#include <dnncost/device/residual_slot.hpp>
#include <dnncost/device/kind_spec.hpp>
#include <dnncost/device/sample_boundary.hpp>
#include <dnncost/device/tabular_choice.hpp>
#include <dnncost/graph/flat_view.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/serialize.hpp>

namespace dnncost::device {

DNNCOST_FUNC DeviceModel DeviceModel::build(FusionRules rules, std::span<const KernelMeasurement> samples,
                                            double run_overhead_ms, const DeviceModelOptions& options) {
    rules.check();
    if (samples.empty()) raise<config_error>("device model: no kernel samples");
    if (!(std::isfinite(run_overhead_ms) && run_overhead_ms >= 0))
        raise<config_error>("device model: run overhead ", run_overhead_ms, " ms is not a finite value >= 0");
    const auto& names = kernel_feature_names();
    std::map<std::string, std::vector<std::size_t>> by_kind;
    for (std::size_t i = 0; i < samples.size(); ++i) {
        const auto& s = samples[i];
        if (s.features.size() != names.size())
            raise<config_error>("device model: sample ", i, " (", s.kind, ") has ", s.features.size(),
                                " features, expected ", names.size());
        if (!(std::isfinite(s.latency_ms) && s.latency_ms > 0))
            raise<config_error>("device model: sample ", i, " (", s.kind, ") latency ", s.latency_ms,
                                " ms is not finite and positive");
        by_kind[s.kind].push_back(i);
    }
    DeviceModel m;
    m.m_rules = std::move(rules);
    m.m_run_overhead_ms = run_overhead_ms;
    // the rows each regressor learns from: its kind's, or its whole family's
    std::map<std::string, std::vector<std::size_t>> groups;
    for (const auto& [k, rows] : by_kind) {
        const auto group = options.family_regressors ? std::string(KindSpec::anchor_of(k)) : k;
        auto& g = groups[group];
        g.insert(g.end(), rows.begin(), rows.end());
    }
    for (const auto& [k, rows] : by_kind) {
        KernelKindModel km;
        km.samples = static_cast<std::int64_t>(rows.size());
        const auto group = options.family_regressors ? std::string(KindSpec::anchor_of(k)) : k;
        if (group != k && static_cast<std::int64_t>(groups[group].size()) >= options.min_samples)
            km.pooled_into = group;
        m.m_kinds.emplace(k, std::move(km));
    }
    auto candidates = select_candidates(default_tabular_candidates(options.seed), options.regressors);
    if (options.roofline_base) candidates = roofline_candidates(std::move(candidates));
    for (const auto& [k, rows] : groups) {
        if (static_cast<std::int64_t>(rows.size()) < options.min_samples) continue;
        auto& km = m.m_kinds[k];  // a family none of whose samples ran unfused gets its entry here
        Mat<double> x(static_cast<Index>(rows.size()), static_cast<Index>(names.size()));
        std::vector<double> y;
        std::vector<std::string> networks;
        for (std::size_t r = 0; r < rows.size(); ++r) {
            const auto& s = samples[rows[r]];
            for (std::size_t j = 0; j < names.size(); ++j)
                x(static_cast<Index>(r), static_cast<Index>(j)) = s.features[j];
            y.push_back(s.in_context ? s.latency_ms : kernel_time(s.latency_ms, run_overhead_ms));
            networks.push_back(s.network);
        }
        // a network's kernels share its shapes and its run: held out with their network, they
        // score a candidate as the model is used, on networks it has not seen
        auto choice = choose_tabular_regressor(x, y, names, candidates, options.choice, networks);
        km.regressor = std::move(choice.model);
        km.chosen = std::move(choice.chosen);
        km.scores = std::move(choice.scores);
        km.held_out = choice.held_out_rows;
        km.beyond = choice.beyond_rows;
    }
    if (m.priced_kinds().empty())
        raise<config_error>("device model: no kernel kind has ", options.min_samples, " samples; measure more kernels");
    return m;
}

DNNCOST_FUNC estimators::FitResult DeviceModel::fit(const train::TrainData& train, const train::TrainData& validation,
                                                    const estimators::FitOptions& options) {
    if (!detail::device_model_fitting)
        raise<config_error>(
            "fitting a device model needs its training: include "
            "<dnncost/device/device_model_training.hpp> (header-only mode) or link dnncost::compiled");
    return detail::device_model_fitting(*this, train, validation, options);
}

DNNCOST_FUNC std::string DeviceModel::serialize() const {
    io::BinaryWriter w;
    w.put_u32(payload_version);
    w.put_string(m_rules.to_text());
    w.put_f64(m_run_overhead_ms);
    w.put_f64(m_scale);
    w.put_f64(m_boundary.ms_per_kernel);
    w.put_f64(m_boundary.ms_per_output_mb);
    w.put_f64(m_boundary.ms_per_reorder_mb);
    w.put_u32(m_calibration_shots);
    w.put_string(m_build_info);
    w.put_u64(m_kinds.size());
    for (const auto& [k, km] : m_kinds) {
        w.put_string(k);
        w.put_i64(km.samples);
        w.put_i64(km.held_out);
        w.put_string(km.chosen);
        w.put_u64(km.scores.size());
        for (const auto& s : km.scores) {
            w.put_string(s.name);
            w.put_f64(s.mape);
            w.put_f64(s.within_10);
        }
        w.put_string(km.pooled_into);
        w.put_bool(km.regressor != nullptr);
        if (km.regressor) w.put_string(km.regressor->save());
    }
    m_residual.save(w);
    w.put_u64(m_family_scale.size());
    for (const auto& [f, x] : m_family_scale) {
        w.put_string(f);
        w.put_f64(x);
    }
    // version 6: each kind's beyond test, last, so that the records before keep their layout
    for (const auto& [k, km] : m_kinds) {
        w.put_i64(km.beyond);
        for (const auto& s : km.scores) {
            w.put_bool(s.beyond_mape.has_value());
            if (s.beyond_mape) w.put_f64(*s.beyond_mape);
        }
    }
    // version 7
    w.put_f64(m_intensity_factor.slope);
    w.put_f64(m_intensity_factor.low);
    w.put_f64(m_intensity_factor.high);
    // version 8: the sample boundary's bounds on a kernel's bytes, each present when finite
    for (const double bound : {m_boundary.max_output_mb, m_boundary.max_reorder_mb}) {
        w.put_bool(std::isfinite(bound));
        if (std::isfinite(bound)) w.put_f64(bound);
    }
    return io::write_container(kind, io::fnv1a64("device-model"), w.bytes());
}

DNNCOST_FUNC std::unique_ptr<DeviceModel> DeviceModel::deserialize(std::string_view bytes, std::string_view source) {
    const auto c = io::read_container(bytes, kind, source);
    if (c.config_hash != io::fnv1a64("device-model"))
        raise<parse_error>(source, ": device model written by an incompatible configuration (hash mismatch)");
    io::BinaryReader r(c.payload, std::string(source));
    const auto version = r.get_u32("payload version");
    if (version < 1 || version > payload_version)
        r.fail("device model payload version ", version, " (this build reads 1 to ", payload_version, ")");
    auto m = std::make_unique<DeviceModel>();
    try {
        m->m_rules = FusionRules::parse(r.get_string("fusion rules"), std::string(source) + " (fusion rules)");
    } catch (const config_error& e) {
        r.fail(e.what());
    }
    m->m_run_overhead_ms = r.get_finite_f64("run overhead");
    m->m_scale = r.get_finite_f64("calibration factor");
    if (!(m->m_run_overhead_ms >= 0 && m->m_scale > 0 && m->m_scale < 1e6))
        r.fail("run overhead ", m->m_run_overhead_ms, " ms or calibration factor ", m->m_scale, " out of range");
    if (version >= 2) {
        auto& b = m->m_boundary;
        b.ms_per_kernel = r.get_finite_f64("sample boundary per kernel");
        b.ms_per_output_mb = r.get_finite_f64("sample boundary per output MB");
        b.ms_per_reorder_mb = r.get_finite_f64("sample boundary per reordered MB");
        if (!(b.ms_per_kernel >= 0 && b.ms_per_output_mb >= 0 && b.ms_per_reorder_mb >= 0 && b.ms_per_kernel < 1e3 &&
              b.ms_per_output_mb < 1e3 && b.ms_per_reorder_mb < 1e3))
            r.fail("sample boundary rates ", b.ms_per_kernel, ", ", b.ms_per_output_mb, ", ", b.ms_per_reorder_mb,
                   " out of range");
    }
    m->m_calibration_shots = r.get_u32("calibration shots");
    m->m_build_info = r.get_string("build information");
    const auto n = r.get_u64("kernel kinds");
    if (n > 4096) r.fail(n, " kernel kinds");
    for (std::uint64_t i = 0; i < n; ++i) {
        auto k = r.get_string("kind");
        KernelKindModel km;
        km.samples = r.get_i64("samples");
        km.held_out = r.get_i64("held-out samples");
        km.chosen = r.get_string("chosen regressor");
        const auto ns = r.get_u64("scores");
        if (ns > 16) r.fail(ns, " regressor scores of kind '", k, "'");
        for (std::uint64_t s = 0; s < ns; ++s) {
            TabularScore sc;
            sc.name = r.get_string("score name");
            sc.mape = r.get_finite_f64("held-out MAPE");
            sc.within_10 = r.get_finite_f64("held-out within 10 %");
            km.scores.push_back(std::move(sc));
        }
        if (version >= 3) km.pooled_into = r.get_string("family regressor");
        if (r.get_bool("has regressor"))
            km.regressor =
                load_tabular_regressor(r.get_string("regressor"), std::string(source) + " (kernel kind " + k + ")");
        m->m_kinds.emplace(std::move(k), std::move(km));
    }
    m->m_residual = ResidualSlot::load(r);
    if (version >= 4) {
        const auto nf = r.get_u64("family factors");
        if (nf > 256) r.fail(nf, " family factors");
        for (std::uint64_t i = 0; i < nf; ++i) {
            auto f = r.get_string("family");
            const double x = r.get_finite_f64("family factor");
            if (!(x > 0 && x < 1e6)) r.fail("family factor ", x, " of '", f, "' out of range");
            m->m_family_scale.emplace(std::move(f), x);
        }
    }
    if (version >= 6)
        for (auto& [k, km] : m->m_kinds) {
            km.beyond = r.get_i64("beyond-test samples");
            if (km.beyond < 0) r.fail("beyond-test samples ", km.beyond, " of kind '", k, "'");
            for (auto& sc : km.scores)
                if (r.get_bool("has beyond MAPE")) sc.beyond_mape = r.get_finite_f64("beyond MAPE");
        }
    if (version >= 7) {
        auto& z = m->m_intensity_factor;
        z.slope = r.get_finite_f64("intensity slope");
        z.low = r.get_finite_f64("intensity span low");
        z.high = r.get_finite_f64("intensity span high");
        if (!z.valid())
            r.fail("intensity factor slope ", z.slope, " over ", z.low, " to ", z.high,
                   " FLOPs/byte out of range (|slope| <= ", KernelIntensityFactor::max_slope,
                   ", 0 < low <= high < 1e9)");
    }
    if (version >= 8)
        for (double* bound : {&m->m_boundary.max_output_mb, &m->m_boundary.max_reorder_mb})
            if (r.get_bool("sample boundary bound present")) {
                *bound = r.get_finite_f64("sample boundary bound, MB");
                if (!(*bound >= 0)) r.fail("sample boundary bound of ", *bound, " MB is negative");
            }
    r.expect_end("device model");
    if (m->priced_kinds().empty()) r.fail("device model without any kernel regressor");
    return m;
}

DNNCOST_FUNC std::vector<DevicePrice> DeviceModel::price_networks(std::span<const graph::Graph* const> graphs) const {
    std::vector<DevicePrice> out;
    (void)priced(graphs, &out);
    return out;
}

namespace detail {
/// The error being handled, its message after the network it came from; of the same type for
/// the errors a price raises (shape, config, and rule parse errors), of the base type otherwise.
[[noreturn]] inline void raise_in_network(std::size_t index, const std::string& name) {
    const auto where =
        name.empty() ? concat("network ", index, ": ") : concat("network ", index, " ('", printable(name), "'): ");
    try {
        throw;
    } catch (const shape_error& e) {
        throw shape_error(where + e.what());
    } catch (const config_error& e) {
        throw config_error(where + e.what());
    } catch (const parse_error& e) {
        throw parse_error(where + e.what());
    } catch (const error& e) {
        throw error(where + e.what());
    }
}

/// The shots as calibrate() fits them: per network the run overhead and each family's kernel
/// time at unit factors, and the measured latency.
struct CalibrationShots {
    std::vector<double> overhead, measured;
    Mat<double> family_ms;  ///< network x family
    /// Kernel by kernel, network i's at [start[i], start[i + 1]): its price at unit factors, its
    /// FLOPs per byte moved, and its family.
    std::vector<double> kernel_ms, kernel_intensity;
    std::vector<std::uint16_t> kernel_family;
    std::vector<std::size_t> start{0};
    /// The span of intensities an intensity factor moves over (its slope unused here).
    KernelIntensityFactor span;
    /// Every profiled kernel: its network, family, price at unit factors, intensity and profiled
    /// time.
    struct ProfiledPrice {
        std::size_t network;
        std::uint16_t family;
        double price, intensity, ms;
    };
    std::vector<ProfiledPrice> profiled;
};

/// theta: log g, log s_f per family, then the intensity slope.
inline KernelIntensityFactor intensity_factor_of(const CalibrationShots& s, const std::vector<double>& theta) {
    auto z = s.span;
    z.slope = theta.back();
    return z;
}

/// A shot's latency at global factor exp(theta[0]), family factors exp(theta[f + 1]) and
/// intensity slope theta.back(), without the global factor; with `d_slope`, its derivative in the slope.
inline double family_scaled_ms(const CalibrationShots& s, std::size_t i, const std::vector<double>& theta,
                               double* d_slope = nullptr) {
    double v = s.overhead[i];
    if (d_slope) *d_slope = 0;
    if (theta.back() == 0 && !d_slope) {
        for (Index f = 0; f < s.family_ms.cols(); ++f)
            v += std::exp(theta[static_cast<std::size_t>(f) + 1]) * s.family_ms(static_cast<Index>(i), f);
        return v;
    }
    const auto z = intensity_factor_of(s, theta);
    for (std::size_t k = s.start[i]; k < s.start[i + 1]; ++k) {
        const double x = std::exp(theta[s.kernel_family[k] + 1u]) * s.kernel_ms[k] * z(s.kernel_intensity[k]);
        v += x;
        if (d_slope) *d_slope += x * std::log(std::clamp(s.kernel_intensity[k], z.low, z.high) / z.high);
    }
    return v;
}

/// Log-space least squares for the global factor g and either family factors s_f or, with
/// `fit_slope`, the intensity slope b (u: a kernel's intensity, clamped to the span, over its top):
///   sum_i (log(g (O_i + sum_f s_f P_if)) - log m_i)^2 + penalty * sum_f (log s_f)^2, or
///   sum_i (log(g (O_i + sum_k P_k u_k^b)) - log m_i)^2
/// over the shots in `use`, the families flagged in `free` only (the rest stay at 1; none for an
/// infinite penalty), by damped Gauss-Newton from the median ratio. No free factor: the median
/// ratio alone. Returns log g, log s_f per family, b.
inline std::vector<double> fit_calibration(const CalibrationShots& s, const std::vector<std::size_t>& use,
                                           const std::vector<bool>& free, double penalty, bool fit_slope = false) {
    const auto nf = static_cast<std::size_t>(s.family_ms.cols());
    std::vector<double> theta(nf + 2, 0.0);
    const auto pred_log = [&](std::size_t i, const std::vector<double>& t) {
        return t[0] + std::log(std::max(family_scaled_ms(s, i, t), 1e-300));
    };
    std::vector<double> lr;
    for (std::size_t i : use) lr.push_back(std::log(s.measured[i]) - pred_log(i, theta));
    const auto n = lr.size();
    theta[0] = median(lr);
    std::vector<std::size_t> vars;  // indices into theta of the free factors
    if (std::isfinite(penalty) && !fit_slope)
        for (std::size_t f = 0; f < nf; ++f)
            if (free[f]) vars.push_back(f + 1);
    const std::size_t slope = nf + 1;
    if (fit_slope) vars.push_back(slope);
    if (vars.empty() || n < 3) return theta;
    const auto penalised = [&](std::size_t v) { return v != slope; };
    const auto loss = [&](const std::vector<double>& t) {
        double l = 0;
        for (std::size_t i : use) l += std::pow(pred_log(i, t) - std::log(s.measured[i]), 2);
        for (std::size_t v : vars)
            if (penalised(v)) l += penalty * t[v] * t[v];
        return l;
    };
    const auto m = static_cast<Index>(vars.size() + 1);
    double current = loss(theta);
    for (int iter = 0; iter < 50; ++iter) {
        Mat<double> jtj = Mat<double>::Zero(m, m);
        Eigen::VectorXd jtr = Eigen::VectorXd::Zero(m);
        for (std::size_t i : use) {
            double dv_slope = 0;
            const double v = family_scaled_ms(s, i, theta, fit_slope ? &dv_slope : nullptr);
            Eigen::VectorXd j(m);
            j(0) = 1;
            for (std::size_t k = 0; k < vars.size(); ++k) {
                const auto at = static_cast<Index>(k + 1);
                if (vars[k] == slope) {
                    j(at) = dv_slope / v;
                    continue;
                }
                j(at) =
                    std::exp(theta[vars[k]]) * s.family_ms(static_cast<Index>(i), static_cast<Index>(vars[k] - 1)) / v;
            }
            const double r = theta[0] + std::log(v) - std::log(s.measured[i]);
            jtj += j * j.transpose();
            jtr += j * r;
        }
        for (std::size_t k = 0; k < vars.size(); ++k) {
            if (!penalised(vars[k])) continue;
            const auto d = static_cast<Index>(k + 1);
            jtj(d, d) += penalty;
            jtr(d) += penalty * theta[vars[k]];
        }
        const Eigen::VectorXd step = jtj.ldlt().solve(-jtr);
        if (!step.allFinite()) break;
        bool improved = false;
        for (double a = 1.0; a > 1e-4; a *= 0.5) {
            auto t = theta;
            t[0] += a * step(0);
            for (std::size_t k = 0; k < vars.size(); ++k) {
                const double x = t[vars[k]] + a * step(static_cast<Index>(k + 1));
                t[vars[k]] = vars[k] == slope
                                 ? std::clamp(x, -KernelIntensityFactor::max_slope, KernelIntensityFactor::max_slope)
                                 : std::clamp(x, std::log(0.1), std::log(10.0));
            }
            const double l = loss(t);
            if (l < current) {
                theta = std::move(t);
                improved = current - l > 1e-14 * (1 + current);
                current = l;
                break;
            }
        }
        if (!improved) break;
    }
    return theta;
}
/// The intensity slope of the profiled kernels of the shots flagged in `in`: the slope of
/// log(profiled / price) on log(clamped intensity / span top) within each family (a family's own
/// level taken out), each kernel weighted by its price, so that the microsecond kernels whose
/// profiled times are mostly the profiler's own bookkeeping weigh little.
inline double profiled_intensity_slope(const CalibrationShots& s, const std::vector<bool>& in) {
    const auto nf = static_cast<std::size_t>(s.family_ms.cols());
    std::vector<double> sw(nf, 0.0), sx(nf, 0.0), sy(nf, 0.0);
    const auto x_of = [&](const CalibrationShots::ProfiledPrice& k) {
        return std::log(std::clamp(k.intensity, s.span.low, s.span.high) / s.span.high);
    };
    const auto usable = [&](const CalibrationShots::ProfiledPrice& k) {
        return in[k.network] && k.ms > 0 && k.price > 0 && k.intensity > 0;
    };
    for (const auto& k : s.profiled)
        if (usable(k)) {
            sw[k.family] += k.price;
            sx[k.family] += k.price * x_of(k);
            sy[k.family] += k.price * std::log(k.ms / k.price);
        }
    double sxx = 0, sxy = 0;
    for (const auto& k : s.profiled)
        if (usable(k)) {
            const double x = x_of(k) - sx[k.family] / sw[k.family];
            const double y = std::log(k.ms / k.price) - sy[k.family] / sw[k.family];
            sxx += k.price * x * x;
            sxy += k.price * x * y;
        }
    return sxx > 0 ? std::clamp(sxy / sxx, -KernelIntensityFactor::max_slope, KernelIntensityFactor::max_slope) : 0.0;
}
/// Per shot, whether `use` names it.
inline std::vector<bool> shots_in(const CalibrationShots& s, const std::vector<std::size_t>& use) {
    std::vector<bool> in(s.overhead.size(), false);
    for (std::size_t i : use) in[i] = true;
    return in;
}
/// theta with its global factor: the median ratio of the latencies of the shots in `use` to their
/// prices under theta's other factors.
inline std::vector<double> with_global_factor(const CalibrationShots& s, const std::vector<std::size_t>& use,
                                              std::vector<double> theta) {
    std::vector<double> lr;
    for (std::size_t i : use) lr.push_back(std::log(s.measured[i]) - std::log(family_scaled_ms(s, i, theta)));
    theta[0] = median(lr);
    return theta;
}
/// Family factors from the profiled kernels of the shots in `use`: each family's measured time
/// over its price, against that of all their kernels, its log shrunk toward 0 by n / (n + prior)
/// for a family of n kernels; then the global factor. Returns log g, log s_f per family (0 for a
/// family without profiled kernels), and a slope of 0.
inline std::vector<double> fit_profiled_calibration(const CalibrationShots& s, const std::vector<std::size_t>& use,
                                                    double prior) {
    const auto nf = static_cast<std::size_t>(s.family_ms.cols());
    std::vector<double> theta(nf + 2, 0.0);
    const auto in = shots_in(s, use);
    std::vector<double> ms(nf, 0.0), price(nf, 0.0), count(nf, 0.0);
    double ms_all = 0, price_all = 0;
    for (const auto& k : s.profiled)
        if (in[k.network]) {
            ms[k.family] += k.ms;
            price[k.family] += k.price;
            count[k.family] += 1;
            ms_all += k.ms;
            price_all += k.price;
        }
    if (ms_all > 0 && price_all > 0) {
        const double all = std::log(ms_all / price_all);
        for (std::size_t f = 0; f < nf; ++f)
            if (ms[f] > 0 && price[f] > 0)
                theta[f + 1] = std::clamp((std::log(ms[f] / price[f]) - all) * count[f] / (count[f] + prior),
                                          std::log(0.1), std::log(10.0));
    }
    return with_global_factor(s, use, std::move(theta));
}
/// The intensity slope from the profiled kernels of the shots in `use`
/// (profiled_intensity_slope), then the global factor. Returns log g, zeros, the slope.
inline std::vector<double> fit_profiled_intensity_slope(const CalibrationShots& s,
                                                        const std::vector<std::size_t>& use) {
    std::vector<double> theta(static_cast<std::size_t>(s.family_ms.cols()) + 2, 0.0);
    theta.back() = profiled_intensity_slope(s, shots_in(s, use));
    return with_global_factor(s, use, std::move(theta));
}
/// The span of intensities an intensity factor moves over: from the intensity below which 5 % of
/// the shots' priced time lies to the one below which 95 % does.
inline KernelIntensityFactor intensity_span(const std::vector<double>& intensity, const std::vector<double>& ms) {
    std::vector<std::pair<double, double>> by_intensity;
    double total = 0;
    for (std::size_t k = 0; k < intensity.size(); ++k)
        if (intensity[k] > 0 && ms[k] > 0) {
            by_intensity.emplace_back(intensity[k], ms[k]);
            total += ms[k];
        }
    KernelIntensityFactor z;
    if (by_intensity.empty()) return z;
    std::sort(by_intensity.begin(), by_intensity.end());
    z.low = z.high = by_intensity.back().first;
    double below = 0;
    bool lo_set = false;
    for (const auto& [x, w] : by_intensity) {
        below += w;
        if (!lo_set && below >= 0.05 * total) {
            z.low = x;
            lo_set = true;
        }
        if (below >= 0.95 * total) {
            z.high = x;
            break;
        }
    }
    return z;
}
}  // namespace detail

DNNCOST_FUNC CalibrationReport DeviceModel::calibrate(std::span<const graph::Graph* const> graphs,
                                                      std::span<const double> measured_ms,
                                                      const CalibrationOptions& options,
                                                      std::span<const std::vector<ProfiledKernel>> profiles) {
    if (graphs.empty()) raise<config_error>("device model: calibration needs at least one measured network");
    if (graphs.size() != measured_ms.size())
        raise<config_error>("device model: ", graphs.size(), " networks but ", measured_ms.size(), " latencies");
    if (!profiles.empty() && profiles.size() != graphs.size())
        raise<config_error>("device model: ", graphs.size(), " networks but ", profiles.size(), " profiles");
    for (double prior : options.kernel_priors)
        if (!(std::isfinite(prior) && prior >= 0))
            raise<config_error>("device model: calibration prior weight ", prior, " is not a finite count >= 0");
    for (std::size_t i = 0; i < graphs.size(); ++i)
        if (!(std::isfinite(measured_ms[i]) && measured_ms[i] > 0))
            raise<config_error>("device model: calibration network ", i + 1, " ('", graphs[i]->name(),
                                "') has latency ", measured_ms[i], " ms");
    const auto n = graphs.size();
    const auto mape = [&](std::span<const double> predicted) {
        double e = 0;
        for (std::size_t i = 0; i < n; ++i) e += std::abs(predicted[i] / measured_ms[i] - 1);
        return 100 * e / static_cast<double>(n);
    };
    CalibrationReport report;
    report.shots = n;
    report.given_mape = mape(price_totals(graphs));

    // the shots at unit factors, by family
    detail::CalibrationShots shots;
    const bool residual = m_residual.trained();
    std::vector<KernelGraphSample> samples;
    const auto fig = kernel_figures(graphs, nullptr, residual ? &samples : nullptr, true);
    const auto res = residual ? m_residual.factors(samples) : std::vector<double>(n, 1.0);
    const auto nf = fig.families.size();
    shots.family_ms = Mat<double>::Zero(static_cast<Index>(n), static_cast<Index>(nf));
    std::vector<double> share(nf, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
        shots.overhead.push_back(m_run_overhead_ms * res[i]);
        shots.measured.push_back(measured_ms[i]);
        double total = shots.overhead.back();
        for (std::size_t k = fig.start[i]; k < fig.start[i + 1]; ++k) {
            shots.family_ms(static_cast<Index>(i), fig.family[k]) += fig.ms[k] * res[i];
            total += fig.ms[k] * res[i];
            shots.kernel_ms.push_back(fig.ms[k] * res[i]);
            shots.kernel_intensity.push_back(fig.intensity[k]);
            shots.kernel_family.push_back(fig.family[k]);
        }
        shots.start.push_back(shots.kernel_ms.size());
        for (std::size_t f = 0; f < nf; ++f)
            share[f] += shots.family_ms(static_cast<Index>(i), static_cast<Index>(f)) / total / static_cast<double>(n);
    }
    std::vector<bool> free(nf);
    for (std::size_t f = 0; f < nf; ++f) free[f] = options.per_family && share[f] >= options.min_family_share;
    if (!profiles.empty()) {
        for (std::size_t i = 0; i < n; ++i)
            for (const auto& pk : profiles[i]) {
                const std::size_t kernels = fig.start[i + 1] - fig.start[i];
                if (pk.kernel >= kernels || !(std::isfinite(pk.ms) && pk.ms >= 0))
                    raise<config_error>("device model: calibration network ", i + 1, " ('", graphs[i]->name(),
                                        "'): profiled kernel ", pk.kernel, " of ", pk.ms, " ms; its kernel pass has ",
                                        kernels, " kernels, and a time is finite and >= 0");
                const std::size_t k = fig.start[i] + pk.kernel;
                shots.profiled.push_back({i, fig.family[k], fig.ms[k] * res[i], fig.intensity[k], pk.ms});
                ++report.profiled_kernels;
            }
    }
    shots.span = detail::intensity_span(shots.kernel_intensity, shots.kernel_ms);
    const bool profiled = options.per_family && report.profiled_kernels > 0;

    const auto predict = [&](const std::vector<double>& theta, std::size_t i) {
        return std::exp(theta[0]) * detail::family_scaled_ms(shots, i, theta);
    };
    std::vector<std::size_t> all(n);
    for (std::size_t i = 0; i < n; ++i) all[i] = i;
    // the candidates in the order of their free factors: the global factor alone; an intensity
    // slope beside it (one factor more), from the profiled kernels, then fitted to the shots'
    // latencies; family factors (several more) from the profiled kernels (not fitted to the
    // latencies the choice judges them on), then fitted to the shots' latencies
    struct Candidate {
        bool from_profiles = false;
        double shrinkage = std::numeric_limits<double>::infinity();  ///< prior weight or penalty
        bool intensity_slope = false;                                ///< an intensity slope as well
    };
    std::vector<Candidate> candidates{{}};
    const bool intensities =
        options.intensity_slope && shots.span.high > shots.span.low &&
        KernelIntensityFactor{KernelIntensityFactor::max_slope, shots.span.low, shots.span.high}.valid();
    if (intensities && profiled) candidates.push_back({true, std::numeric_limits<double>::infinity(), true});
    if (intensities) candidates.push_back({false, std::numeric_limits<double>::infinity(), true});
    if (profiled)
        for (double prior : options.kernel_priors) candidates.push_back({true, prior});
    if (options.per_family)
        for (double penalty : {1.0, 0.3, 0.1, 0.03, 0.01}) candidates.push_back({false, penalty});
    const auto fit = [&](const Candidate& c, const std::vector<std::size_t>& use) {
        if (c.from_profiles)
            return c.intensity_slope ? detail::fit_profiled_intensity_slope(shots, use)
                                     : detail::fit_profiled_calibration(shots, use, c.shrinkage);
        return detail::fit_calibration(shots, use, free, c.shrinkage, c.intensity_slope);
    };
    Candidate chosen;
    if (n >= 3) {
        // leave-one-out over the shots for every candidate: each one's mean error, and its errors
        // shot by shot
        std::vector<double> loo_mape;
        std::vector<std::vector<double>> errors;
        for (const auto& c : candidates) {
            std::vector<double> loo(n);
            for (std::size_t out = 0; out < n; ++out) {
                std::vector<std::size_t> use;
                for (std::size_t i = 0; i < n; ++i)
                    if (i != out) use.push_back(i);
                loo[out] = predict(fit(c, use), out);
            }
            loo_mape.push_back(mape(loo));
            if (c.intensity_slope)
                report.intensity_candidates.emplace_back(c.from_profiles ? "profiled kernels" : "shot latencies",
                                                         loo_mape.back());
            else
                (c.from_profiles ? report.profiled_candidates : report.candidates)
                    .emplace_back(c.shrinkage, loo_mape.back());
            auto& e = errors.emplace_back(n);
            for (std::size_t i = 0; i < n; ++i) e[i] = 100 * std::abs(loo[i] / measured_ms[i] - 1);
        }
        // the fewest free factors whose error is within one standard error of the best: ten shots
        // cannot tell six family factors from noise unless the gain stands out
        std::size_t lowest = 0;
        for (std::size_t c = 1; c < candidates.size(); ++c)
            if (loo_mape[c] < loo_mape[lowest] * (1 - 1e-9)) lowest = c;
        double sd = 0;
        for (double x : errors[lowest]) sd += (x - loo_mape[lowest]) * (x - loo_mape[lowest]);
        const double standard_error = std::sqrt(sd / static_cast<double>(n - 1) / static_cast<double>(n));
        std::size_t pick = lowest;
        for (std::size_t c = 0; c < lowest; ++c)
            if (loo_mape[c] <= loo_mape[lowest] + standard_error) {
                pick = c;
                break;
            }
        chosen = candidates[pick];
        report.cv_mape = loo_mape[pick];
        if (!(report.cv_mape < report.given_mape)) {
            // no fit beats the model as given on shots it never saw: keep it
            report.applied = false;
            report.shrinkage = chosen.shrinkage;
            report.from_profiles = chosen.from_profiles;
            report.factor = m_scale;
            report.family_factors = m_family_scale;
            report.intensity_factor = m_intensity_factor;
            return report;
        }
    }
    const auto theta = fit(chosen, all);
    m_scale = std::exp(theta[0]);
    m_family_scale.clear();
    for (std::size_t f = 0; f < nf; ++f)
        if (std::isfinite(chosen.shrinkage) && (chosen.from_profiles || free[f]) && std::abs(theta[f + 1]) > 1e-12)
            m_family_scale.emplace(fig.families[f], std::exp(theta[f + 1]));
    m_intensity_factor = chosen.intensity_slope ? detail::intensity_factor_of(shots, theta) : KernelIntensityFactor{};
    m_calibration_shots = static_cast<std::uint32_t>(n);
    report.shrinkage = chosen.shrinkage;
    report.from_profiles = chosen.from_profiles;
    report.factor = m_scale;
    report.family_factors = m_family_scale;
    report.intensity_factor = m_intensity_factor;
    return report;
}

DNNCOST_FUNC void DeviceModel::replace_rules(FusionRules rules) {
    rules.check();
    if (!rules.device.empty() && !m_rules.device.empty() && rules.device != m_rules.device)
        raise<config_error>("device model: rules of device '", rules.device, "' for a model of device '",
                            m_rules.device, "'");
    if (rules.device.empty()) rules.device = m_rules.device;
    m_rules = std::move(rules);
}

DNNCOST_FUNC std::vector<std::string> DeviceModel::priced_kinds() const {
    std::vector<std::string> out;
    for (const auto& [k, km] : m_kinds)
        if (km.regressor) out.push_back(k);
    return out;
}

DNNCOST_FUNC std::string DeviceModel::nearest_priced_kind(const std::string& k) const {
    const auto has = [&](std::string_view x) {
        const auto it = m_kinds.find(x);
        return it != m_kinds.end() && it->second.regressor != nullptr;
    };
    // the kind with its last fusions dropped, then the nearest families with the usual epilogues
    auto x = KindSpec::parse(k);
    while (true) {
        if (auto y = x.str(); has(y)) return y;
        if (x.fusions.empty()) break;
        x.fusions.pop_back();
    }
    const std::string add(fused_add), act(fused_act);
    for (const auto& near : nearest_families(x.anchor))
        for (const auto& fusions : {std::vector<std::string>{}, {act}, {add}, {add, act}}) {
            const auto y = KindSpec{near, fusions}.str();
            if (has(y)) return y;
        }
    return priced_kinds().front();
}

DNNCOST_FUNC std::vector<estimators::Prediction> DeviceModel::compute(
    std::span<const graph::Graph* const> graphs) const {
    std::vector<estimators::Prediction> out;
    for (const double t : price_totals(graphs)) out.push_back({t, 0.0});
    return out;
}

DNNCOST_FUNC cost::GraphCost DeviceModel::price(const graph::Graph& g) const {
    const graph::Graph* one[] = {&g};
    const auto p = price_networks(one).front();
    cost::GraphCost c;
    c.total_ms = p.total_ms;
    c.run_overhead_ms = p.run_overhead_ms;
    // a reorder runs no node of the graph: its time goes to the kernel that reads its value
    double carry = 0;
    for (const auto& k : p.kernels) {
        if (k.nodes.empty()) {
            carry += k.ms;
            continue;
        }
        c.kernels.push_back({k.kind, k.nodes, k.ms + carry});
        carry = 0;
    }
    if (carry > 0) {
        if (c.kernels.empty())
            c.run_overhead_ms += carry;
        else
            c.kernels.back().ms += carry;
    }
    // one line per reason (or per kind) rather than per kernel: a network's many kernels of a kind no
    // sample had would otherwise each repeat it
    using Groups = std::vector<std::pair<std::string, std::vector<std::size_t>>>;  // in order of first kernel
    const auto add_to = [](Groups& groups, std::string key, std::size_t k) {
        auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
        if (it == groups.end()) it = groups.insert(groups.end(), {std::move(key), {}});
        it->second.push_back(k);
    };
    const auto kernel_list = [](const std::vector<std::size_t>& kernels) {  // "kernels 2, 5, 9, ... (12 in all)"
        std::string which = kernels.size() == 1 ? "kernel " : "kernels ";
        for (std::size_t i = 0; i < std::min<std::size_t>(kernels.size(), 3); ++i)
            which += (i ? ", " : "") + std::to_string(kernels[i]);
        if (kernels.size() > 3) which += ", ... (" + std::to_string(kernels.size()) + " in all)";
        return which;
    };
    Groups reasons;
    for (std::size_t k = 0; k < p.kernels.size(); ++k) {
        std::string why = p.kernels[k].warning;
        if (why.empty()) continue;
        const std::string which = "kernel " + std::to_string(k) + " ";
        for (std::size_t at = 0; (at = why.find(which, at)) != std::string::npos;)
            if (at == 0 || (at >= 2 && why.compare(at - 2, 2, "; ") == 0))
                why.erase(at, which.size());
            else
                at += which.size();
        add_to(reasons, std::move(why), k);
    }
    for (const auto& [why, kernels] : reasons)
        c.fallbacks.push_back(kernels.size() == 1 ? p.kernels[kernels.front()].warning
                                                  : kernel_list(kernels) + " " + why);
    // kernels beyond every sample of the regressor that priced them, one line per regressor: there
    // the roofline base alone carries the price's growth
    Groups beyond;
    for (std::size_t k = 0; k < p.kernels.size(); ++k)
        if (p.kernels[k].beyond_samples > 1) add_to(beyond, p.kernels[k].priced_as, k);
    for (const auto& [as, kernels] : beyond) {
        double most = 0;
        for (const auto k : kernels) most = std::max(most, p.kernels[k].beyond_samples);
        char factor[32];
        std::snprintf(factor, sizeof factor, "%.3g", most);
        c.beyond_samples.push_back(dnncost::concat(kernel_list(kernels), " (", as,
                                                   "): ", kernels.size() == 1 ? "" : "up to ", factor,
                                                   "x the work of the largest sample"));
    }
    return c;
}

DNNCOST_FUNC std::vector<double> DeviceModel::priced(std::span<const graph::Graph* const> graphs,
                                                     std::vector<DevicePrice>* details) const {
    const bool residual = m_residual.trained();
    std::vector<KernelGraphSample> samples;
    const auto fig = kernel_figures(graphs, details, residual ? &samples : nullptr);
    const auto factors = residual ? m_residual.factors(samples) : std::vector<double>(graphs.size(), 1.0);
    std::vector<double> family_factor;  // by index into fig.families
    for (const auto& name : fig.families) {
        const auto it = m_family_scale.find(name);
        family_factor.push_back(it == m_family_scale.end() ? 1.0 : it->second);
    }
    const auto kernel_factor = [&](std::size_t k) {
        const double family = fig.family.empty() ? 1.0 : family_factor[fig.family[k]];
        return m_intensity_factor.active() ? family * m_intensity_factor(fig.intensity[k]) : family;
    };
    std::vector<double> totals(graphs.size());
    for (std::size_t i = 0; i < graphs.size(); ++i) {
        const double f = factors[i] * m_scale;
        double total = m_run_overhead_ms * f;
        for (std::size_t k = fig.start[i]; k < fig.start[i + 1]; ++k) total += fig.ms[k] * kernel_factor(k) * f;
        totals[i] = total;
        if (!details) continue;
        auto& p = (*details)[i];
        p.run_overhead_ms = m_run_overhead_ms * f;
        for (std::size_t k = 0; k < p.kernels.size(); ++k)
            p.kernels[k].ms = fig.ms[fig.start[i] + k] * kernel_factor(fig.start[i] + k) * f;
        p.total_ms = total;
    }
    return totals;
}

DNNCOST_FUNC DeviceModel::KernelFigures DeviceModel::kernel_figures(std::span<const graph::Graph* const> graphs,
                                                                    std::vector<DevicePrice>* details,
                                                                    std::vector<KernelGraphSample>* samples,
                                                                    bool families) const {
    if (m_kinds.empty()) raise<config_error>("device model: not built");
    families = families || !m_family_scale.empty();
    // no check of m_rules per call: build(), parse() and replace_rules() checked them when they
    // were set, and nothing else sets them
    // the regressors in kind order: a kernel priced in parts sums them in this order
    std::vector<const TabularRegressor*> regressors;
    std::vector<std::string_view> regressor_kind;
    for (const auto& [k, km] : m_kinds)
        if (km.regressor) {
            regressors.push_back(km.regressor.get());
            regressor_kind.push_back(k);
        }
    // kind key -> (its regressor, whether that regressor learnt the kind's own samples), looked
    // up once a call
    std::unordered_map<std::string, std::pair<std::size_t, bool>> priced_by;
    const auto lookup = [&](const std::string& key) {
        auto it = priced_by.find(key);
        if (it == priced_by.end()) {
            const auto as = nearest_priced_kind(key);
            const auto r = std::lower_bound(regressor_kind.begin(), regressor_kind.end(), as);
            const auto k = m_kinds.find(key);
            const bool own = as == key || (k != m_kinds.end() && k->second.pooled_into == as);
            it = priced_by.emplace(key, std::pair{static_cast<std::size_t>(r - regressor_kind.begin()), own}).first;
        }
        return it->second;
    };
    // each kernel's kind key and (regressor, own), worked out once for the kernels that share
    // them and remembered from call to call: a search prices network after network with one model
    // (a thread keeps the tables of the last few models it priced, each bounded)
    using KindTable = KernelKindTable<std::pair<std::size_t, bool>>;
    struct RememberedKinds {
        std::uint64_t model = 0, last_use = 0;
        KindTable table;
    };
    thread_local std::array<RememberedKinds, 4> remembered;
    thread_local std::uint64_t calls = 0;
    auto* slot = &remembered.front();
    for (auto& r : remembered)
        if (r.model == m_identity.id || (slot->model != m_identity.id && r.last_use < slot->last_use)) slot = &r;
    if (slot->model != m_identity.id || slot->table.size() > 4096) {
        slot->table = KindTable{};
        slot->model = m_identity.id;
    }
    slot->last_use = ++calls;
    auto& kinds_met = slot->table;
    const auto priced_as = [&](const KernelKind& kind) { return lookup(kind.key); };
    const auto block = m_rules.layout.block;
    std::vector<double> row(kernel_feature_names().size());
    // the batches' storage passed on from call to call, as the kernel graphs' below
    thread_local KernelBatches batches(0, 0);
    batches.reset(regressors.size(), row.size());
    KernelFigures out;
    std::vector<KernelGraph> kgs;
    // storage of one network's kernels passed on to the next, and on to the next call: a search
    // pricing one network per call would otherwise allocate every kernel's lists anew
    thread_local KernelGraph reused, plain;
    thread_local graph::FlatView view;  // of the network being priced, read by the pass and the features
    std::optional<FusionRules> unfused;
    if (details) {
        details->clear();
        details->resize(graphs.size());
    }
    std::vector<std::size_t> unsampled;  // fused kernels of a kind no sample had
    for (std::size_t gi = 0; gi < graphs.size(); ++gi) try {
            const auto& g = *graphs[gi];
            auto& kg = samples ? kgs.emplace_back() : reused;
            view.rebuild(g);
            kernel_graph_into(view, m_rules, kg, rules_checked);
            kinds_met.next_graph();
            const std::size_t first = out.ms.size();
            // room for the network's kernels at once, doubling so that many networks stay linear
            const auto room = [&](auto& v) {
                if (v.capacity() < first + kg.kernels.size())
                    v.reserve(std::max(first + kg.kernels.size(), 2 * v.capacity()));
            };
            room(out.output_bytes);
            room(out.intensity);
            room(out.reorder_bytes);
            if (families) room(out.family);
            out.ms.resize(first + kg.kernels.size(), 0.0);
            out.start.push_back(out.ms.size());
            for (const auto& kn : kg.kernels) {
                out.output_bytes.push_back(static_cast<double>(kn.cost.output_bytes));
                const auto moved = kn.cost.bytes();
                out.intensity.push_back(moved > 0 ? static_cast<double>(kn.cost.flops) / static_cast<double>(moved)
                                                  : 0.0);
                out.reorder_bytes.push_back(!kn.is_reorder() && kn.layout.blocked()
                                                ? static_cast<double>(kn.cost.input_bytes + kn.cost.output_bytes)
                                                : 0.0);
            }
            auto* d = details ? &(*details)[gi] : nullptr;
            if (d) d->kernels.resize(kg.kernels.size());
            unsampled.clear();
            for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
                const auto& met = kinds_met.find(view, kg, kg.kernels[k], priced_as);
                const auto& kind = met.kind;
                const auto [r, own] = met.value;
                if (families) {
                    // a kernel's family is its kind's first unit ("DepthwiseConv+Act" -> "DepthwiseConv")
                    const std::string_view fam = KindSpec::anchor_of(kind.key);
                    auto it = std::find(out.families.begin(), out.families.end(), fam);
                    if (it == out.families.end()) it = out.families.insert(out.families.end(), std::string(fam));
                    out.family.push_back(static_cast<std::uint16_t>(it - out.families.begin()));
                }
                const bool priced_whole = own || kg.kernels[k].nodes.size() <= 1;
                // the features go straight into the batch; those of a kernel priced in parts are
                // still worked out (and dropped), for the errors they may raise
                const auto values = priced_whole ? batches.new_row(r) : std::span<double>(row);
                kernel_features_into(view, kg, k, block, kind, values);
                if (!priced_whole) unsampled.push_back(k);
                if (d) {
                    auto& pk = d->kernels[k];
                    pk.kind = kind.key;
                    pk.nodes = kg.kernels[k].nodes;
                    pk.layout = kg.layout_string(kg.kernels[k].layout);
                    pk.priced_as = regressor_kind[r];
                    pk.warning = kind.warning;
                    if (priced_whole) pk.beyond_samples = regressors[r]->work_beyond_samples(values);
                    if (!own && kg.kernels[k].nodes.size() <= 1) {
                        const auto why = dnncost::concat("kernel ", k, " (", pk.kind, ") priced as ", pk.priced_as,
                                                         ": no samples of its own kind");
                        pk.warning = pk.warning.empty() ? why : pk.warning + "; " + why;
                    }
                }
                if (priced_whole) batches.add_new_row(r, first + k);
            }
            if (!unsampled.empty()) {
                // a fusion no sample showed is priced as its operators running alone: an upper
                // bound, where a regressor of a similar kind would extrapolate from work it never saw
                if (!unfused) unfused = unfused_rules();
                kernel_graph_into(view, *unfused, plain, rules_checked);
                kinds_met.next_graph();
                for (std::size_t k : unsampled) {
                    std::string parts;
                    for (std::size_t p = 0; p < plain.kernels.size(); ++p) {
                        const auto& nodes = plain.kernels[p].nodes;
                        if (nodes.empty() || kg.kernel_of_node[static_cast<std::size_t>(nodes.front())] != int(k))
                            continue;
                        const auto& met = kinds_met.find(view, plain, plain.kernels[p], priced_as);
                        const auto r = met.value.first;
                        kernel_features_into(view, plain, p, block, met.kind, batches.new_row(r));
                        if (d) parts += (parts.empty() ? "" : " + ") + std::string(regressor_kind[r]);
                        batches.add_new_row(r, first + k);
                    }
                    if (!d) continue;
                    auto& pk = d->kernels[k];
                    pk.priced_as = std::move(parts);
                    const auto why = dnncost::concat("kernel ", k, " (", pk.kind,
                                                     ") has no samples of its kind: priced as its operators "
                                                     "unfused (",
                                                     pk.priced_as, ")");
                    pk.warning = pk.warning.empty() ? why : pk.warning + "; " + why;
                }
            }
        } catch (const error&) {
            // of many networks, say which one; one network is named by its caller
            if (graphs.size() > 1) detail::raise_in_network(gi, graphs[gi]->name());
            throw;
        }
    batches.predict_into(regressors, out.ms, &m_memo);
    if (!m_boundary.is_zero())  // a kernel priced in unfused parts loses its own edges once
        for (std::size_t k = 0; k < out.ms.size(); ++k)
            out.ms[k] = m_boundary.in_network_ms(out.ms[k], out.output_bytes[k], out.reorder_bytes[k]);
    if (samples)
        for (std::size_t gi = 0; gi < graphs.size(); ++gi) {
            std::vector<double> kernel_ms;  // a kernel of free operators only: the residual reads logs
            for (std::size_t k = out.start[gi]; k < out.start[gi + 1]; ++k)
                kernel_ms.push_back(std::max(out.ms[k], 1e-6));
            samples->push_back(make_kernel_graph_sample(*graphs[gi], kgs[gi], block, kernel_ms, m_run_overhead_ms));
        }
    return out;
}

DNNCOST_FUNC std::vector<BoundaryNetwork> DeviceModel::boundary_networks(const train::TrainData& d) const {
    const auto fig = kernel_figures(d.graphs, nullptr, nullptr);
    std::vector<BoundaryNetwork> nets(d.size());
    for (std::size_t i = 0; i < nets.size(); ++i) {
        nets[i].overhead_ms = m_run_overhead_ms;
        nets[i].measured_ms = d.targets[i];
        for (std::size_t k = fig.start[i]; k < fig.start[i + 1]; ++k)  // free operators: a token figure
            nets[i].kernels.push_back({std::max(fig.ms[k], 1e-9), fig.output_bytes[k], fig.reorder_bytes[k]});
    }
    return nets;
}

DNNCOST_FUNC FusionRules DeviceModel::unfused_rules() const {
    auto r = m_rules;
    r.patterns.clear();
    std::erase_if(r.fusions, [](const FusionRule& f) { return !f.fold; });
    return r;
}

DNNCOST_FUNC std::vector<std::string> DeviceModel::nearest_families(std::string_view family) {
    // a family, then the others in its order of likeness; a constant table, not a map of strings
    // built at first use: this runs only on a kernel kind no sample had
    static constexpr std::string_view near[][5] = {
        {"Conv", "Conv", "DepthwiseConv", "Gemm", "MatMul"},
        {"DepthwiseConv", "DepthwiseConv", "Conv", "Pool"},
        {"ConvTranspose", "Conv", "DepthwiseConv"},
        {"Gemm", "Gemm", "MatMul", "Conv"},
        {"MatMul", "MatMul", "Gemm", "Conv"},
        {"Pool", "Pool", "DepthwiseConv", "GlobalPool"},
        {"GlobalPool", "GlobalPool", "Reduce", "Pool"},
        {"Reduce", "Reduce", "GlobalPool", "Softmax"},
        {"Softmax", "Softmax", "Reduce", "Activation"},
        {"LayerNorm", "LayerNorm", "Softmax", "Reduce", "BatchNorm"},
        {"BatchNorm", "BatchNorm", "Elementwise", "Activation"},
        {"Elementwise", "Elementwise", "Activation", "DataMovement"},
        {"Activation", "Activation", "Elementwise", "DataMovement"},
        {"Concat", "Concat", "DataMovement", "Elementwise"},
        {"Resize", "Resize", "DataMovement", "Elementwise"},
        {"DataMovement", "DataMovement", "Concat", "Activation", "Elementwise"},
        {"Reorder", "Reorder", "DataMovement", "Activation", "Elementwise"},
        {"Reshape", "Reshape", "Reorder", "DataMovement"},
        {"", "Elementwise", "Activation", "DataMovement"},  // any other family
    };
    const auto* row = std::begin(near);
    while (!(*row)[0].empty() && (*row)[0] != family) ++row;
    std::vector<std::string> out;
    for (auto it = std::begin(*row) + 1; it != std::end(*row) && !it->empty(); ++it) out.emplace_back(*it);
    return out;
}

}  // namespace dnncost::device
