#pragma once
/// @file gnn_header.hpp
/// The header `dnncost export-header` writes for a GNN preset (HiFi-SAGE, BRP-NAS): the preset's
/// configuration as the estimator type, every weight tensor as a constexpr array, the rest of the
/// model's state (feature encoder, additive features, label scales) as one constexpr byte array,
/// and predict(graph) that builds the estimator once from them in memory.
#include <cstdint>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/nn/parameter.hpp>

namespace dnncost::estimators {

/// Bytes as a string literal: hex escapes, split every 32 bytes. A brace list of a million
/// numbers costs the compiler minutes; a string literal of the same bytes, seconds.
inline void put_bytes_literal(std::ostream& h, std::string_view bytes) {
    static constexpr char hex[] = "0123456789abcdef";
    h << "\n    \"";
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        if (i && i % 32 == 0) h << "\"\n    \"";
        const auto b = static_cast<unsigned char>(bytes[i]);
        h << "\\x" << hex[b >> 4] << hex[b & 15];
    }
    h << "\"";
}

/// The header of a GNN estimator.
/// @param container_bytes  the model as GnnEstimator::serialize(false) writes it; the payload
///                         layout the header rebuilds is that one's, checked here by writing the
///                         weights part again and comparing
/// @param params           the model's parameters, in the order they are saved
/// @param type_name        the preset's C++ type ("HiFiSage"), estimator_type in the header
/// @throws parse_error when the weights are not at the end of the payload
inline std::string gnn_header(const std::string& container_bytes, const std::vector<nn::Parameter<float>*>& params,
                              const std::string& type_name, const std::string& name, const std::string& source) {
    const auto container = io::read_container(container_bytes, std::nullopt, source);
    const auto& saved = container;
    io::BinaryWriter tail;
    for (const auto* p : params) {
        tail.put_string(p->name);
        tail.put_i64(p->value.rows());
        tail.put_i64(p->value.cols());
        tail.put_f32_vector(std::span<const float>(p->value.data(), static_cast<std::size_t>(p->value.size())));
    }
    tail.put_bool(false);  // no optimiser state
    const std::string& payload = saved.payload;
    if (payload.size() < tail.size() || payload.compare(payload.size() - tail.size(), tail.size(), tail.bytes()) != 0)
        raise<parse_error>(source, ": the model's weights are not where export-header expects them in its payload");
    const std::string_view state(payload.data(), payload.size() - tail.size());

    std::ostringstream h;
    h << "#pragma once\n"
      << "// " << name << ": the " << container.kind << " model " << source << ", written by `dnncost export-header`.\n"
      << "// predict(graph) builds the estimator once from the arrays below, in memory: no file I/O, and it\n"
      << "// compiles with -fno-exceptions (a model that does not match this build's " << container.kind
      << " configuration\n// then aborts with a message instead of throwing).\n"
      << "#include <array>\n#include <cstdint>\n#include <span>\n#include <string>\n#include <string_view>\n\n"
      << "#include <dnncost/estimators/presets.hpp>\n#include <dnncost/graph/graph.hpp>\n"
      << "#include <dnncost/io/serialize.hpp>\n\n"
      << "namespace " << name << " {\n\n"
      << "inline constexpr std::string_view preset = \"" << container.kind << "\";\n"
      << "/// The preset's configuration, fixed at compile time: " << type_name << "'s template argument.\n"
      << "using estimator_type = dnncost::estimators::" << type_name << ";\n"
      << "inline constexpr std::uint64_t config_hash = 0x" << std::hex << container.config_hash << std::dec
      << "ULL;\n\n"
      << "/// Feature encoder, additive features and label scales, in the model file's payload layout.\n"
      << "inline constexpr char state[] =";
    put_bytes_literal(h, state);
    h << ";\n\n/// Weight tensors, IEEE-754 binary32 little-endian, row-major as the model stores them.\n";
    std::ostringstream table;
    for (std::size_t i = 0; i < params.size(); ++i) {
        const auto* p = params[i];
        const std::string_view raw(reinterpret_cast<const char*>(p->value.data()),
                                   static_cast<std::size_t>(p->value.size()) * sizeof(float));
        h << "// " << p->name << ": " << p->value.rows() << " x " << p->value.cols() << "\n"
          << "inline constexpr char weight_" << i << "[] =";
        put_bytes_literal(h, raw);
        h << ";\n";
        table << "    Tensor{\"" << p->name << "\", " << p->value.rows() << ", " << p->value.cols() << ", {weight_" << i
              << ", sizeof weight_" << i << " - 1}},\n";
    }
    h << "\nstruct Tensor {\n    std::string_view name;\n    std::int64_t rows, cols;\n    std::string_view "
         "bytes;\n};\n"
      << "inline constexpr std::array<Tensor, " << params.size() << "> weights{{\n"
      << table.str() << "}};\n"
      << "static_assert([] {\n    for (const auto& t : weights)\n"
      << "        if (t.bytes.size() != static_cast<std::size_t>(t.rows * t.cols) * sizeof(float)) return false;\n"
      << "    return true;\n}(), \"a weight array does not hold rows x cols floats\");\n\n"
      << "/// The estimator, built on first use from the arrays above.\n"
      << "inline const estimator_type& model() {\n"
      << "    static const estimator_type m = [] {\n"
      << "        std::string payload(state, sizeof state - 1);\n"
      << "        dnncost::io::BinaryWriter tail;\n"
      << "        for (const auto& t : weights) {\n"
      << "            tail.put_string(t.name);\n            tail.put_i64(t.rows);\n            tail.put_i64(t.cols);\n"
      << "            tail.put_u64(static_cast<std::uint64_t>(t.rows * t.cols));\n"
      << "            payload += tail.bytes();\n"
      << "            payload.append(t.bytes.data(), t.bytes.size());\n"
      << "            tail = {};\n"
      << "        }\n"
      << "        tail.put_bool(false);\n        payload += tail.bytes();\n"
      << "        return estimator_type::deserialize(dnncost::io::write_container(preset, config_hash, payload), "
         "preset,\n"
      << "                                           \"" << name << "\");\n"
      << "    }();\n    return m;\n}\n\n"
      << "/// The predicted cost of g, in the unit of the column the model was trained on.\n"
      << "inline double predict(const dnncost::graph::Graph& g) {\n"
      << "    const dnncost::graph::Graph* one[] = {&g};\n"
      << "    return model().predict(one).front().mean;\n}\n\n"
      << "}  // namespace " << name << "\n";
    return h.str();
}

}  // namespace dnncost::estimators
