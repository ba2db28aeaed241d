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
        return m_size;
    }

    /// For each row i of regressor `r` (its features at rows[i * width ..], its hash hashes[i]):
    /// found[i] = 1 and figures[i] its figure when remembered, found[i] = 0 otherwise.
    void find(std::size_t r, std::span<const double> rows, std::size_t width, std::span<const std::uint64_t> hashes,
              std::span<double> figures, std::span<std::uint8_t> found) const {
        const std::lock_guard lock(m_mutex);
        for (std::size_t i = 0; i < hashes.size(); ++i) {
            found[i] = 0;
            if (m_slots.empty()) continue;
            const auto x = rows.subspan(i * width, width);
            const std::size_t mask = m_slots.size() - 1;
            for (std::size_t s = static_cast<std::size_t>(hashes[i]) & mask;; s = (s + 1) & mask) {
                const Slot& slot = m_slots[s];
                if (slot.regressor == empty) break;
                if (slot.hash == hashes[i] && slot.regressor == r && slot.width == width &&
                    std::memcmp(m_rows.data() + slot.row, x.data(), x.size_bytes()) == 0) {
                    figures[i] = slot.figure;
                    found[i] = 1;
                    break;
                }
            }
        }
    }

    /// Remembers the figures of the rows of regressor `r` not found (found[i] == 0), as find() reads them.
    void insert(std::size_t r, std::span<const double> rows, std::size_t width, std::span<const std::uint64_t> hashes,
                std::span<const double> figures, std::span<const std::uint8_t> found) {
        const std::lock_guard lock(m_mutex);
        for (std::size_t i = 0; i < hashes.size(); ++i) {
            if (found[i] || m_capacity == 0) continue;
            if (m_size >= m_capacity) clear_locked();
            if (m_slots.empty()) m_slots.resize(64);
            const auto x = rows.subspan(i * width, width);
            const std::size_t mask = m_slots.size() - 1;
            std::size_t s = static_cast<std::size_t>(hashes[i]) & mask;
            bool present = false;  // another thread may have remembered it since find()
            for (; m_slots[s].regressor != empty; s = (s + 1) & mask) {
                const Slot& slot = m_slots[s];
                if (slot.hash == hashes[i] && slot.regressor == r && slot.width == width &&
                    std::memcmp(m_rows.data() + slot.row, x.data(), x.size_bytes()) == 0) {
                    present = true;
                    break;
                }
            }
            if (present) continue;
            m_slots[s] = {hashes[i], r, width, m_rows.size(), figures[i]};
            m_rows.insert(m_rows.end(), x.begin(), x.end());
            if (2 * ++m_size > m_slots.size()) grow();
        }
    }

private:
    static constexpr std::size_t empty = ~std::size_t{0};
    struct Slot {
        std::uint64_t hash = 0;
        std::size_t regressor = empty;
        std::size_t width = 0;
        std::size_t row = 0;  ///< offset of its features in m_rows
        double figure = 0;
    };

    void clear_locked() {
        m_slots.clear();
        m_rows.clear();
        m_size = 0;
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

    mutable std::mutex m_mutex;
    std::size_t m_capacity;
    std::vector<Slot> m_slots;  ///< open addressing, linear probing, a power of two long
    std::vector<double> m_rows;
    std::size_t m_size = 0;
};

}  // namespace dnncost::device
