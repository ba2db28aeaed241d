#pragma once
/// @file random_instance_impl.hpp
/// The definitions of random_instance.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by random_instance.hpp in header-only mode.
#include <dnncost/search/mapping/random_instance.hpp>

namespace dnncost::search::mapping {

DNNCOST_FUNC MappingInstance random_instance(const RandomInstanceOptions& o, std::uint64_t seed) {
    if (o.blocks == 0 || o.cus == 0 || o.cus > 255)
        raise<config_error>("random_instance: need 1 or more blocks and 1 to 255 CUs, got ", o.blocks, " and ", o.cus);
    Rng rng(seed);
    std::vector<std::string> cus, blocks;
    for (std::size_t c = 0; c < o.cus; ++c) cus.push_back(::dnncost::concat("cu", c));
    for (std::size_t b = 0; b < o.blocks; ++b) blocks.push_back(::dnncost::concat("b", b));
    MappingInstance inst(cus, blocks);
    // CU c: latency factor from 1 (CU 0) to 2 (CU 1), energy factor from 1 to 0.4; others between
    auto position = [&](std::size_t c) {
        if (c == 0) return 0.0;
        if (c == 1) return 1.0;
        return static_cast<double>(c - 1) / static_cast<double>(o.cus - 1);
    };
    std::vector<double> feature(o.blocks + 1);
    for (auto& f : feature) f = rng.uniform(0.2, 1.0);
    for (std::size_t b = 0; b < o.blocks; ++b) {
        const double work = rng.uniform(0.5, 2.0);
        for (std::size_t c = 0; c < o.cus; ++c) {
            if (c > 0 && rng.bernoulli(o.unsupported)) continue;
            const double x = position(c);
            const double ft = 1.0 + x, fe = 1.0 - 0.6 * x;
            BlockCost k;
            k.t_comp = work * ft * std::exp(0.35 * rng.normal());
            k.e_comp = 10.0 * work * fe * std::exp(0.35 * rng.normal());
            const double bw = std::exp(0.3 * rng.normal());  // this CU's link to the shared memory
            k.t_in = o.transfer_share * feature[b] * bw;
            k.t_out = o.transfer_share * feature[b + 1] * bw;
            k.e_in = 10.0 * o.transfer_share * feature[b] * bw;
            k.e_out = 10.0 * o.transfer_share * feature[b + 1] * bw;
            inst.set(b, c, k);
        }
    }
    return inst;
}

}  // namespace dnncost::search::mapping
