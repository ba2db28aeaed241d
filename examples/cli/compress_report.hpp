#pragma once
// The files `dnncost compress` writes besides the results store: front.csv, candidates.csv,
// fronts.svg (self-written SVG: the fronts and predicted against measured latency), summary.json
// (also what --json prints) and the 2-D hypervolume used to compare a search with a reference
// search.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <dnncost/core/error.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/search/compression/handover.hpp>
#include <dnncost/search/compression/measured_compression.hpp>

#include "common.hpp"

namespace dnncost::cli::compress_report {

namespace sc = dnncost::search::compression;

inline std::string num(double v, int digits = 6) {
    if (!std::isfinite(v)) return "";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    return buf;
}
inline std::string opt(const std::optional<double>& v) { return v ? num(*v) : std::string(); }
inline std::string genome_text(const sc::PruneGenome& g, const std::vector<double>& steps) {
    std::string s;
    for (int x : g) {
        if (!s.empty()) s += ' ';
        s += num(steps.at(static_cast<std::size_t>(x)), 4);
    }
    return s;
}

/// One row per front member: keep ratios (space-separated, one per channel group), latencies, accuracy.
inline std::string front_csv(const std::vector<sc::CandidateRecord>& front, const std::vector<double>& steps) {
    std::string out = "genome,latency_ms_estimated,latency_ms_measured,accuracy,key\n";
    for (const auto& r : front)
        out += genome_text(r.genome, steps) + "," + opt(r.estimated) + "," + opt(r.measured) + "," + num(r.accuracy) +
               "," + r.key + "\n";
    return out;
}

/// Every evaluated candidate, with where its latency came from; generation 0 is the initial population.
inline std::string candidates_csv(const std::vector<sc::CandidateRecord>& all, const std::vector<double>& steps) {
    std::string out = "generation,genome,latency_ms_estimated,latency_ms_measured,accuracy,role,key\n";
    for (const auto& r : all) {
        const std::string role = r.failed       ? "failed"
                                 : r.training   ? "train"
                                 : r.validation ? "validation"
                                 : r.remeasured ? "remeasured"
                                 : r.measured   ? "measured"
                                                : "estimated";
        out += std::to_string(r.generation) + "," + genome_text(r.genome, steps) + "," + opt(r.estimated) + "," +
               opt(r.measured) + "," + num(r.accuracy) + "," + role + "," + r.key + "\n";
    }
    return out;
}

/// Hypervolume of (latency, accuracy) points, latency minimised and accuracy maximised, up to
/// the reference (ref_latency, ref_accuracy).
inline double hypervolume(std::vector<std::pair<double, double>> pts, double ref_latency, double ref_accuracy) {
    std::sort(pts.begin(), pts.end());
    double hv = 0, best = ref_accuracy;
    for (const auto& [lat, acc] : pts) {
        if (lat >= ref_latency || acc <= best) continue;
        // the slab from this latency to the reference gains (acc - best) of height
        hv += (ref_latency - lat) * (acc - best);
        best = acc;
    }
    return hv;
}

struct Series {
    std::string label, color;
    std::vector<std::pair<double, double>> points;
    bool line = false;
};

inline std::string escape(const std::string& s) {
    std::string o;
    for (char c : s) o += c == '<' ? std::string("&lt;") : c == '&' ? std::string("&amp;") : std::string(1, c);
    return o;
}

/// One scatter panel at (x0, y0) of size w x h.
inline void panel(std::ostringstream& svg, double x0, double y0, double w, double h, const std::string& title,
                  const std::string& xlabel, const std::string& ylabel, const std::vector<Series>& series,
                  bool diagonal) {
    double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin;
    for (const auto& s : series)
        for (const auto& [x, y] : s.points) {
            xmin = std::min(xmin, x), xmax = std::max(xmax, x), ymin = std::min(ymin, y), ymax = std::max(ymax, y);
        }
    if (!std::isfinite(xmin)) xmin = 0, xmax = 1, ymin = 0, ymax = 1;
    if (diagonal) xmin = ymin = std::min(xmin, ymin), xmax = ymax = std::max(xmax, ymax);
    const double dx = (xmax - xmin) > 0 ? (xmax - xmin) * 0.05 : 1, dy = (ymax - ymin) > 0 ? (ymax - ymin) * 0.05 : 1;
    xmin -= dx, xmax += dx, ymin -= dy, ymax += dy;
    const double L = x0 + 60, R = x0 + w - 10, T = y0 + 30, B = y0 + h - 45;
    const auto X = [&](double x) { return L + (x - xmin) / (xmax - xmin) * (R - L); };
    const auto Y = [&](double y) { return B - (y - ymin) / (ymax - ymin) * (B - T); };
    svg << "<text x='" << (L + R) / 2 << "' y='" << y0 + 18 << "' text-anchor='middle' font-size='14'>" << escape(title)
        << "</text>\n";
    svg << "<rect x='" << L << "' y='" << T << "' width='" << R - L << "' height='" << B - T
        << "' fill='none' stroke='#444'/>\n";
    for (int i = 0; i <= 4; ++i) {
        const double xv = xmin + (xmax - xmin) * i / 4, yv = ymin + (ymax - ymin) * i / 4;
        svg << "<text x='" << X(xv) << "' y='" << B + 14 << "' text-anchor='middle' font-size='10'>" << num(xv, 3)
            << "</text>\n";
        svg << "<text x='" << L - 4 << "' y='" << Y(yv) + 3 << "' text-anchor='end' font-size='10'>" << num(yv, 3)
            << "</text>\n";
    }
    svg << "<text x='" << (L + R) / 2 << "' y='" << B + 30 << "' text-anchor='middle' font-size='12'>" << escape(xlabel)
        << "</text>\n";
    svg << "<text x='" << x0 + 14 << "' y='" << (T + B) / 2
        << "' text-anchor='middle' font-size='12' transform='rotate(-90 " << x0 + 14 << " " << (T + B) / 2 << ")'>"
        << escape(ylabel) << "</text>\n";
    if (diagonal)
        svg << "<line x1='" << X(xmin) << "' y1='" << Y(ymin) << "' x2='" << X(xmax) << "' y2='" << Y(ymax)
            << "' stroke='#999' stroke-dasharray='4 3'/>\n";
    double ly = T + 12;
    for (const auto& s : series) {
        if (s.line && s.points.size() > 1) {
            auto pts = s.points;
            std::sort(pts.begin(), pts.end());
            svg << "<polyline fill='none' stroke='" << s.color << "' stroke-width='1.2' points='";
            for (const auto& [x, y] : pts) svg << X(x) << "," << Y(y) << " ";
            svg << "'/>\n";
        }
        for (const auto& [x, y] : s.points)
            svg << "<circle cx='" << X(x) << "' cy='" << Y(y) << "' r='3' fill='" << s.color
                << "' fill-opacity='0.75'/>\n";
        svg << "<circle cx='" << R - 150 << "' cy='" << ly - 4 << "' r='4' fill='" << s.color << "'/>"
            << "<text x='" << R - 142 << "' y='" << ly << "' font-size='11'>" << escape(s.label) << "</text>\n";
        ly += 15;
    }
}

/// Left: the estimator-guided front (estimated and re-measured latency), the front of every
/// measurement and an optional reference front; right: predicted against measured latency.
inline std::string fronts_svg(const sc::HandoverResult& r, const std::string& title,
                              const std::vector<std::pair<double, double>>& reference) {
    Series est{"guided front, estimated", "#d62728", {}, true}, meas{"guided front, measured", "#1f77b4", {}, true};
    for (const auto& c : r.front) {
        if (c.estimated) est.points.emplace_back(*c.estimated, c.accuracy);
        if (c.measured) meas.points.emplace_back(*c.measured, c.accuracy);
    }
    // the non-dominated set of everything measured
    std::vector<std::pair<double, double>> measured;
    for (const auto& c : r.all)
        if (c.measured && !c.failed) measured.emplace_back(*c.measured, c.accuracy);
    std::sort(measured.begin(), measured.end());
    Series all{"front of all measurements", "#2ca02c", {}, true};
    double best = -std::numeric_limits<double>::infinity();
    for (const auto& p : measured)
        if (p.second > best) all.points.push_back(p), best = p.second;
    std::vector<Series> left{all, meas};
    if (!est.points.empty()) left.insert(left.begin(), est);
    if (!reference.empty()) left.push_back({"reference front (measured search)", "#9467bd", reference, true});
    Series val{"validation", "#ff7f0e", {}, false}, front{"final front", "#1f77b4", {}, false},
        re{"re-measured in search", "#d62728", {}, false};
    for (const auto& c : r.all) {
        if (!c.measured || !c.estimated || c.failed) continue;
        if (c.validation)
            val.points.emplace_back(*c.measured, *c.estimated);
        else if (c.remeasured)
            re.points.emplace_back(*c.measured, *c.estimated);
    }
    for (const auto& c : r.front)
        if (c.measured && c.estimated && !c.validation && !c.remeasured)
            front.points.emplace_back(*c.measured, *c.estimated);
    std::ostringstream svg;
    svg << "<svg xmlns='http://www.w3.org/2000/svg' width='1000' height='430' font-family='sans-serif'>\n"
        << "<rect width='100%' height='100%' fill='white'/>\n";
    svg << "<text x='500' y='16' text-anchor='middle' font-size='15' font-weight='bold'>" << escape(title)
        << "</text>\n";
    panel(svg, 0, 20, 500, 410, "Fronts", "latency (ms)", "accuracy figure", left, false);
    const std::string mape = std::isfinite(r.front_mape) ? " (front MAPE " + num(100 * r.front_mape, 3) + " %)" : "";
    panel(svg, 500, 20, 500, 410, "Predicted vs measured" + mape, "measured latency (ms)", "predicted latency (ms)",
          {val, re, front}, true);
    svg << "</svg>\n";
    return svg.str();
}

/// (latency_ms_measured, accuracy) of a front.csv written by an earlier search.
inline std::vector<std::pair<double, double>> read_front(const std::filesystem::path& file) {
    std::istringstream in(io::read_file(file));
    std::string line;
    if (!std::getline(in, line) || line.rfind("genome,latency_ms_estimated,latency_ms_measured,accuracy", 0) != 0)
        raise<parse_error>(file.string(), ":1: not a front.csv of dnncost compress");
    std::vector<std::pair<double, double>> out;
    for (std::size_t no = 2; std::getline(in, line); ++no) {
        std::vector<std::string> f;
        std::stringstream ls(line);
        for (std::string x; std::getline(ls, x, ',');) f.push_back(x);
        if (f.size() < 4) raise<parse_error>(file.string(), ":", no, ": expected at least 4 fields");
        if (f[2].empty()) continue;  // a member whose measurement failed
        try {
            out.emplace_back(std::stod(f[2]), std::stod(f[3]));
        } catch (const std::exception&) {
            raise<parse_error>(file.string(), ":", no, ": latency or accuracy is not a number");
        }
    }
    return out;
}

/// The search's settings as summary.json reports them.
struct Settings {
    std::string network;
    std::size_t gens = 0, population = 0, handover = 0;
    std::string preset;
    std::size_t remeasure_budget = 0;
    std::string accuracy;  ///< the accuracy command, empty for the proxy
    std::string harness;   ///< HarnessOptions::to_json()
};

/// summary.json: the settings, the counts, the estimator's errors and, with a reference front,
/// the hypervolume ratio (latency minimised, accuracy maximised, reference 5 % beyond the
/// largest latency and accuracy 0).
inline nlohmann::json summary_json(const sc::MeasuredCompression& run, const Settings& s,
                                   const std::vector<std::pair<double, double>>& reference) {
    using json = nlohmann::json;
    const auto& result = run.result;
    const bool guided = s.handover <= s.gens;
    json j;
    j["model"] = s.network;
    j["channel_groups"] = run.channel_groups;
    json fixed = json::array();
    for (const auto& f : run.layers_left_whole)
        fixed.push_back({{"node", f.node}, {"op_type", f.op_type}, {"reason", f.reason}});
    j["layers_left_whole"] = fixed;
    j["generations"] = s.gens;
    j["population"] = s.population;
    j["handover"] = s.handover;
    j["estimator"] = guided ? json(s.preset) : json(nullptr);
    const std::size_t evaluations = result.all.size();
    j["evaluations"] = evaluations;
    j["measured"] = result.measured;
    j["estimated"] = result.estimated;
    j["measurements_saved"] = evaluations - result.measured;
    j["remeasured_in_search"] = result.remeasured;
    j["remeasure_budget"] = s.remeasure_budget;
    j["failed"] = result.failed;
    const auto fin = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
    j["validation_mape"] = fin(result.validation_mape);
    j["interval"] = fin(result.interval);
    j["front_mape"] = fin(result.front_mape);
    j["front_mape_unseen"] = fin(result.front_mape_unseen);
    j["baseline"] = "additive";
    j["baseline_front_mape"] = fin(result.baseline_front_mape);
    j["front_size"] = result.front.size();
    j["seconds"] = result.seconds;
    j["fit"] = result.fit_summary;
    j["accuracy"] = s.accuracy.empty() ? "proxy: parameter-weighted mean of sqrt(keep ratio)" : s.accuracy;
    j["runner_device"] = run.runner_device.empty() ? json(nullptr) : parse_json(run.runner_device);
    j["settings"] = parse_json(s.harness);
    if (!reference.empty()) {
        std::vector<std::pair<double, double>> mine;
        for (const auto& r : result.front)
            if (r.measured) mine.emplace_back(*r.measured, r.accuracy);
        double ref_lat = 0;
        for (const auto& p : mine) ref_lat = std::max(ref_lat, p.first);
        for (const auto& p : reference) ref_lat = std::max(ref_lat, p.first);
        ref_lat *= 1.05;
        const double hv = hypervolume(mine, ref_lat, 0.0);
        const double hv_ref = hypervolume(reference, ref_lat, 0.0);
        j["hypervolume"] = hv;
        j["reference_hypervolume"] = hv_ref;
        j["hypervolume_ratio"] = hv_ref > 0 ? json(hv / hv_ref) : json(nullptr);
        j["hypervolume_reference_point"] = {ref_lat, 0.0};
    }
    return j;
}

/// Write front.csv, candidates.csv, fronts.svg and summary.json into `dir`; returns the summary.
inline nlohmann::json write_reports(const std::filesystem::path& dir, const sc::MeasuredCompression& run,
                                    const std::vector<double>& steps, const Settings& s,
                                    const std::vector<std::pair<double, double>>& reference) {
    io::write_file_atomic(dir / "front.csv", front_csv(run.result.front, steps));
    io::write_file_atomic(dir / "candidates.csv", candidates_csv(run.result.all, steps));
    const bool guided = s.handover <= s.gens;
    io::write_file_atomic(dir / "fronts.svg",
                          fronts_svg(run.result,
                                     run.name + ": " +
                                         (guided ? "estimator-guided search (" + s.preset + ")"
                                                 : "search measured all the way"),
                                     reference));
    const auto j = summary_json(run, s, reference);
    io::write_file_atomic(dir / "summary.json", json_text(j) + "\n");
    return j;
}

}  // namespace dnncost::cli::compress_report
