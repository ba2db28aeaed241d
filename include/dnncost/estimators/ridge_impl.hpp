#pragma once
/// @file ridge_impl.hpp
/// The definitions of ridge.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by ridge.hpp in header-only mode.
#include <dnncost/estimators/ridge.hpp>

DNNCOST_FUNC auto dnncost::estimators::RidgeFit::NormalEquations::of(const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
                                                                     Loss loss, double degenerate)
    -> std::optional<NormalEquations> {
    const Eigen::Index n = x.rows();
    NormalEquations ne;
    ne.w.resize(n);
    for (Eigen::Index i = 0; i < n; ++i)
        ne.w(i) = loss == Loss::absolute ? 1.0 : (y(i) < degenerate ? 0.0 : 1.0 / (y(i) * y(i)));
    const double w_mean = n > 0 ? ne.w.mean() : 0.0;
    if (!(w_mean > 0)) return std::nullopt;
    ne.w /= w_mean;
    ne.xtwx = x.transpose() * ne.w.asDiagonal() * x / static_cast<double>(n);
    ne.xtwy = x.transpose() * (ne.w.asDiagonal() * y) / static_cast<double>(n);
    return ne;
}

DNNCOST_FUNC auto dnncost::estimators::RidgeFit::NormalEquations::penalised(double lambda) const -> Eigen::MatrixXd {
    Eigen::MatrixXd a = xtwx;
    for (Eigen::Index j = 1; j < a.rows(); ++j) a(j, j) += lambda;
    a(0, 0) += 1e-12;  // keeps the system definite when every weight but few is zero
    return a;
}

DNNCOST_FUNC auto dnncost::estimators::RidgeFit::NormalEquations::factor(double lambda) const
    -> Eigen::LDLT<Eigen::MatrixXd> {
    return Eigen::LDLT<Eigen::MatrixXd>(penalised(lambda));
}

DNNCOST_FUNC auto dnncost::estimators::RidgeFit::NormalEquations::beta(double lambda) const -> Eigen::VectorXd {
    return factor(lambda).solve(xtwy);
}

DNNCOST_FUNC auto dnncost::estimators::RidgeFit::NormalEquations::principal(const Eigen::MatrixXd& a,
                                                                            const std::vector<Eigen::Index>& idx)
    -> Eigen::MatrixXd {
    const auto k = static_cast<Eigen::Index>(idx.size());
    Eigen::MatrixXd sub(k, k);
    for (Eigen::Index r = 0; r < k; ++r)
        for (Eigen::Index c = 0; c < k; ++c)
            sub(r, c) = a(idx[static_cast<std::size_t>(r)], idx[static_cast<std::size_t>(c)]);
    return sub;
}

DNNCOST_FUNC auto dnncost::estimators::RidgeFit::NormalEquations::nonnegative_beta(double lambda,
                                                                                   const Eigen::VectorXd& start) const
    -> Eigen::VectorXd {
    const Eigen::MatrixXd a = penalised(lambda);
    const Eigen::Index p = a.rows();
    Eigen::VectorXd b = start;
    std::vector<char> free(static_cast<std::size_t>(p), 0);
    free[0] = 1;  // the intercept is never held
    for (Eigen::Index j = 1; j < p; ++j) {
        b(j) = std::max(0.0, b(j));
        free[static_cast<std::size_t>(j)] = b(j) > 0;
    }
    // the minimiser over the free coefficients, the held ones at zero
    std::vector<Eigen::Index> idx;
    const auto free_minimiser = [&] {
        idx.clear();
        for (Eigen::Index j = 0; j < p; ++j)
            if (free[static_cast<std::size_t>(j)]) idx.push_back(j);
        const auto k = static_cast<Eigen::Index>(idx.size());
        Eigen::VectorXd rhs(k);
        for (Eigen::Index r = 0; r < k; ++r) rhs(r) = xtwy(idx[static_cast<std::size_t>(r)]);
        const Eigen::VectorXd zk = principal(a, idx).ldlt().solve(rhs);
        Eigen::VectorXd z = Eigen::VectorXd::Zero(p);
        for (Eigen::Index r = 0; r < k; ++r) z(idx[static_cast<std::size_t>(r)]) = zk(r);
        return z;
    };
    // Move from the feasible b toward the free set's minimiser, holding at zero each
    // coefficient that reaches it on the way, until the minimiser itself is feasible.
    const auto settle = [&] {
        for (Eigen::Index guard = 0; guard <= p; ++guard) {
            const Eigen::VectorXd z = free_minimiser();
            double step = 1.0;
            Eigen::Index blocking = -1;
            for (Eigen::Index j = 1; j < p; ++j)
                if (free[static_cast<std::size_t>(j)] && z(j) <= 0.0) {
                    const double s = b(j) / (b(j) - z(j));
                    if (s < step) step = s, blocking = j;
                }
            b += step * (z - b);
            if (blocking < 0) return;
            // The blocking coefficient is held at exactly zero: rounding may leave it a hair above,
            // and a step toward it would then be of zero length again and again.
            free[static_cast<std::size_t>(blocking)] = 0;
            b(blocking) = 0.0;
            for (Eigen::Index j = 1; j < p; ++j)
                if (free[static_cast<std::size_t>(j)] && b(j) <= 0.0) {
                    free[static_cast<std::size_t>(j)] = 0;
                    b(j) = 0.0;
                }
        }
    };
    settle();
    // Free the held coefficient whose gradient points most steeply into the feasible
    // region, until none does (the KKT conditions); scaled so that the tolerance is relative.
    const double tol = 1e-12 * std::max(1.0, xtwy.cwiseAbs().maxCoeff());
    std::vector<char> refused(static_cast<std::size_t>(p), 0);
    for (Eigen::Index iter = 0; iter < 4 * p + 16; ++iter) {
        const Eigen::VectorXd grad = a * b - xtwy;
        Eigen::Index enter = -1;
        double steepest = -tol;
        for (Eigen::Index j = 1; j < p; ++j)
            if (!free[static_cast<std::size_t>(j)] && !refused[static_cast<std::size_t>(j)] && grad(j) < steepest) {
                steepest = grad(j);
                enter = j;
            }
        if (enter < 0) break;
        free[static_cast<std::size_t>(enter)] = 1;
        if (free_minimiser()(enter) <= 0.0) {
            // rounding: freeing it would not move it off zero; leave it held this round
            free[static_cast<std::size_t>(enter)] = 0;
            refused[static_cast<std::size_t>(enter)] = 1;
            continue;
        }
        std::fill(refused.begin(), refused.end(), 0);
        settle();
    }
    return b;
}

