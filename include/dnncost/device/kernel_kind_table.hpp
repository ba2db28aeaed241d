#pragma once
/// @file kernel_kind_table.hpp
/// The kind keys of the kernels that pricing calls meet, each worked out once. Most kernels share
/// their key with every kernel of the same kind string and variant (kernel_kind()), and calls
/// meet the same few kinds again and again. A kernel graph numbers its kinds (Kernel::kind_id),
/// so that within one graph a kernel's entry is found by its number, without reading a string.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_kind.hpp>
#include <dnncost/graph/flat_view.hpp>

namespace dnncost::device {

/// Kind keys by kind string and variant, each with a value of the caller's (the regressor that
/// prices the kind, say).
template <class Value>
class KernelKindTable {
public:
    struct Entry {
        KernelKind kind;
        Value value{};
    };

    /// To be called before the kernels of another kernel graph: kind numbers belong to one graph.
    void next_graph() { m_by_number.clear(); }
    /// Kind strings met so far.
    std::size_t size() const { return m_by_string.size(); }

    /// The entry of kernel `k` of `kg` (a kernel graph of the graph of `view`: the one met since
    /// next_graph()).
    /// `value_of(const KernelKind&)` gives the caller's value for a kind the first time the kind
    /// is met, and for every kernel whose kind is its own (not shared). The entry is valid until
    /// the next call.
    template <class ValueOf>
    const Entry& find(const graph::FlatView& view, const KernelGraph& kg, const Kernel& k, ValueOf&& value_of) {
        const int variant = kernel_kind_variant(view, k);
        const Entry** numbered = nullptr;
        if (k.kind_id >= 0) {
            const auto at = 3 * static_cast<std::size_t>(k.kind_id) + static_cast<std::size_t>(variant);
            if (at >= m_by_number.size()) m_by_number.resize(at + 1, nullptr);
            if (m_by_number[at]) return *m_by_number[at];
            numbered = &m_by_number[at];
        }
        auto& seen = m_by_string[k.kind][static_cast<std::size_t>(variant)];
        if (!seen) {
            bool shared = true;
            Entry e{kernel_kind(view.graph(), kg, k, variant, shared), Value{}};
            e.value = value_of(std::as_const(e.kind));
            if (!shared) {
                m_unshared = std::move(e);
                return m_unshared;
            }
            seen = std::move(e);
        }
        if (numbered) *numbered = &*seen;
        return *seen;
    }

private:
    /// by kind string, then variant (kernel_kind_variant()); a map's values stay where they are
    std::unordered_map<std::string, std::array<std::optional<Entry>, 3>> m_by_string;
    /// of the current graph, per kind number and variant (3 * number + variant): an entry above
    std::vector<const Entry*> m_by_number;
    Entry m_unshared;  ///< the last kernel's whose kind is its own
};

}  // namespace dnncost::device
