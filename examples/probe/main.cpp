// Stand-alone hardware probe (the descriptor of `dnncost probe`), for cross-compiling to a board:
//   aarch64-linux-gnu-g++ -std=c++20 -O2 -I include examples/probe/main.cpp -o dnncost-probe
// Writes the descriptor JSON to the path given (atomically: a temporary file, then a rename).
#include <cstdio>
#include <iostream>
#include <string>

#include <dnncost/measure/probe.hpp>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: " << argv[0] << " DESCRIPTOR.json\n";
        return 2;
    }
    const std::string out = argv[1], tmp = out + ".tmp";
    const auto d = dnncost::probe::run();
    for (const auto& m : d.missing) std::cerr << "dnncost-probe: counter not available: " << m << '\n';
    const auto text = dnncost::probe::to_json(d);
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f || std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fclose(f) != 0 ||
        std::rename(tmp.c_str(), out.c_str()) != 0) {
        std::cerr << "dnncost-probe: error: cannot write " << out << '\n';
        return 1;
    }
    std::cerr << "dnncost-probe: descriptor written to " << out << '\n';
    return 0;
}
