// The compression search with hardware in the loop, header-only (see main_onnx.cpp).
#include <filesystem>
#include <string>

#include <dnncost/search/compression/measured_compression.hpp>

std::string compression_check(const std::string& data) {
    namespace dc = dnncost;
    // The search refuses an unknown estimator preset before it measures or writes anything.
    dc::search::compression::MeasuredCompressionOptions o;
    o.network = data + "/onnx/squeezenet1_1.onnx";
    o.out = std::filesystem::temp_directory_path() / "dnncost-consumer-compression";
    o.runner = "false";
    o.search.estimator = "no-such-preset";
    try {
        dc::search::compression::run_measured_compression(o);
        return "run_measured_compression accepted an unknown preset";
    } catch (const dc::config_error& e) {
        if (std::string(e.what()).find("no-such-preset") == std::string::npos)
            return std::string("the unknown preset's error does not name it: ") + e.what();
    }
    return {};
}
