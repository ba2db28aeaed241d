#pragma once
/// @file kernel_batches.hpp
/// The kernel feature rows of one pricing call, grouped by the regressor that prices them, each
/// distinct row held once. The networks of a search share most of their layers, so most kernels
/// of a call repeat one another; a regressor's figure for a row does not depend on the other rows
/// of its batch, so predicting each distinct row once gives every kernel the figure it would get
/// on its own, at a fraction of the cost.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/device/kernel_figure_memo.hpp>
#include <dnncost/device/tabular_regressor.hpp>

namespace dnncost::device {

class KernelBatches {
public:
    /// Rows of `width` features for `regressors` regressors (numbered 0 .. regressors - 1).
    KernelBatches(std::size_t regressors, std::size_t width) { reset(regressors, width); }

    /// Empties the batches for `regressors` regressors and rows of `width`, keeping the storage
    /// of the rows before: a caller pricing one network per call reuses one object.
    void reset(std::size_t regressors, std::size_t width) {
        m_width = width;
        m_rows.resize(regressors);
        m_count.assign(regressors, 0);
        m_hashes.resize(regressors);
        m_uses.resize(regressors);
        for (std::size_t r = 0; r < regressors; ++r) {
            m_hashes[r].clear();
            m_uses[r].clear();
        }
        if (m_slots.empty() || m_slots.size() > 1024)
            m_slots.assign(64, Slot{});
        else if (m_filled > 0)
            std::fill(m_slots.begin(), m_slots.end(), Slot{});
        m_filled = 0;
    }

    /// Adds row `x` for regressor `r`: its figure will be added to `figures[target]`.
    /// @throws shape_error for a row of another width or a regressor out of range
    void add(std::size_t r, std::span<const double> x, std::size_t target) {
        if (r >= m_rows.size() || x.size() != m_width)
            raise<shape_error>("KernelBatches::add: regressor ", r, " of ", m_rows.size(), ", row of ", x.size(),
                               " features (expected ", m_width, ")");
        const auto row = new_row(r);
        std::copy(x.begin(), x.end(), row.begin());
        add_new_row(r, target);
    }

    /// Room for the next row of regressor `r`, for a caller that writes the features there (rather
    /// than into a row of its own that add() would copy); add_new_row() then adds it. Valid until
    /// the next call of new_row() or add_new_row() for `r`.
    /// @throws shape_error for a regressor out of range
    std::span<double> new_row(std::size_t r) {
        if (r >= m_rows.size()) raise<shape_error>("KernelBatches::new_row: regressor ", r, " of ", m_rows.size());
        auto& rows = m_rows[r];
        // a repeated row leaves its room in place for the next one
        const auto end = (m_count[r] + 1) * m_width;
        if (rows.size() < end) rows.resize(end);
        return {rows.data() + m_count[r] * m_width, m_width};
    }

    /// Adds the row written at new_row(r) for regressor `r`: its figure will be added to
    /// `figures[target]`.
    /// @throws shape_error for a regressor out of range
    void add_new_row(std::size_t r, std::size_t target) {
        if (r >= m_rows.size()) raise<shape_error>("KernelBatches::add_new_row: regressor ", r, " of ", m_rows.size());
        (void)new_row(r);  // room, had the caller not asked for it
        const std::size_t candidate = m_count[r];
        const auto x = row_of(r, candidate);
        const std::uint64_t h = hash_row(r, x);
        const std::size_t mask = m_slots.size() - 1;
        for (std::size_t i = static_cast<std::size_t>(h) & mask;; i = (i + 1) & mask) {
            Slot& s = m_slots[i];
            if (s.regressor == empty) {
                s = {h, r, candidate};
                ++m_count[r];
                m_hashes[r].push_back(h);
                m_uses[r].push_back({target, candidate});
                if (2 * ++m_filled > m_slots.size()) grow();
                return;
            }
            if (s.hash == h && s.regressor == r && same_bits(row_of(r, s.row), x)) {
                m_uses[r].push_back({target, s.row});
                return;
            }
        }
    }

    /// Distinct rows of regressor `r` so far.
    std::size_t distinct_rows(std::size_t r) const { return m_count.at(r); }

