// dnncost_noise: how much of a device's latency is measurement noise, from the NB201 cells that
// NAS-Bench-201 lists twice. When edge 2<-1 of a cell is `none`, exchanging nodes 1 and 2 gives
// another string for the same network (nb201::isomorphic_twin); the latency tables measured each
// string separately, so every such pair is two measurements of one network. Writes a markdown
// table: per device, how often the two measurements agree within 1 / 5 / 10 %, the spread of
// their log ratio, and the +-10 % accuracy a perfect estimator would reach if the noise were
// independent and log-normal (the "ceiling").
//
//   dnncost_noise [--data CSV] [--out noise.md]
//
// The statistics (agreement, robust spread, log-normal ceiling) are train::pair_noise, see
// include/dnncost/train/noise.hpp.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/io/csv.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/train/noise.hpp>

using namespace dnncost;

namespace {
/// Cost order of the cell operations: none < skip < 3x3 average pool < 1x1 conv < 3x3 conv.
int heaviness(nb201::Op op) {
    switch (op) {
        case nb201::Op::none:
            return 0;
        case nb201::Op::skip_connect:
            return 1;
        case nb201::Op::avg_pool_3x3:
            return 2;
        case nb201::Op::nor_conv_1x1:
            return 3;
        case nb201::Op::nor_conv_3x3:
            return 4;
    }
    return 0;
}
}  // namespace

int main(int argc, char** argv) try {
    std::map<std::string, std::string> arg{{"--data", DNNCOST_DATA_DIR "/nb201/latency_ms.csv"}, {"--out", "noise.md"}};
    for (int i = 1; i < argc; ++i) {
        const std::string key = argv[i];
        if (key == "--help" || key == "-h") {
            std::cout << "usage: dnncost_noise [--data CSV] [--out noise.md]\n";
            return 0;
        }
        if (!arg.count(key) || i + 1 >= argc) raise<config_error>("unknown option or missing value: ", key);
        arg[key] = argv[++i];
    }
    const auto table = io::read_csv(arg["--data"]);
    const std::size_t arch_col = table.column("arch");
    std::map<std::int64_t, std::size_t> row_of;  // architecture index -> row
    for (std::size_t r = 0; r < table.rows.size(); ++r) {
        nb201::Arch a;
        try {
            a = nb201::parse(table.rows[r][arch_col]);
        } catch (const parse_error& e) {
            raise<parse_error>(table.where(r), ": ", e.what());
        }
        if (!row_of.emplace(nb201::to_index(a), r).second)
            raise<parse_error>(table.where(r), ": architecture listed twice");
    }
    struct Twins {
        std::size_t r1, r2;  ///< the rows of the two strings
        nb201::Arch a;       ///< the first one's cell
    };
    std::vector<Twins> pairs;
    for (const auto& [index, row] : row_of) {
        const auto a = nb201::from_index(index);
        const auto twin = nb201::isomorphic_twin(a);
        if (!twin) continue;
        const auto other = nb201::to_index(*twin);
        if (other <= index) continue;  // each pair once
        if (const auto it = row_of.find(other); it != row_of.end()) pairs.push_back({row, it->second, a});
    }
    if (pairs.empty()) raise<config_error>(arg["--data"], ": no isomorphic pair of NB201 cells in the table");

    std::ostringstream md;
    md << "# Measurement noise of the NB201 latency tables\n\n"
       << "`dnncost_noise --data " << arg["--data"] << "`: " << pairs.size()
       << " pairs of strings that describe the same network (nb201::isomorphic_twin), each string measured "
          "separately. \"agree\": the fraction of pairs whose two latencies are within 1 / 5 / 10 % of each other "
          "(both orders counted); sigma: the log ratio's robust spread (1.4826 MAD / sqrt 2, one measurement); "
          "ceiling: the +-10 % accuracy of a perfect estimator under independent log-normal noise fitted to the "
          "+-10 % agreement (train::pair_noise, include/dnncost/train/noise.hpp); heavier slower: among the pairs more "
          "than 10 % apart, the "
          "fraction in which the string with the heavier operation on edge 1<-0 (3<-1 if equal) is the slower "
          "(about 0.5 when the difference is noise, not structure).\n\n"
       << "| device | pairs | agree ±1 % | agree ±5 % | agree ±10 % | sigma (log) | ceiling ±10 % | heavier slower |\n"
       << "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
    for (std::size_t c = 0; c < table.header.size(); ++c) {
        if (c == arch_col) continue;
        std::vector<std::pair<double, double>> values;
        std::size_t apart = 0, heavier_slower = 0, skipped = 0;
        for (const auto& [r1, r2, a] : pairs) {
            // a pair with a missing, malformed, NaN, infinite or non-positive value is left out
            const auto p1 = io::parse_number(table.rows[r1][c]), p2 = io::parse_number(table.rows[r2][c]);
            const double y1 = p1.value, y2 = p2.value;
            if (!p1.ok() || !p2.ok() || !(y1 > 0) || !(y2 > 0)) {
                ++skipped;
                continue;
            }
            values.emplace_back(y1, y2);
            if (std::abs(y1 / y2 - 1.0) > 0.1 && std::abs(y2 / y1 - 1.0) > 0.1) {
                // is the difference a property of the string? orient each pair by the heavier
                // operation on edge 1<-0 (or, if equal, on edge 3<-1)
                const int d0 = heaviness(a.ops[0]) - heaviness(a.ops[1]);
                const int d = d0 != 0 ? d0 : heaviness(a.ops[4]) - heaviness(a.ops[5]);
                ++apart;
                heavier_slower += (d > 0) == (y1 > y2);
            }
        }
        if (skipped > 0)
            std::cerr << "dnncost_noise: " << table.header[c] << ": " << skipped
                      << " pairs left out (a missing, malformed or non-positive latency)\n";
        if (values.empty()) continue;
        const auto noise = train::pair_noise(values, 0.1);
        md << std::fixed << std::setprecision(3) << "| " << table.header[c] << " | " << values.size()
           << (skipped > 0 ? " (" + std::to_string(skipped) + " left out)" : std::string()) << " | "
           << train::pair_agreement(values, 0.01) << " | " << train::pair_agreement(values, 0.05) << " | "
           << noise.agreement << " | " << std::setprecision(4) << noise.sigma << " | " << std::setprecision(3)
           << noise.ceiling << " | ";
        if (apart > 0)
            md << static_cast<double>(heavier_slower) / static_cast<double>(apart) << " of " << apart;
        else
            md << "-";
        md << " |\n";
    }
    io::write_file_atomic(arg["--out"], md.str());
    std::cout << md.str();
    return 0;
} catch (const std::exception& e) {
    std::cerr << "dnncost_noise: " << e.what() << "\n";
    return 1;
}
