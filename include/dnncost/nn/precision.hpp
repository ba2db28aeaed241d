#pragma once
/// @file precision.hpp
/// The arithmetic of the GEMMs a model trains and predicts in, and its names in files and on
/// the command line.
#include <optional>
#include <string_view>

namespace dnncost::nn {

/// Arithmetic of the GEMMs: fp32 everywhere, or bf16 inputs with fp32 accumulation.
enum class Precision : int { fp32 = 0, bf16 = 1 };
inline const char* to_string(Precision p) { return p == Precision::bf16 ? "bf16" : "fp32"; }
/// "bf16" / "fp32" -> the precision; any other word -> nullopt.
inline std::optional<Precision> precision_from_string(std::string_view s) {
    if (s == "bf16") return Precision::bf16;
    if (s == "fp32") return Precision::fp32;
    return std::nullopt;
}

}  // namespace dnncost::nn
