#pragma once
/// @file count.hpp
/// The exact number of architectures in a search space. FBNet (9^22) and Once-for-All spaces
/// have more members than 64 bits hold, so the count is an arbitrary-precision unsigned integer
/// that supports what counting a space needs: products and sums of small counts.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dnncost::spaces {

/// Unsigned integer of any size, stored as base-10^9 limbs (least significant first).
class Count {
public:
    Count() = default;
    Count(std::uint64_t v) {  // NOLINT(google-explicit-constructor): counts read like numbers
        while (v) {
            m_limbs.push_back(static_cast<std::uint32_t>(v % base));
            v /= base;
        }
    }

    friend Count operator+(const Count& a, const Count& b) {
        Count r;
        std::uint64_t carry = 0;
        for (std::size_t i = 0; i < std::max(a.m_limbs.size(), b.m_limbs.size()) || carry; ++i) {
            const std::uint64_t s = carry + a.limb(i) + b.limb(i);
            r.m_limbs.push_back(static_cast<std::uint32_t>(s % base));
            carry = s / base;
        }
        return r;
    }
    friend Count operator*(const Count& a, const Count& b) {
        Count r;
        if (a.m_limbs.empty() || b.m_limbs.empty()) return r;
        std::vector<std::uint64_t> acc(a.m_limbs.size() + b.m_limbs.size() + 1, 0);
        for (std::size_t i = 0; i < a.m_limbs.size(); ++i) {
            std::uint64_t carry = 0;
            for (std::size_t j = 0; j < b.m_limbs.size() || carry; ++j) {
                const std::uint64_t cur = acc[i + j] + carry + std::uint64_t{a.m_limbs[i]} * b.limb(j);
                acc[i + j] = cur % base;
                carry = cur / base;
            }
        }
        while (!acc.empty() && acc.back() == 0) acc.pop_back();
        for (auto x : acc) r.m_limbs.push_back(static_cast<std::uint32_t>(x));
        return r;
    }
    Count& operator+=(const Count& o) { return *this = *this + o; }
    Count& operator*=(const Count& o) { return *this = *this * o; }
    friend bool operator==(const Count&, const Count&) = default;

    /// b^e.
    static Count power(std::uint64_t b, unsigned e) {
        Count r(1);
        for (unsigned i = 0; i < e; ++i) r *= Count(b);
        return r;
    }

    /// Decimal digits, e.g. "984770902183611232881".
    std::string to_string() const {
        if (m_limbs.empty()) return "0";
        std::string s = std::to_string(m_limbs.back());
        for (std::size_t i = m_limbs.size() - 1; i-- > 0;) {
            const std::string part = std::to_string(m_limbs[i]);
            s += std::string(9 - part.size(), '0') + part;
        }
        return s;
    }
    /// The value when it fits 64 bits.
    std::optional<std::uint64_t> to_uint64() const {
        std::uint64_t v = 0;
        for (std::size_t i = m_limbs.size(); i-- > 0;)
            if (__builtin_mul_overflow(v, std::uint64_t{base}, &v) || __builtin_add_overflow(v, m_limbs[i], &v))
                return std::nullopt;
        return v;
    }
    /// log10 of the value (-inf for zero), accurate to double precision.
    double log10() const {
        if (m_limbs.empty()) return -HUGE_VAL;
        // the two leading limbs carry all the precision a double holds
        const std::size_t n = m_limbs.size();
        double lead = m_limbs[n - 1];
        if (n >= 2) lead = lead * base + m_limbs[n - 2];
        const double exponent = 9.0 * static_cast<double>(n >= 2 ? n - 2 : 0);
        return std::log10(lead) + exponent;
    }

private:
    static constexpr std::uint64_t base = 1000000000;
    std::uint64_t limb(std::size_t i) const { return i < m_limbs.size() ? m_limbs[i] : 0; }
    std::vector<std::uint32_t> m_limbs;
};

}  // namespace dnncost::spaces
