#pragma once
/// @file workload.hpp
/// What a block asks of a compute unit, as the analytic platform models read it: its layers,
/// each with an operator class, FLOPs and bytes moved, and the feature bytes that cross to
/// another CU when the neighbouring block runs elsewhere. An architecture space describes its
/// blocks this way (vig_space.hpp); the roofline and the calibrated platforms cost them.
#include <cstddef>
#include <string>
#include <vector>

namespace dnncost::search::mapping {

/// Operator classes a platform may run with different efficiencies.
enum class OpClass : unsigned char {
    conv,         ///< spatial convolution (k x k, stride)
    dense,        ///< GEMM-like: fully connected, 1x1 and grouped 1x1 convolutions, matmul
    gather,       ///< irregular access: neighbour gather, max/sum aggregation, top-k
    elementwise,  ///< normalisation, activation, residual add, pooling
};
inline constexpr std::size_t num_op_classes = 4;
inline const char* to_string(OpClass c) {
    switch (c) {
        case OpClass::conv:
            return "conv";
        case OpClass::dense:
            return "dense";
        case OpClass::gather:
            return "gather";
        default:
            return "elementwise";
    }
}

/// One layer of a block.
struct LayerWork {
    std::string name;
    OpClass op_class = OpClass::dense;
    double flops = 0.0;  ///< arithmetic operations (2 per multiply-accumulate)
    double bytes = 0.0;  ///< activations read and written plus weights read
    /// Index of the graph operator the layer implements (a space-defined tag, e.g. 0..3 for
    /// max-relative, EdgeConv, GraphSAGE, GIN), or -1 for layers every variant shares.
    int graph_op = -1;
};

/// One block: its layers and the feature bytes it reads from and writes to the shared memory
/// when its neighbour runs on another CU.
struct BlockWork {
    std::vector<LayerWork> layers;
    double input_bytes = 0.0;
    double output_bytes = 0.0;

    double flops() const {
        double s = 0.0;
        for (const auto& l : layers) s += l.flops;
        return s;
    }
    double bytes() const {
        double s = 0.0;
        for (const auto& l : layers) s += l.bytes;
        return s;
    }
};

}  // namespace dnncost::search::mapping
