#pragma once
/// @file channels_impl.hpp
/// The definitions of channels.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by channels.hpp in header-only mode.
#include <dnncost/search/compression/channels.hpp>

DNNCOST_FUNC auto dnncost::search::compression::detail::is_channel_keeping(std::string_view op) -> bool {
    static constexpr std::string_view ops[] = {"Relu",
                                               "LeakyRelu",
                                               "Clip",
                                               "Sigmoid",
                                               "Tanh",
                                               "HardSigmoid",
                                               "HardSwish",
                                               "Elu",
                                               "Selu",
                                               "Softplus",
                                               "Softsign",
                                               "Gelu",
                                               "Erf",
                                               "Sqrt",
                                               "Exp",
                                               "Log",
                                               "Abs",
                                               "Neg",
                                               "Reciprocal",
                                               "Floor",
                                               "Ceil",
                                               "Round",
                                               "Identity",
                                               "Dropout",
                                               "Cast",
                                               "Mish",
                                               "ThresholdedRelu",
                                               "MaxPool",
                                               "AveragePool",
                                               "GlobalAveragePool",
                                               "GlobalMaxPool",
                                               "LpPool",
                                               "BatchNormalization",
                                               "InstanceNormalization",
                                               "PRelu",
                                               "LRN"};
    return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}
