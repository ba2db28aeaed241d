#pragma once
/// @file dnncost.hpp
/// Umbrella header: the whole header-only core. The ONNX importer is not included here (it
/// needs protobuf); include <dnncost/io/onnx.hpp> and link dnncost::onnx for it. Nor are device
/// models, slow to compile: include <dnncost/device/device_model.hpp> where one is loaded or
/// built (including it registers the "device" preset).
#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/core/parallel.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/cost/memory.hpp>
#include <dnncost/estimators/additive.hpp>
#include <dnncost/estimators/ensemble.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/estimators/gnn_estimator.hpp>
#include <dnncost/estimators/presets.hpp>
#include <dnncost/estimators/registry.hpp>
#include <dnncost/features/batch.hpp>
#include <dnncost/features/encode.hpp>
#include <dnncost/features/op_aggregates.hpp>
#include <dnncost/graph/analysis.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/csv.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/nn/gnn_model.hpp>
#include <dnncost/search/compression/handover.hpp>
#include <dnncost/search/mapping/mapping.hpp>
#include <dnncost/search/search.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/spaces/registry.hpp>
#include <dnncost/train/dataset.hpp>
#include <dnncost/train/metrics.hpp>
#include <dnncost/train/noise.hpp>
#include <dnncost/train/split.hpp>
#include <dnncost/train/train_data.hpp>
// measured operator tables and the graph-level cost interface
#include <dnncost/cost/graph_cost.hpp>
#include <dnncost/cost/interpolation.hpp>
#include <dnncost/cost/op_config.hpp>
#include <dnncost/cost/op_table.hpp>
#include <dnncost/estimators/estimator_cost.hpp>
// PerfSAGE: operator kinds, the per-type input transform, multi-space upsampling
#include <dnncost/estimators/perfsage.hpp>
#include <dnncost/features/op_kind.hpp>
#include <dnncost/train/upsample.hpp>