    /// Predicts each regressor's distinct rows in one call, regressors in order, and adds every
    /// figure to its targets in the order they were added. With `memo`, rows it remembers for a
    /// regressor are not predicted again, and the rows predicted are remembered: `memo` must be
    /// the memo of these regressors (numbered as here) and of no others.
    /// @throws shape_error for too few regressors or a target outside `figures`; whatever a
    ///         regressor's predict throws
    void predict_into(std::span<const TabularRegressor* const> regressors, std::span<double> figures,
                      KernelFigureMemo* memo = nullptr) {
        if (regressors.size() != m_rows.size())
            raise<shape_error>("KernelBatches::predict_into: ", regressors.size(), " regressors, expected ",
                               m_rows.size());
        auto& x = m_missing;
        auto& ms = m_figures;
        auto& found = m_found;
        for (std::size_t r = 0; r < m_rows.size(); ++r) {
            if (m_uses[r].empty()) continue;
            const auto n = m_count[r];
            const std::span<const double> rows(m_rows[r].data(), n * m_width);
            ms.assign(n, 0.0);
            found.assign(n, 0);
            if (memo) memo->find(r, rows, m_width, m_hashes[r], ms, found);
            std::size_t missing = 0;
            for (const auto f : found) missing += f ? 0 : 1;
            if (missing > 0) {
                x.resize(static_cast<Index>(missing), static_cast<Index>(m_width));
                std::size_t at = 0;
                for (std::size_t i = 0; i < n; ++i)  // Mat is row-major
                    if (!found[i])
                        std::memcpy(x.data() + at++ * m_width, rows.data() + i * m_width, m_width * sizeof(double));
                const auto y = regressors[r]->predict(x);
                at = 0;
                for (std::size_t i = 0; i < n; ++i)
                    if (!found[i]) ms[i] = y[at++];
                if (memo) memo->insert(r, rows, m_width, m_hashes[r], ms, found);
            }
            for (const auto& u : m_uses[r]) {
                if (u.target >= figures.size())
                    raise<shape_error>("KernelBatches::predict_into: target ", u.target, " of ", figures.size(),
                                       " figures");
                figures[u.target] += ms[u.row];
            }
        }
    }

private:
    struct Use {
        std::size_t target, row;
    };
    static constexpr std::size_t empty = ~std::size_t{0};
    /// A distinct row in the index: open addressing with linear probing over a power-of-two
    /// table, its hash kept to compare before the row's bits and to grow without hashing again.
    struct Slot {
        std::uint64_t hash = 0;
        std::size_t regressor = empty;
        std::size_t row = 0;
    };

    std::span<const double> row_of(std::size_t r, std::size_t row) const {
        return {m_rows[r].data() + row * m_width, m_width};
    }
    // each 64-bit word, mixed with a key of its position, enters as the product of its two
    // halves (a 32 x 32 -> 64-bit multiply: one instruction on any x86 vector width, where a
    // 64 x 64-bit one is several or none) plus the word itself, summed in eight lanes
    // (independent, so the loop vectorises), then folded: a kernel's row is a few dozen words,
    // hashed once per kernel priced; rows compare bit for bit, and equal bits give equal figures
    static std::uint64_t hash_row(std::size_t r, std::span<const double> x) {
        constexpr std::uint64_t mul = 0x9e3779b97f4a7c15ull;
        std::uint64_t lane[8] = {r + 1, 2, 3, 4, 5, 6, 7, 8};
        const auto mix = [](std::uint64_t w, std::size_t i) {
            const std::uint64_t k = w ^ (mul + (i << 32) + i);
            return (k & 0xffffffffu) * (k >> 32) + w;
        };
        const std::size_t n = x.size();
        std::size_t i = 0;
        for (; i + 8 <= n; i += 8)
            for (std::size_t j = 0; j < 8; ++j) {
                std::uint64_t w;
                std::memcpy(&w, &x[i + j], sizeof w);
                lane[j] += mix(w, i + j);
            }
        for (; i < n; ++i) {
            std::uint64_t w;
            std::memcpy(&w, &x[i], sizeof w);
            lane[i % 8] += mix(w, i);
        }
        std::uint64_t f = 0;
        for (const auto l : lane) f = (f ^ l ^ (l >> 31)) * mul;
        f ^= f >> 32;
        return f * mul ^ (f >> 29);
    }
    // bit for bit (a hit, the common case, reads every byte anyway)
    static bool same_bits(std::span<const double> a, std::span<const double> b) {
        return std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
    }
    void grow() {
        std::vector<Slot> old(2 * m_slots.size());
        old.swap(m_slots);
        const std::size_t mask = m_slots.size() - 1;
        for (const auto& s : old) {
            if (s.regressor == empty) continue;
            std::size_t i = static_cast<std::size_t>(s.hash) & mask;
            while (m_slots[i].regressor != empty) i = (i + 1) & mask;
            m_slots[i] = s;
        }
    }

    std::size_t m_width = 0;
    std::vector<std::vector<double>> m_rows;  ///< per regressor: its distinct rows, flat (and room for one more)
    std::vector<std::size_t> m_count;         ///< per regressor: its distinct rows
    std::vector<std::vector<std::uint64_t>> m_hashes;  ///< per regressor: each distinct row's hash
    std::vector<std::vector<Use>> m_uses;              ///< per regressor: where each added row's figure goes
    std::vector<Slot> m_slots;
    std::size_t m_filled = 0;
    // predict_into's rows to predict, figures and memo hits, kept for a caller that reuses the object
    Mat<double> m_missing;
    std::vector<double> m_figures;
    std::vector<std::uint8_t> m_found;
};

}  // namespace dnncost::device
