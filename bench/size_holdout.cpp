// Extrapolation within a build's own samples: per kernel family, every candidate regressor is fit
// on the samples that do at most 1/FACTOR of the family's largest FLOPs (or read at most 1/FACTOR
// of its largest input, for a family without arithmetic) and scored on the larger ones, which it
// never saw. It measures nothing, so it tells offline how each regressor grows
// beyond its samples (`device extrapolate` measures kernels grown beyond a model's samples).
//   dnncost_size_holdout SAMPLES.json [FACTOR=4] [--json]   (--json: one document, MAPE and shares as fractions)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <dnncost/device/device_model_training.hpp>
#include <dnncost/device/kernel_sample_file.hpp>
#include <dnncost/device/kind_spec.hpp>
#include <dnncost/device/tabular_choice.hpp>
using namespace dnncost;

// the whole argument as a number, or an error that names it
static double parse_number(const std::string& a) {
    std::size_t used = 0;
    double v = 0;
    try {
        v = std::stod(a, &used);
    } catch (const std::exception&) {}
    if (used == 0 || used != a.size()) throw std::runtime_error("'" + a + "' is not a number (FACTOR or --json)");
    return v;
}

int main(int argc, char** argv) try {
    if (argc < 2) {
        std::cerr << "usage: dnncost_size_holdout SAMPLES.json [FACTOR=4] [--json]\n";
        return 2;
    }
    const auto file = device::read_kernel_sample_file(argv[1]);
    double factor = 4;
    bool json = false;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--json")
            json = true;
        else
            factor = parse_number(a);
    }
    if (!(factor > 1 && std::isfinite(factor))) throw std::runtime_error("FACTOR must be a finite number > 1");
    const auto& names = device::kernel_feature_names();
    auto column = [&](const char* name) {
        return static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin());
    };
    std::map<std::string, std::vector<std::size_t>> families;
    for (std::size_t i = 0; i < file.samples.size(); ++i)
        families[std::string(device::KindSpec::anchor_of(file.samples[i].kind))].push_back(i);
    const auto candidates = [] {
        auto plain = device::default_tabular_candidates(1);
        auto all = device::roofline_candidates(device::default_tabular_candidates(1));
        all.insert(all.end(), plain.begin(), plain.end());
        return all;
    }();
    if (json) std::cout << "{\"factor\":" << factor << ",\"families\":[";
    bool first_family = true;
    for (const auto& [family, rows] : families) {
        // the size is the work, or the data read by a family without arithmetic, as the regressor
        // choice takes it (both are log2(1 + x))
        std::size_t col = column("log_flops");
        double top = 0;
        for (auto r : rows) top = std::max(top, file.samples[r].features[col]);
        if (top == 0) {
            col = column("log_input_bytes");
            for (auto r : rows) top = std::max(top, file.samples[r].features[col]);
        }
        const double cut = top - std::log2(factor);
        std::vector<std::size_t> train, test;
        for (auto r : rows) (file.samples[r].features[col] <= cut ? train : test).push_back(r);
        if (train.size() < 40 || test.size() < 3) continue;
        auto rows_of = [&](const std::vector<std::size_t>& idx, Mat<double>& x, std::vector<double>& y) {
            x.resize(static_cast<Index>(idx.size()), static_cast<Index>(names.size()));
            y.clear();
            for (std::size_t k = 0; k < idx.size(); ++k) {
                const auto& s = file.samples[idx[k]];
                for (std::size_t j = 0; j < names.size(); ++j)
                    x(static_cast<Index>(k), static_cast<Index>(j)) = s.features[j];
                y.push_back(s.in_context ? s.latency_ms
                                         : device::DeviceModel::kernel_time(s.latency_ms, file.run_overhead_ms));
            }
        };
        Mat<double> xt, xh;
        std::vector<double> yt, yh;
        rows_of(train, xt, yt);
        rows_of(test, xh, yh);
        if (json)
            std::cout << (first_family ? "" : ",") << "{\"family\":\"" << family << "\",\"train\":" << train.size()
                      << ",\"beyond\":" << test.size() << ",\"candidates\":[";
        else
            std::printf("%s: %zu samples up to 1/%g of the largest %s, %zu beyond\n", family.c_str(), train.size(),
                        factor, names[col].c_str(), test.size());
        first_family = false;
        bool first = true;
        for (const auto& c : candidates) {
            auto m = c.make();
            m->fit(xt, yt, names);
            const auto p = m->predict(xh);
            double ape = 0, lo = 1e300, hi = 0;
            std::size_t within = 0;
            std::vector<double> ratio;
            for (std::size_t k = 0; k < yh.size(); ++k) {
                const double r = p[k] / yh[k];
                ratio.push_back(r);
                ape += std::abs(r - 1);
                within += std::abs(r - 1) <= 0.2;
                lo = std::min(lo, r);
                hi = std::max(hi, r);
            }
            std::sort(ratio.begin(), ratio.end());
            const double med = ratio[ratio.size() / 2];
            const double mape = 100 * ape / static_cast<double>(yh.size());
            if (json)
                std::cout << (first ? "" : ",") << "{\"name\":\"" << c.name << "\",\"mape\":" << mape / 100
                          << ",\"within_20\":" << static_cast<double>(within) / static_cast<double>(yh.size())
                          << ",\"median_ratio\":" << med << ",\"min_ratio\":" << lo << ",\"max_ratio\":" << hi << "}";
            else
                std::printf("  %-20s MAPE %6.1f %%  within 20 %% %3zu of %zu  ratio median %.2f (%.2f-%.2f)\n",
                            c.name.c_str(), mape, within, yh.size(), med, lo, hi);
            first = false;
        }
        if (json) std::cout << "]}";
    }
    if (json) std::cout << "]}\n";
    return 0;
} catch (const std::exception& e) {
    std::cerr << "dnncost_size_holdout: " << e.what() << "\n";
    return 1;
}
