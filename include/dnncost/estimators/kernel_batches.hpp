#pragma once
/// @file kernel_batches.hpp
/// The kernel feature rows of one pricing call, grouped by the regressor that prices them, each
/// distinct row held once. The networks of a search share most of their layers, so most kernels
/// of a call repeat one another; a regressor's figure for a row does not depend on the other rows
/// of its batch, so predicting each distinct row once gives every kernel the figure it would get
/// on its own, at a fraction of the cost.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/estimators/tabular_regressor.hpp>

namespace dnncost::estimators {

class KernelBatches {
public:
    /// Rows of `width` features for `regressors` regressors (numbered 0 .. regressors - 1).
    KernelBatches(std::size_t regressors, std::size_t width)
        : m_width(width),
          m_rows(regressors),
          m_uses(regressors),
          m_index(64, RowHash{this}, RowEqual{this}) {}
    // the row index refers back to this object
    KernelBatches(const KernelBatches&) = delete;
    KernelBatches& operator=(const KernelBatches&) = delete;

    /// Adds row `x` for regressor `r`: its figure will be added to `figures[target]`.
    /// @throws shape_error for a row of another width or a regressor out of range
    void add(std::size_t r, std::span<const double> x, std::size_t target) {
        if (r >= m_rows.size() || x.size() != m_width)
            raise<shape_error>("KernelBatches::add: regressor ", r, " of ", m_rows.size(), ", row of ", x.size(),
                               " features (expected ", m_width, ")");
        auto& rows = m_rows[r];
        const auto candidate = rows.size() / m_width;
        rows.insert(rows.end(), x.begin(), x.end());
        const auto [it, fresh] = m_index.insert(Key{r, candidate});
        if (!fresh) rows.resize(rows.size() - m_width);
        m_uses[r].push_back({target, it->row});
    }

    /// Distinct rows of regressor `r` so far.
    std::size_t distinct_rows(std::size_t r) const { return m_rows.at(r).size() / m_width; }

    /// Predicts each regressor's distinct rows in one call, regressors in order, and adds every
    /// figure to its targets in the order they were added.
    /// @throws shape_error for too few regressors or a target outside `figures`; whatever a
    ///         regressor's predict throws
    void predict_into(std::span<const TabularRegressor* const> regressors, std::span<double> figures) const {
        if (regressors.size() != m_rows.size())
            raise<shape_error>("KernelBatches::predict_into: ", regressors.size(), " regressors, expected ",
                               m_rows.size());
        Mat<double> x;
        for (std::size_t r = 0; r < m_rows.size(); ++r) {
            if (m_uses[r].empty()) continue;
            const auto n = static_cast<Index>(m_rows[r].size() / m_width);
            x.resize(n, static_cast<Index>(m_width));
            std::memcpy(x.data(), m_rows[r].data(), m_rows[r].size() * sizeof(double));  // Mat is row-major
            const auto ms = regressors[r]->predict(x);
            for (const auto& u : m_uses[r]) {
                if (u.target >= figures.size())
                    raise<shape_error>("KernelBatches::predict_into: target ", u.target, " of ", figures.size(),
                                       " figures");
                figures[u.target] += ms[u.row];
            }
        }
    }

private:
    struct Key {
        std::size_t regressor, row;
    };
    struct Use {
        std::size_t target, row;
    };
    std::span<const double> row_of(const Key& k) const {
        return {m_rows[k.regressor].data() + k.row * m_width, m_width};
    }
    // rows compare bit for bit: equal bits give equal figures
    struct RowHash {
        const KernelBatches* self;
        // the row's 64-bit words mixed in four independent chains (a kernel's row is a few
        // dozen words, hashed once per kernel priced), then folded
        std::size_t operator()(const Key& k) const {
            const auto x = self->row_of(k);
            constexpr std::uint64_t mul = 0x9e3779b97f4a7c15ull;
            std::uint64_t h[4] = {k.regressor + 1, 2, 3, 4};
            std::size_t i = 0;
            for (; i < x.size(); ++i) {
                std::uint64_t w;
                std::memcpy(&w, &x[i], sizeof w);
                auto& c = h[i % 4];
                c = (c ^ w ^ (w >> 29)) * mul;
            }
            std::uint64_t r = ((h[0] * mul ^ h[1]) * mul ^ h[2]) * mul ^ h[3];
            r ^= r >> 32;
            return static_cast<std::size_t>(r * mul ^ (r >> 29));
        }
    };
    struct RowEqual {
        const KernelBatches* self;
        bool operator()(const Key& a, const Key& b) const {
            return a.regressor == b.regressor &&
                   std::memcmp(self->row_of(a).data(), self->row_of(b).data(), self->m_width * sizeof(double)) == 0;
        }
    };

    std::size_t m_width;
    std::vector<std::vector<double>> m_rows;  ///< per regressor: its distinct rows, flat
    std::vector<std::vector<Use>> m_uses;     ///< per regressor: where each added row's figure goes
    std::unordered_set<Key, RowHash, RowEqual> m_index;
};

}  // namespace dnncost::estimators
