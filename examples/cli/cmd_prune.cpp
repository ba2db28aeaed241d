// `dnncost prune`: apply keep ratios (one genome, or every member of a compression search's
// front.csv) to an ONNX network and write the pruned networks as ONNX files with weights, e.g.
// to price them with an operator table or measure them elsewhere.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "common.hpp"

#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/search/compression/prune.hpp>

namespace dnncost::cli {

namespace prune_detail {

/// Keep ratios written as in front.csv (space-separated) or comma-separated.
inline std::vector<double> parse_ratios(const std::string& text, const std::string& where) {
    std::string t = text;
    for (auto& c : t)
        if (c == ',') c = ' ';
    std::istringstream in(t);
    std::vector<double> out;
    std::string item;
    while (in >> item) {
        std::size_t used = 0;
        double v = 0;
        try {
            v = std::stod(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != item.size() || !(v > 0 && v <= 1))
            raise<config_error>(where, ": keep ratio '", item, "' is not a number in (0, 1]");
        out.push_back(v);
    }
    if (out.empty()) raise<config_error>(where, ": no keep ratio");
    return out;
}

/// (genome, key) of every row of a front.csv written by `dnncost compress`. Every genome has
/// `groups` keep ratios, and every key is a plain file name (KEY.onnx is written into --out)
/// that no other row has, so that nothing is written outside --out or over another member.
/// @throws parse_error naming the file and line of the first row that breaks this
inline std::vector<std::pair<std::vector<double>, std::string>> read_front_genomes(const std::string& path,
                                                                                   std::size_t groups) {
    std::ifstream in(path);
    if (!in) raise<io_error>(path, ": cannot open");
    std::string line;
    if (!std::getline(in, line) || line.rfind("genome,", 0) != 0)
        raise<parse_error>(path, ":1: not a front.csv of dnncost compress (header starts with 'genome,')");
    std::vector<std::pair<std::vector<double>, std::string>> rows;
    std::map<std::string, std::size_t> line_of_key;
    for (std::size_t n = 2; std::getline(in, line); ++n) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        const auto first = line.find(','), last = line.rfind(',');
        if (first == std::string::npos) raise<parse_error>(path, ":", n, ": no comma");
        const std::string where = path + ":" + std::to_string(n);
        auto ratios = parse_ratios(line.substr(0, first), where);
        if (ratios.size() != groups)
            raise<parse_error>(where, ": ", ratios.size(), " keep ratios for the network's ", groups, " channel groups");
        std::string key = line.substr(last + 1);
        const bool plain = !key.empty() && key != "." && key != ".." &&
                           key.find_first_of("/\\") == std::string::npos &&
                           std::none_of(key.begin(), key.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
        if (!plain) raise<parse_error>(where, ": key '", key, "' is not a plain file name");
        if (const auto [it, fresh] = line_of_key.emplace(key, n); !fresh)
            raise<parse_error>(where, ": key '", key, "' is also the key of line ", it->second);
        rows.emplace_back(std::move(ratios), std::move(key));
    }
    if (rows.empty()) raise<parse_error>(path, ": no front member");
    return rows;
}

}  // namespace prune_detail

void add_prune_command(Command& app, Context& ctx) {
    namespace fs = std::filesystem;
    struct Args {
        NetworkFiles network;
        std::string ratios, front, out;
        std::uint64_t seed = 0;
        bool json_out = false;
    };
    auto a = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("prune", "Write pruned ONNX networks: one set of keep ratios, or a front.csv's");
    a->network.add_to(*cmd, "ONNX network to prune", false);
    auto* ratios = cmd->add_option("--keep-ratios", a->ratios,
                                   "One keep ratio per channel group, space- or comma-separated (as in front.csv)");
    auto* front =
        cmd->add_option("--front", a->front, "front.csv of dnncost compress: every member")->check(check::existing_file());
    ratios->excludes(front);
    cmd->add_option("--out", a->out, "Output ONNX file (--keep-ratios) or directory (--front: KEY.onnx per member)")
        ->required();
    cmd->add_option("--seed", a->seed, "Seed of the random weight values")->transform(check::seed());
    add_json_flag(*cmd, a->json_out,
                  "Print the files written as one JSON document ({\"written\": [...]}) instead of one per line");
    cmd->callback([a, &ctx] {
        if (a->ratios.empty() && a->front.empty()) raise<config_error>("give --keep-ratios or --front");
        const auto file = a->network.files("prune").front();
        const auto bytes = io::read_file(file);
        const int opset = io::onnx_opset(bytes, file);
        auto network = io::import_onnx(file);
        if (network.name().empty()) network.set_name(fs::path(file).stem().string());
        const search::compression::Pruner pruner(std::move(network));
        std::vector<std::pair<std::vector<double>, std::string>> jobs;
        if (!a->ratios.empty()) {
            io::check_writable(a->out);
            jobs.emplace_back(prune_detail::parse_ratios(a->ratios, "--keep-ratios"), "");
        } else {
            jobs = prune_detail::read_front_genomes(a->front, pruner.num_groups());
            std::error_code ec;
            fs::create_directories(a->out, ec);
            if (!fs::is_directory(a->out)) raise<io_error>("--out ", a->out, ": cannot create the directory");
        }
        json written = json::array();
        for (const auto& [genome, key] : jobs) {
            const auto g = pruner.apply(genome);
            const fs::path path = key.empty() ? fs::path(a->out) : fs::path(a->out) / (key + ".onnx");
            measure::write_model_for_runner(g, path, a->seed, opset);
            if (a->json_out)
                written.push_back(path.string());
            else
                std::cout << path.string() << '\n';
        }
        if (a->json_out) print_json({{"written", written}});
        ctx.exit_code = 0;
    });
}

}  // namespace dnncost::cli
