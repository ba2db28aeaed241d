#pragma once
/// @file hash.hpp
/// A canonical hash of an operator graph: what the network computes and on which shapes, not
/// how it was written down. Two graphs get the same hash when they have the same operators,
/// attributes, wiring, tensor shapes and element types, and the same known integer and boolean
/// constant values (shape targets, indices, axes), whatever their node and tensor names, their
/// graph name, the order of their nodes and the values of their floating-point weights: the
/// same architecture with other weights (stripped, random or trained) is the same network.
///
/// Method: every tensor and node gets a hash of its whole upstream context, computed in
/// topological order (a node hashes its op type, its attributes sorted by name, and the hashes
/// of its inputs slot by slot; an activation hashes its producer and output slot). The graph's
/// hash combines the sorted multisets of node hashes, graph-input hashes and output hashes, so
/// dead branches and shared sub-graphs count. Graphs that differ only in how identical
/// sub-graphs are shared downstream can in principle collide; for a measurement cache key that
/// is the accepted limit. The hash is 128 bits from a fixed mixing function, identical on every
/// platform and build.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::graph {

/// A 128-bit canonical graph hash.
struct GraphHash {
    std::uint64_t hi = 0, lo = 0;
    friend bool operator==(const GraphHash&, const GraphHash&) = default;
    friend auto operator<=>(const GraphHash&, const GraphHash&) = default;
    /// 32 lower-case hexadecimal digits.
    std::string hex() const {
        static constexpr char digits[] = "0123456789abcdef";
        std::string s(32, '0');
        for (int i = 0; i < 16; ++i) {
            s[static_cast<std::size_t>(15 - i)] = digits[(hi >> (4 * i)) & 0xF];
            s[static_cast<std::size_t>(31 - i)] = digits[(lo >> (4 * i)) & 0xF];
        }
        return s;
    }
};

namespace detail::hashing {
inline std::uint64_t mix64(std::uint64_t x) {  // the splitmix64 finaliser
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/// Two independent 64-bit lanes fed with the same words.
class Hasher {
public:
    explicit Hasher(std::uint64_t domain)
        : m_a(mix64(domain ^ 0x243f6a8885a308d3ULL)), m_b(mix64(domain + 0x13198a2e03707344ULL)) {}
    Hasher& word(std::uint64_t x) {
        m_a = mix64(m_a ^ mix64(x + 0x9e3779b97f4a7c15ULL)) + 0xa4093822299f31d0ULL;
        m_b = mix64((m_b + x) * 0xff51afd7ed558ccdULL ^ 0x082efa98ec4e6c89ULL);
        ++m_count;
        return *this;
    }
    Hasher& integer(std::int64_t x) { return word(static_cast<std::uint64_t>(x)); }
    Hasher& real(double v) {
        if (v == 0.0) v = 0.0;  // +0 and -0 alike
        std::uint64_t bits = 0;
        if (std::isnan(v))
            bits = 0x7ff8000000000000ULL;
        else
            std::memcpy(&bits, &v, sizeof bits);
        return word(bits);
    }
    Hasher& text(std::string_view s) {
        word(s.size());
        std::uint64_t w = 0;
        int n = 0;
        for (const char c : s) {  // little-endian packing, independent of the host
            w |= static_cast<std::uint64_t>(static_cast<unsigned char>(c)) << (8 * n);
            if (++n == 8) {
                word(w);
                w = 0;
                n = 0;
            }
        }
        if (n) word(w);
        return *this;
    }
    Hasher& hash(const GraphHash& h) { return word(h.hi).word(h.lo); }
    GraphHash finish() const {
        return {mix64(m_a ^ mix64(m_count)), mix64(m_b + mix64(m_count ^ 0x452821e638d01377ULL))};
    }

private:
    std::uint64_t m_a, m_b, m_count = 0;
};

DNNCOST_FUNC void attribute(Hasher& h, const Attribute& a);

inline bool is_floating_point(DataType t) {
    return t == DataType::float32 || t == DataType::float64 || t == DataType::float16 || t == DataType::bfloat16;
}

inline void tensor_type(Hasher& h, const Tensor& t) {
    h.word(static_cast<std::uint64_t>(t.dtype)).word(t.shape.size());
    for (auto d : t.shape) h.integer(d);
}
}  // namespace detail::hashing

/// The canonical hash of `g` (see the file comment).
/// @throws shape_error if the graph has a cycle
DNNCOST_FUNC GraphHash canonical_hash(const Graph& g);

}  // namespace dnncost::graph

#if !defined(DNNCOST_COMPILED)
#include <dnncost/graph/hash_impl.hpp>
#endif