DNNCOST_FUNC auto dnncost::estimators::RidgeFit::solve(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, Loss loss,
                                                       double lambda, double degenerate) -> Eigen::VectorXd {
    const auto ne = NormalEquations::of(x, y, loss, degenerate);
    if (!ne)
        raise<error>(
            "additive: no training item has weight under the relative loss (all below the degenerate threshold)");
    return ne->beta(lambda);
}

DNNCOST_FUNC auto dnncost::estimators::RidgeFit::select(const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
                                                        const Eigen::MatrixXd* x_val, const Eigen::VectorXd* y_val,
                                                        double degenerate, const Scorer& scorer, Signs signs)
    -> RidgeFit {
    // absolute rather than squared relative error, so that a few poorly modelled items do not decide
    auto relative_score = [degenerate](const Eigen::VectorXd& truth, const Eigen::VectorXd& residual) {
        double total = 0.0;
        std::size_t counted = 0;
        for (Eigen::Index i = 0; i < truth.size(); ++i) {
            if (truth(i) < degenerate) continue;
            total += std::abs(residual(i) / truth(i));
            ++counted;
        }
        return counted ? total / static_cast<double>(counted) : std::numeric_limits<double>::infinity();
    };
    RidgeFit best;
    best.loo = x_val == nullptr;
    for (Loss loss : {Loss::relative, Loss::absolute}) {
        const auto ne = NormalEquations::of(x, y, loss, degenerate);
        if (!ne) continue;
        for (int half_decade = -16; half_decade <= 4; ++half_decade) {
            const double lambda = std::pow(10.0, 0.5 * half_decade);
            const auto ldlt = ne->factor(lambda);
            const Eigen::VectorXd free_beta = ldlt.solve(ne->xtwy);
            // the non-negative variant first, so that it wins a tie
            for (const bool held : {true, false}) {
                if ((held && signs == Signs::free) || (!held && signs == Signs::nonnegative)) continue;
                const Eigen::VectorXd beta = held ? ne->nonnegative_beta(lambda, free_beta) : free_beta;
                double score;
                if (x_val && scorer) {
                    score = scorer(*x_val * beta, *y_val);
                } else if (x_val) {
                    score = relative_score(*y_val, *x_val * beta - *y_val);
                } else {
                    score = relative_score(y, loo_residuals(x, y, *ne, lambda, ldlt, beta, held));
                }
                if (std::isfinite(score) && score < best.score) {
                    best.score = score;
                    best.lambda = lambda;
                    best.loss = loss;
                    best.beta = beta;
                    best.nonnegative = held;
                }
            }
        }
    }
    if (best.beta.size() == 0) raise<error>("additive: ridge regression failed for every lambda (non-finite data?)");
    return best;
}

DNNCOST_FUNC auto dnncost::estimators::RidgeFit::loo_residuals(const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
                                                               const NormalEquations& ne, double lambda,
                                                               const Eigen::LDLT<Eigen::MatrixXd>& free_factor,
                                                               const Eigen::VectorXd& beta, bool held)
    -> Eigen::VectorXd {
    const Eigen::Index n = x.rows();
    // the rows and columns of the coefficients not held at zero
    Eigen::MatrixXd held_x;
    Eigen::LDLT<Eigen::MatrixXd> held_factor;
    if (held) {
        std::vector<Eigen::Index> active;
        for (Eigen::Index j = 0; j < beta.size(); ++j)
            if (j == 0 || beta(j) > 0) active.push_back(j);
        const auto k = static_cast<Eigen::Index>(active.size());
        held_x.resize(n, k);
        for (Eigen::Index p = 0; p < k; ++p) held_x.col(p) = x.col(active[static_cast<std::size_t>(p)]);
        held_factor.compute(NormalEquations::principal(ne.penalised(lambda), active));
    }
    const auto& xa = held ? held_x : x;
    const auto& ldlt = held ? held_factor : free_factor;
    Eigen::VectorXd residual = y - x * beta;
    for (Eigen::Index i = 0; i < n; ++i) {
        const Eigen::VectorXd xi = xa.row(i).transpose();
        const double leverage = ne.w(i) * xi.dot(ldlt.solve(xi)) / static_cast<double>(n);
        residual(i) /= std::max(1e-12, 1.0 - leverage);
    }
    return residual;
}
