#pragma once
/// @file genome_set.hpp
/// Hashing and de-duplication of genomes for NSGA-II: the problem's own hash when it has one,
/// else std::hash, else an element-wise mix; and an open-addressing set of genome pointers that
/// finds the duplicates within one batch without an allocation per genome.
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <ranges>
#include <type_traits>
#include <vector>

namespace dnncost::search::detail {

template <class P>
struct GenomeHash {
    const P* problem = nullptr;
    std::size_t operator()(const typename P::Genome& g) const {
        if constexpr (requires {
                          { problem->hash(g) } -> std::convertible_to<std::size_t>;
                      }) {
            return problem->hash(g);
        } else if constexpr (requires { std::hash<typename P::Genome>{}(g); }) {
            return std::hash<typename P::Genome>{}(g);
        } else {
            // Element-wise; std::hash<double> hashes bytes out of line, which showed up in profiles.
            using T = std::ranges::range_value_t<typename P::Genome>;
            // Two independent lanes halve the dependency chain of the multiply-xorshift mix.
            std::uint64_t lane[2] = {0x9e3779b97f4a7c15ULL, 0xc2b2ae3d27d4eb4fULL};
            std::size_t k = 0;
            for (const auto& x : g) {
                std::uint64_t v;
                if constexpr (std::is_floating_point_v<T>) {
                    const double d = static_cast<double>(x) == 0.0 ? 0.0 : static_cast<double>(x);  // -0 == +0
                    v = std::bit_cast<std::uint64_t>(d);
                } else {
                    v = static_cast<std::uint64_t>(x);
                }
                std::uint64_t& h = lane[k++ & 1u];
                h = (h ^ v) * 0xbf58476d1ce4e5b9ULL;
                h ^= h >> 31;
            }
            return static_cast<std::size_t>((lane[0] ^ (lane[1] * 0x94d049bb133111ebULL)) ^ (lane[1] >> 29));
        }
    }
};

/// Open-addressing set of genome pointers for one batch: no allocation per element.
template <class P>
class GenomePtrSet {
public:
    GenomePtrSet(std::size_t expected, const P* problem) : m_hash{problem} {
        std::size_t cap = 16;
        while (cap < 2 * expected) cap *= 2;
        m_slots.assign(cap, Slot{});
    }
    /// Index stored with an equal genome, or `none` after storing (g, value).
    std::size_t find_or_insert(const typename P::Genome* g, std::size_t value) {
        return find_or_insert(g, value, m_hash(*g));
    }
    /// As above with the genome's hash already known.
    std::size_t find_or_insert(const typename P::Genome* g, std::size_t value, std::size_t h) {
        const std::size_t mask = m_slots.size() - 1;
        for (std::size_t i = h & mask;; i = (i + 1) & mask) {
            Slot& s = m_slots[i];
            if (!s.genome) {
                s = Slot{h, g, value};
                if (++m_size * 2 > m_slots.size()) grow();
                return none;
            }
            if (s.hash == h && *s.genome == *g) return s.value;
        }
    }
    static constexpr std::size_t none = static_cast<std::size_t>(-1);
    std::size_t hash(const typename P::Genome& g) const { return m_hash(g); }

private:
    struct Slot {
        std::size_t hash = 0;
        const typename P::Genome* genome = nullptr;
        std::size_t value = 0;
    };
    void grow() {
        std::vector<Slot> old(m_slots.size() * 2);
        old.swap(m_slots);
        const std::size_t mask = m_slots.size() - 1;
        for (const Slot& s : old) {
            if (!s.genome) continue;
            std::size_t i = s.hash & mask;
            while (m_slots[i].genome) i = (i + 1) & mask;
            m_slots[i] = s;
        }
    }
    GenomeHash<P> m_hash;
    std::vector<Slot> m_slots;
    std::size_t m_size = 0;
};

}  // namespace dnncost::search::detail
