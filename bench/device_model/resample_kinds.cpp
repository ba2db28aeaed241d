// A build's in-context samples under the current kernel model, measuring nothing: each sample's
// kind and features worked out again from its network (the build's profiled networks, drawn again
// by context_networks with the build's count and seed) and kernel. The measured times stay. Every
// feature the change of kinds does not touch must agree with the stored one, so that a sample
// is never moved onto another kernel; isolated single-kernel samples are kept as they are.
//   dnncost_resample_kinds WORK_DIR/kernel_samples.json NETWORKS.csv OUT.json [COUNT=40] [SEED=1]
// NETWORKS.csv is the build's store of profiled networks (key and id of each).
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <dnncost/device/device_build.hpp>
#include <dnncost/device/kernel_features.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_sample_file.hpp>
#include <dnncost/io/csv.hpp>
using namespace dnncost;

int main(int argc, char** argv) try {
    if (argc < 4) {
        std::cerr << "usage: dnncost_resample_kinds SAMPLES.json NETWORKS.csv OUT.json [COUNT=40] [SEED=1]\n";
        return 2;
    }
    auto file = device::read_kernel_sample_file(argv[1]);
    const auto whole = [](const char* a, const char* what) {
        char* end = nullptr;
        errno = 0;
        const auto v = std::strtoull(a, &end, 10);
        if (*a == '\0' || *a == '-' || *end != '\0' || errno == ERANGE)
            throw std::runtime_error(std::string(what) + " '" + a + "' is not a whole number");
        return static_cast<std::uint64_t>(v);
    };
    const std::size_t count = argc > 4 ? whole(argv[4], "COUNT") : 40;
    const std::uint64_t seed = argc > 5 ? whole(argv[5], "SEED") : 1;
    if (count == 0 || count > 1000) throw std::runtime_error("COUNT must be 1 to 1000");
    // store key of each network id
    std::map<std::string, std::string> key_of;
    {
        const auto t = io::read_csv(argv[2]);
        const auto col = [&](const char* name) {
            for (std::size_t j = 0; j < t.header.size(); ++j)
                if (t.header[j] == name) return j;
            throw std::runtime_error(std::string(argv[2]) + ": no column " + name);
        };
        const auto k = col("key"), i = col("id");
        for (const auto& row : t.rows) key_of[row[i]] = row[k];
    }
    const auto nets = device::context_networks(count, seed);
    const auto& names = device::kernel_feature_names();
    std::size_t approx_col = names.size();
    for (std::size_t j = 0; j < names.size(); ++j)
        if (names[j] == "approximate_kind") approx_col = j;
    // key#kernel -> (kind, features)
    std::map<std::string, std::pair<std::string, std::vector<double>>> fresh;
    std::size_t matched_networks = 0;
    for (const auto& g : nets) {
        const auto it = key_of.find(g.name());
        if (it == key_of.end()) continue;
        ++matched_networks;
        const auto kg = device::kernel_graph(g, file.rules);
        for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
            auto f = device::kernel_features(g, kg, k, file.rules.layout.block);
            fresh[it->second + "#" + std::to_string(k)] = {f.kind.key, std::move(f.values)};
        }
    }
    std::map<std::string, std::size_t> moved;
    std::size_t in_context = 0, changed = 0;
    for (auto& s : file.samples) {
        if (!s.in_context) continue;
        ++in_context;
        const auto& key = file.keys[static_cast<std::size_t>(&s - file.samples.data())];
        const auto it = fresh.find(key);
        if (it == fresh.end()) throw std::runtime_error("sample " + key + ": its network is not among the drawn ones");
        const auto& [kind, values] = it->second;
        for (std::size_t j = 0; j < names.size(); ++j)
            if (j != approx_col && std::abs(values[j] - s.features[j]) > 1e-9 * (1 + std::abs(s.features[j])))
                throw std::runtime_error("sample " + key + " (" + s.kind + "): feature " + names[j] + " is " +
                                         std::to_string(values[j]) + " now, " + std::to_string(s.features[j]) +
                                         " stored: not the same kernel");
        if (kind != s.kind || values != s.features) {
            ++changed;
            ++moved[s.kind + " -> " + kind];
        }
        s.kind = kind;
        s.features = values;
    }
    device::write_kernel_sample_file(argv[3], file);
    std::printf("%zu of %zu networks drawn again; %zu in-context samples, %zu changed\n", matched_networks, nets.size(),
                in_context, changed);
    for (const auto& [what, n] : moved) std::printf("  %-40s %zu\n", what.c_str(), n);
    return 0;
} catch (const std::exception& e) {
    std::cerr << "dnncost_resample_kinds: " << e.what() << "\n";
    return 1;
}
