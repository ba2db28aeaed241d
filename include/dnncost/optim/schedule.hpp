#pragma once
/// @file schedule.hpp
/// Learning-rate schedule on a validation metric (ReduceLROnPlateau) and early stopping.
/// Both treat the metric as "lower is better".
#include <algorithm>
#include <limits>

#include <dnncost/core/error.hpp>

namespace dnncost::optim {

/// Multiply the learning rate by `factor` after `patience` epochs without an improvement of
/// more than `threshold` (relative).
class ReduceLROnPlateau {
public:
    ReduceLROnPlateau(double factor = 0.5, int patience = 10, double min_lr = 1e-6, double threshold = 1e-4)
        : m_factor(factor), m_patience(patience), m_min_lr(min_lr), m_threshold(threshold) {
        if (!(factor > 0 && factor < 1))
            raise<config_error>("ReduceLROnPlateau: factor must be in (0, 1), got ", factor);
        if (patience < 0) raise<config_error>("ReduceLROnPlateau: patience must be >= 0, got ", patience);
    }
    /// Feed one epoch's metric; returns the learning rate to use next.
    double step(double metric, double lr) {
        if (metric < m_best * (1 - m_threshold) || m_best == std::numeric_limits<double>::infinity()) {
            m_best = metric;
            m_bad = 0;
            return lr;
        }
        if (++m_bad > m_patience) {
            m_bad = 0;
            return std::max(m_min_lr, lr * m_factor);
        }
        return lr;
    }

private:
    double m_factor;
    int m_patience;
    double m_min_lr, m_threshold;
    double m_best = std::numeric_limits<double>::infinity();
    int m_bad = 0;
};

/// Stop after `patience` epochs without improvement; remembers the best epoch.
class EarlyStopping {
public:
    explicit EarlyStopping(int patience = 50) : m_patience(patience) {
        if (patience < 1) raise<config_error>("EarlyStopping: patience must be >= 1, got ", patience);
    }
    /// Returns true if this metric is a new best (the caller then snapshots the weights).
    bool update(double metric, int epoch) {
        if (metric < m_best) {
            m_best = metric;
            m_best_epoch = epoch;
            m_bad = 0;
            return true;
        }
        ++m_bad;
        return false;
    }
    bool should_stop() const { return m_bad >= m_patience; }
    double best() const { return m_best; }
    int best_epoch() const { return m_best_epoch; }

private:
    int m_patience;
    double m_best = std::numeric_limits<double>::infinity();
    int m_best_epoch = -1;
    int m_bad = 0;
};

}  // namespace dnncost::optim
