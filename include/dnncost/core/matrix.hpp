#pragma once
/// @file matrix.hpp
/// The dense matrix types shared by feature batches and the GNN engine. Activations are
/// row-major (one row per node or graph) so that a node's features are contiguous.
#include <Eigen/Core>

namespace dnncost {

using Index = Eigen::Index;
/// Row-major dynamic matrix: the activation and parameter type.
template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
/// Row vector of the same layout.
template <class T>
using Vec = Eigen::Matrix<T, 1, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace dnncost
