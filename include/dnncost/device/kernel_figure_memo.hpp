#pragma once
/// @file kernel_figure_memo.hpp
/// A device model's regressor figures of the kernel rows it priced before, kept across pricing
/// calls. A search prices one population after another, often one network per call, and the
/// networks of a space are built from a few hundred distinct kernels: a row priced once need not
/// walk its regressor's trees again. A figure does not depend on the other rows of its batch
/// (kernel_batches.hpp), so a remembered figure is bit for bit the one the regressor would give.
///
/// Bounded: once it holds `capacity` rows it forgets them all and starts again (a search whose
/// kernels never repeat pays one lookup per distinct row and call, and no more memory). Safe to
/// use from several threads: one lock around each call's lookups and one around its insertions.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

namespace dnncost::device {

class KernelFigureMemo {
public:
    /// Rows kept before the memo starts again; 0 keeps none.
    static constexpr std::size_t default_capacity = 16384;

    explicit KernelFigureMemo(std::size_t capacity = default_capacity) : m_capacity(capacity) {}
    // a copy of a model starts with a memo of its own, empty: figures belong to one model's regressors
    KernelFigureMemo(const KernelFigureMemo& o) : m_capacity(o.capacity()) {}
    KernelFigureMemo& operator=(const KernelFigureMemo& o) {
        if (this != &o) set_capacity(o.capacity());
        return *this;
    }

    std::size_t capacity() const {
        const std::lock_guard lock(m_mutex);
        return m_capacity;
    }
    /// Sets the bound and forgets every row (0: remember none).
    void set_capacity(std::size_t rows) {
        const std::lock_guard lock(m_mutex);
        m_capacity = rows;
        clear_locked();
    }
    /// Forgets every row (say, after the regressors changed).
    void clear() {
        const std::lock_guard lock(m_mutex);
        clear_locked();
    }
    /// Rows remembered now.
    std::size_t size() const {
        const std::lock_guard lock(m_mutex);
        return m_index.size();
    }

    /// For each row i of regressor `r` (its features at rows[i * width ..], its hash hashes[i]):
    /// found[i] = 1 and figures[i] its figure when remembered, found[i] = 0 otherwise.
    void find(std::size_t r, std::span<const double> rows, std::size_t width, std::span<const std::uint64_t> hashes,
              std::span<double> figures, std::span<std::uint8_t> found) const {
        const std::lock_guard lock(m_mutex);
        for (std::size_t i = 0; i < hashes.size(); ++i) {
            const Entry* e = lookup(r, rows.subspan(i * width, width), hashes[i]);
            found[i] = e != nullptr;
            if (e) figures[i] = e->figure;
        }
    }

    /// Remembers the figures of the rows of regressor `r` not found (found[i] == 0), as find() reads them.
    void insert(std::size_t r, std::span<const double> rows, std::size_t width, std::span<const std::uint64_t> hashes,
                std::span<const double> figures, std::span<const std::uint8_t> found) {
        const std::lock_guard lock(m_mutex);
        for (std::size_t i = 0; i < hashes.size(); ++i) {
            if (found[i] || m_capacity == 0) continue;
            const auto x = rows.subspan(i * width, width);
            if (lookup(r, x, hashes[i])) continue;  // another thread remembered it since find()
            if (m_index.size() >= m_capacity) clear_locked();
            m_index.emplace(hashes[i], Entry{r, m_rows.size(), width, figures[i]});
            m_rows.insert(m_rows.end(), x.begin(), x.end());
        }
    }

private:
    struct Entry {
        std::size_t regressor = 0;
        std::size_t row = 0;  ///< offset of its features in m_rows
        std::size_t width = 0;
        double figure = 0;
    };

    // rows compare bit for bit, as KernelBatches tells them apart
    const Entry* lookup(std::size_t r, std::span<const double> x, std::uint64_t hash) const {
        const auto [first, last] = m_index.equal_range(hash);
        for (auto it = first; it != last; ++it) {
            const Entry& e = it->second;
            if (e.regressor == r && e.width == x.size() &&
                std::memcmp(m_rows.data() + e.row, x.data(), x.size_bytes()) == 0)
                return &e;
        }
        return nullptr;
    }
    void clear_locked() {
        m_index.clear();
        m_rows.clear();
    }

    mutable std::mutex m_mutex;
    std::size_t m_capacity;
    std::unordered_multimap<std::uint64_t, Entry> m_index;  ///< by the row's hash
    std::vector<double> m_rows;
};

}  // namespace dnncost::device
