#pragma once
/// @file search.hpp
/// The whole multi-objective search toolbox: problem concept, operators, NSGA-II, Pareto
/// utilities, hypervolume, IGD/IGD+, the standard test problems and a run-time function problem.
#include <dnncost/search/function_problem.hpp>
#include <dnncost/search/hypervolume.hpp>
#include <dnncost/search/indicators.hpp>
#include <dnncost/search/nsga2.hpp>
#include <dnncost/search/operators.hpp>
#include <dnncost/search/pareto.hpp>
#include <dnncost/search/problem.hpp>
#include <dnncost/search/problems.hpp>
