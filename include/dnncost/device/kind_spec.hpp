#pragma once
/// @file kind_spec.hpp
/// A kernel kind as a value: the unit it is anchored on and what it fused behind it, in order.
///
/// Kinds are written, in kernel graphs, saved device models and sample files, as their units
/// joined by '+'. Two vocabularies share that form: a kernel's kind string names its executed
/// units (an operator or a pattern first: "Conv+Add+Relu"), a kind key names a family and the
/// epilogues it fused ("Conv+Add+Act", kernel_kind.hpp). This type is the one place that reads
/// and writes the form; the string stays what is saved. Pulls in the standard library only.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace dnncost::device {

struct KindSpec {
    std::string anchor;                ///< the first unit: an operator, a pattern or a family
    std::vector<std::string> fusions;  ///< the units fused behind it, in order

    /// The kind written `s`: every '+' separates two units, so str() gives `s` back.
    static KindSpec parse(std::string_view s) {
        KindSpec k;
        const auto head = std::min(s.find(separator), s.size());
        k.anchor = s.substr(0, head);
        for (auto start = head + 1; start <= s.size();) {
            const auto end = std::min(s.find(separator, start), s.size());
            k.fusions.emplace_back(s.substr(start, end - start));
            start = end + 1;
        }
        return k;
    }
    /// The anchor of the kind written `s`, without reading the rest: for a caller that meets a
    /// kernel at a time and needs no more.
    static std::string_view anchor_of(std::string_view s) { return s.substr(0, s.find(separator)); }
    /// Appends `unit` to the kind written `s` (the anchor when `s` is empty), in place: for the
    /// kernel pass, which reuses a kernel's storage.
    static void append(std::string& s, std::string_view unit) {
        if (!s.empty()) s += separator;
        s += unit;
    }

    /// The written form: the anchor, then each fusion after a '+'.
    std::string str() const {
        std::string s = anchor;
        for (const auto& f : fusions) {
            s += separator;
            s += f;
        }
        return s;
    }
    /// Whether `unit` is one of the fusions (the anchor not counted).
    bool fuses(std::string_view unit) const { return std::find(fusions.begin(), fusions.end(), unit) != fusions.end(); }
    /// Whether `unit` is the anchor or one of the fusions.
    bool has_unit(std::string_view unit) const { return anchor == unit || fuses(unit); }

    friend bool operator==(const KindSpec&, const KindSpec&) = default;

    static constexpr char separator = '+';
};

}  // namespace dnncost::device
