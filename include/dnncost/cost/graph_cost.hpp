#pragma once
/// @file graph_cost.hpp
/// The pricing interface (source.hpp) with the two sources of this layer: the roofline model
/// (roofline_cost.hpp) and measured operator tables (table_cost.hpp). Trained estimators join
/// through estimators/estimator_cost.hpp, which sits at the estimators layer.
#include <dnncost/cost/roofline_cost.hpp>
#include <dnncost/cost/source.hpp>
#include <dnncost/cost/table_cost.hpp>
