#pragma once
/// @file upsample_impl.hpp
/// The definitions of upsample.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by upsample.hpp in header-only mode.
#include <dnncost/train/upsample.hpp>

DNNCOST_FUNC auto dnncost::train::upsampled_counts(const std::vector<std::size_t>& n, double share)
    -> std::vector<std::size_t> {
    if (!(share >= 0.0 && share < 1.0)) raise<config_error>("upsample: share ", share, " outside [0, 1)");
    if (share * static_cast<double>(n.size()) >= 1.0)
        raise<config_error>("upsample: ", n.size(), " groups cannot each make up ", 100 * share, " %");
    std::vector<std::size_t> c = n;
    for (bool changed = true; changed;) {
        changed = false;
        std::size_t total = 0;
        for (auto x : c) total += x;
        // ceil of share * total, robust to share * total landing a hair above an integer
        const auto need = static_cast<std::size_t>(std::ceil(share * static_cast<double>(total) - 1e-9));
        for (auto& x : c)
            if (x > 0 && x < need) {
                x = need;
                changed = true;
            }
    }
    return c;
}

DNNCOST_FUNC auto dnncost::train::upsample(const std::vector<std::string>& group, double share, std::uint64_t seed)
    -> std::vector<std::size_t> {
    std::vector<std::string> names;
    std::map<std::string, std::size_t> index;
    std::vector<std::vector<std::size_t>> members;
    for (std::size_t i = 0; i < group.size(); ++i) {
        auto [it, inserted] = index.try_emplace(group[i], names.size());
        if (inserted) {
            names.push_back(group[i]);
            members.emplace_back();
        }
        members[it->second].push_back(i);
    }
    std::vector<std::size_t> sizes;
    for (const auto& m : members) sizes.push_back(m.size());
    const auto counts = upsampled_counts(sizes, share);
    Rng rng(seed ^ 0x7570736d706c65ULL);
    std::vector<std::size_t> out;
    for (std::size_t g = 0; g < members.size(); ++g) {
        const auto& m = members[g];
        for (std::size_t r = 0; r < counts[g] / m.size(); ++r) out.insert(out.end(), m.begin(), m.end());
        auto extra = m;
        rng.shuffle(extra.begin(), extra.end());
        out.insert(out.end(), extra.begin(), extra.begin() + static_cast<std::ptrdiff_t>(counts[g] % m.size()));
    }
    return out;
}
