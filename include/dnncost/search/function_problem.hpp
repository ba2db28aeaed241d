#pragma once
/// @file function_problem.hpp
/// A search problem whose objectives are a run-time function: real genes within bounds, a fixed
/// number of minimised objectives. What a front end that cannot instantiate Nsga2 on its own type
/// (the Python module, whose objective is a Python callable) searches with; the compiled library
/// holds Nsga2<FunctionProblem> once.
#include <cmath>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/search/nsga2.hpp>
#include <dnncost/search/problem.hpp>

namespace dnncost::search {

class FunctionProblem {
public:
    using Genome = std::vector<double>;
    using Function = std::function<std::vector<double>(const Genome&)>;

    /// `evaluate` may be called from several threads at once when Options::threads > 1; a
    /// callable that serialises itself (one that takes Python's GIL) is fine.
    /// @throws config_error for no genes, a bound that is not finite or lower > upper, no
    ///         objectives, or no function
    FunctionProblem(std::vector<Bounds> bounds, std::size_t objectives, Function evaluate)
        : m_bounds(std::move(bounds)), m_objectives(objectives), m_evaluate(std::move(evaluate)) {
        if (m_bounds.empty()) raise<config_error>("FunctionProblem: no genes (bounds is empty)");
        for (std::size_t i = 0; i < m_bounds.size(); ++i) {
            const auto [lo, hi] = m_bounds[i];
            if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi)
                raise<config_error>("FunctionProblem: bounds of gene ", i, " are [", lo, ", ", hi,
                                    "]: they must be finite with lower <= upper");
        }
        if (m_objectives == 0) raise<config_error>("FunctionProblem: 0 objectives");
        if (!m_evaluate) raise<config_error>("FunctionProblem: no objective function");
    }

    std::size_t num_objectives() const { return m_objectives; }
    std::vector<Bounds> bounds() const { return m_bounds; }
    /// The function's objectives; Nsga2 checks their count and NaNs.
    std::vector<double> evaluate(const Genome& x) const { return m_evaluate(x); }

private:
    std::vector<Bounds> m_bounds;
    std::size_t m_objectives;
    Function m_evaluate;
};

#if defined(DNNCOST_COMPILED)
// Built once, in the compiled library (src/search.cpp).
extern template class Nsga2<FunctionProblem>;
#endif

}  // namespace dnncost::search
