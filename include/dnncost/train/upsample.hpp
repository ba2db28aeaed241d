#pragma once
/// @file upsample.hpp
/// Data-set upsampling for training on several search spaces at once: items of the spaces
/// that make up less than a given share of the training set are repeated until every space
/// holds at least that share, so that a generalised model does not learn the largest space
/// alone.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>

namespace dnncost::train {

/// The smallest counts c_g >= n_g with c_g >= share * sum(c) for every group g (n: the groups'
/// sizes, all positive). Found by raising every short group to ceil(share * total) until the
/// total stops growing; the fixed point is the smallest solution because every step only
/// raises a count to a bound that any solution must meet.
/// @throws config_error when share * groups >= 1 (no solution) or share is outside [0, 1)
inline std::vector<std::size_t> upsampled_counts(const std::vector<std::size_t>& n, double share) {
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

/// Item positions 0..group.size()-1 with the items of short groups repeated so that every
/// group makes up at least `share` of the result (upsampled_counts): each item of a group
/// raised from n to c appears floor(c / n) times, and c mod n of them, drawn without
/// replacement with `seed`, once more. Groups that are large enough keep each item once.
/// Positions come grouped in the order of first appearance of their group.
inline std::vector<std::size_t> upsample(const std::vector<std::string>& group, double share = 0.10,
                                         std::uint64_t seed = 0) {
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

}  // namespace dnncost::train
