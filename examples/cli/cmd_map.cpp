// `dnncost map`: the mapping search on one network, from a block-cost file or a ViG subnet on
// an example platform (Pareto set, standalone mappings, best P, exact front, SVG plot), and
// `dnncost cosearch`: the nested architecture x mapping search on the ViG space, with a
// standalone vs distributed comparison in the form of MaGNAS Table 3. One file for the two
// commands: they share the JSON/text output and the SVG writer; the searches are
// search/mapping/network_search.hpp and cosearch_comparison.hpp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <dnncost/search/mapping/cosearch_comparison.hpp>
#include <dnncost/search/mapping/mapping.hpp>
#include <dnncost/search/mapping/network_search.hpp>

#include "commands.hpp"
#include "common.hpp"

namespace dnncost::cli {

namespace map_detail {
namespace mp = search::mapping;

struct MapArgs {
    mp::NetworkSearchRequest request;
    std::string cus;
    double gamma1 = 1.0, gamma2 = 1.0;
    double t_target = std::numeric_limits<double>::infinity();
    double e_target = std::numeric_limits<double>::infinity();
    std::size_t population = 200, generations = 10, max_evaluations = 0;
    std::uint64_t seed = 1;
    double mutation_probability = -1.0;
    bool uniform_init = false;
    bool json = false, csv = false;
    std::string format;  // deprecated: --json / --csv
    std::string plot;
    std::string export_blocks;
};

struct CoSearchArgs {
    mp::CoSearchRequest request;
    std::size_t ooe_population = 100, ooe_generations = 50, ioe_population = 200, ioe_generations = 10;
    std::size_t threads = 1, top = 10;
    std::uint64_t seed = 1;
    bool json = false;
    std::string plot;
};

// ------------------------------------------------------------------ shared helpers

inline std::string mapping_text(const std::vector<std::uint8_t>& cus, const std::vector<std::string>& names) {
    std::string s;
    for (std::size_t i = 0; i < cus.size(); ++i) s += (i ? "|" : "") + names[cus[i]];
    return s;
}

inline std::string fixed(double v, int digits) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(digits) << v;
    return os.str();
}

inline json solution_json(const mp::MappingSolution& s, const std::vector<std::string>& cus,
                          const mp::Platform& platform) {
    json j;
    std::vector<std::string> m;
    for (auto c : s.cus) m.push_back(cus[c]);
    j["mapping"] = m;
    j["t_ms"] = s.value.t;
    j["e_mj"] = s.value.e;
    j["p"] = s.p;
    j["dvfs"] = platform.dvfs[s.dvfs].name;
    j["feasible"] = s.feasible;
    return j;
}

/// A latency-energy scatter plot as a self-contained SVG.
struct SvgSeries {
    std::string name;
    std::vector<std::pair<double, double>> points;
    std::string colour;
    bool line = false;  // join the points (a front, sorted by latency)
    double radius = 3.0;
    std::vector<std::string> labels;  // optional, one per point
};

inline std::string escape_xml(const std::string& s) {
    std::string o;
    for (char c : s) {
        if (c == '<')
            o += "&lt;";
        else if (c == '>')
            o += "&gt;";
        else if (c == '&')
            o += "&amp;";
        else if (c == '"')
            o += "&quot;";
        else
            o += c;
    }
    return o;
}

inline std::string svg_plot(const std::string& title, const std::vector<SvgSeries>& series) {
    const double w = 900, h = 520, left = 80, right = 320, top = 50, bottom = 60;
    double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
    for (const auto& s : series)
        for (const auto& [x, y] : s.points) {
            x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
        }
    if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    const double px = std::max((x1 - x0) * 0.06, 1e-9), py = std::max((y1 - y0) * 0.06, 1e-9);
    x0 -= px, x1 += px, y0 -= py, y1 += py;
    auto sx = [&](double x) { return left + (x - x0) / (x1 - x0) * (w - left - right); };
    auto sy = [&](double y) { return h - bottom - (y - y0) / (y1 - y0) * (h - top - bottom); };
    std::ostringstream o;
    o << std::setprecision(6);
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << w / 2 << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" << escape_xml(title)
      << "</text>\n"
      << "<line x1=\"" << left << "\" y1=\"" << h - bottom << "\" x2=\"" << w - right << "\" y2=\"" << h - bottom
      << "\" stroke=\"black\"/>\n"
      << "<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\"" << h - bottom
      << "\" stroke=\"black\"/>\n";
    for (int k = 0; k <= 5; ++k) {
        const double xv = x0 + (x1 - x0) * k / 5.0, yv = y0 + (y1 - y0) * k / 5.0;
        o << "<line x1=\"" << sx(xv) << "\" y1=\"" << h - bottom << "\" x2=\"" << sx(xv) << "\" y2=\"" << h - bottom + 5
          << "\" stroke=\"black\"/>"
          << "<text x=\"" << sx(xv) << "\" y=\"" << h - bottom + 18 << "\" text-anchor=\"middle\">" << fixed(xv, 2)
          << "</text>\n"
          << "<line x1=\"" << left - 5 << "\" y1=\"" << sy(yv) << "\" x2=\"" << left << "\" y2=\"" << sy(yv)
          << "\" stroke=\"black\"/>"
          << "<text x=\"" << left - 8 << "\" y=\"" << sy(yv) + 4 << "\" text-anchor=\"end\">" << fixed(yv, 1)
          << "</text>\n";
    }
    o << "<text x=\"" << (left + w - right) / 2 << "\" y=\"" << h - 15
      << "\" text-anchor=\"middle\">latency (ms)</text>\n"
      << "<text x=\"20\" y=\"" << (top + h - bottom) / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 20 "
      << (top + h - bottom) / 2 << ")\">energy (mJ)</text>\n";
    double ly = top + 10;
    for (const auto& s : series) {
        if (s.line && s.points.size() > 1) {
            o << "<polyline fill=\"none\" stroke=\"" << s.colour << "\" stroke-width=\"1.5\" points=\"";
            for (const auto& [x, y] : s.points) o << sx(x) << ',' << sy(y) << ' ';
            o << "\"/>\n";
        }
        for (std::size_t i = 0; i < s.points.size(); ++i) {
            const auto [x, y] = s.points[i];
            o << "<circle cx=\"" << sx(x) << "\" cy=\"" << sy(y) << "\" r=\"" << s.radius << "\" fill=\"" << s.colour
              << "\"/>\n";
            if (i < s.labels.size() && !s.labels[i].empty())
                o << "<text x=\"" << sx(x) + 7 << "\" y=\"" << sy(y) - 7 << "\">" << escape_xml(s.labels[i])
                  << "</text>\n";
        }
        o << "<circle cx=\"" << w - right + 20 << "\" cy=\"" << ly << "\" r=\"4\" fill=\"" << s.colour << "\"/>"
          << "<text x=\"" << w - right + 30 << "\" y=\"" << ly + 4 << "\">" << escape_xml(s.name) << "</text>\n";
        ly += 20;
    }
    o << "</svg>\n";
    return o.str();
}

inline std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == ',') {
            out.push_back(cur);
            cur.clear();
        } else if (c != ' ') {
            cur += c;
        }
    }
    if (!cur.empty() || !out.empty()) out.push_back(cur);
    return out;
}

// ------------------------------------------------------------------ one network: dnncost map

inline mp::MappingSearchOptions search_options(const MapArgs& a) {
    mp::MappingSearchOptions o;
    o.population = a.population;
    o.generations = a.generations;
    o.max_evaluations = a.max_evaluations;
    o.seed = a.seed;
    o.operators.mutation_probability = a.mutation_probability;
    o.operators.stratified_initialisation = !a.uniform_init;
    o.preference.gamma1 = a.gamma1;
    o.preference.gamma2 = a.gamma2;
    o.preference.t_target = a.t_target;
    o.preference.e_target = a.e_target;
    return o;
}

inline void write_map_plot(const std::string& path, const mp::LoadedNetwork& l, const mp::NetworkSearchReport& rep) {
    const auto& r = rep.result;
    std::vector<SvgSeries> series;
    if (rep.exact) {
        SvgSeries s{"exact front", {}, "#bbbbbb", true, 4.5, {}};
        for (const auto& p : *rep.exact) s.points.push_back({p.value.t, p.value.e});
        series.push_back(std::move(s));
    }
    SvgSeries f{"searched front", {}, "#1f77b4", true, 3.0, {}};
    for (const auto& p : r.front) f.points.push_back({p.value.t, p.value.e});
    series.push_back(std::move(f));
    SvgSeries sa{"standalone", {}, "#d62728", false, 6.0, {}};
    SvgSeries other{"standalone, other DVFS settings", {}, "#f4a6a6", false, 4.0, {}};
    for (const auto& p : r.standalone) {
        if (p.dvfs != rep.setting) {
            other.points.push_back({p.value.t, p.value.e});
            continue;
        }
        sa.points.push_back({p.value.t, p.value.e});
        sa.labels.push_back(l.platform.cus[p.cus.front()] + " only");
    }
    if (!other.points.empty()) series.push_back(std::move(other));
    series.push_back(std::move(sa));
    series.push_back({"best P", {{r.best.value.t, r.best.value.e}}, "#2ca02c", false, 6.0, {"best P"}});
    io::write_file_atomic(path, svg_plot("Mapping search: " + l.what, series));
}

inline json map_json(const MapArgs& a, const mp::LoadedNetwork& l, const mp::NetworkSearchReport& rep) {
    const auto& r = rep.result;
    const auto& cus = l.platform.cus;
    json j;
    j["instance"] = l.what;
    j["blocks"] = l.instances.front().num_blocks();
    j["cus"] = cus;
    j["dvfs"] = rep.all_dvfs ? std::string("all") : l.platform.dvfs[rep.setting].name;
    j["mappings"] = static_cast<double>(l.instances[rep.setting].num_mappings());
    j["normaliser"] = {{"t_max_ms", r.normaliser.t_max}, {"e_max_mj", r.normaliser.e_max}};
    j["gamma1"] = a.gamma1;
    j["gamma2"] = a.gamma2;
    j["standalone"] = json::array();
    for (const auto& s : r.standalone) j["standalone"].push_back(solution_json(s, cus, l.platform));
    j["front"] = json::array();
    for (const auto& s : r.front) j["front"].push_back(solution_json(s, cus, l.platform));
    j["best"] = solution_json(r.best, cus, l.platform);
    j["fallback"] = r.fallback;
    if (r.fallback) j["note"] = r.note;
    j["evaluations"] = r.evaluations;
    j["enumerated"] = r.enumerated;
    j["seconds"] = rep.seconds;
    if (rep.exact) {
        j["exact"] = {{"evaluations", rep.exact_evaluations},
                      {"front_size", rep.exact->size()},
                      {"hypervolume_ratio", rep.hypervolume_ratio}};
        j["exact"]["front"] = json::array();
        for (const auto& s : *rep.exact) j["exact"]["front"].push_back(solution_json(s, cus, l.platform));
    }
    return j;
}

inline void print_map_csv(const mp::LoadedNetwork& l, const mp::NetworkSearchReport& rep) {
    const auto& r = rep.result;
    std::cout << "kind,t_ms,e_mj,p,dvfs,feasible,mapping\n";
    auto row = [&](const char* kind, const mp::MappingSolution& s) {
        std::cout << kind << ',' << std::setprecision(10) << s.value.t << ',' << s.value.e << ',' << s.p << ','
                  << l.platform.dvfs[s.dvfs].name << ',' << (s.feasible ? 1 : 0) << ','
                  << mapping_text(s.cus, l.platform.cus) << '\n';
    };
    for (const auto& s : r.standalone) row("standalone", s);
    for (const auto& s : r.front) row("front", s);
    row(r.fallback ? "best_fallback" : "best", r.best);
    if (rep.exact)
        for (const auto& s : *rep.exact) row("exact", s);
}

inline void print_map_text(const MapArgs& a, const mp::LoadedNetwork& l, const mp::NetworkSearchReport& rep) {
    const auto& r = rep.result;
    const auto& cus = l.platform.cus;
    const bool all = rep.all_dvfs;
    const auto& pref = a.request.search.preference;
    std::cout << "instance: " << l.what << " (" << l.instances.front().num_blocks() << " blocks; compute units "
              << mp::Platform::joined(cus) << "; DVFS "
              << (all ? "all " + std::to_string(l.platform.num_dvfs()) + " settings"
                      : l.platform.dvfs[rep.setting].name)
              << ")\n"
              << "mappings: " << l.instances[rep.setting].num_mappings() << (all ? " per setting" : "") << '\n'
              << "P = (E / " << fixed(r.normaliser.e_max, 3) << " mJ)^" << a.gamma1 << " x (T / "
              << fixed(r.normaliser.t_max, 3) << " ms)^" << a.gamma2 << "  (max standalone energy and latency)\n";
    if (pref.constrained()) std::cout << "targets: " << pref.describe() << '\n';
    std::cout << "\nstandalone mappings:\n";
    for (const auto& s : r.standalone)
        std::cout << "  " << std::setw(8) << cus[s.cus.front()] << "  T " << fixed(s.value.t, 3) << " ms  E "
                  << fixed(s.value.e, 3) << " mJ  P " << fixed(s.p, 4) << (all ? "  " + l.platform.dvfs[s.dvfs].name : "")
                  << (s.feasible ? "" : "  (misses the targets)") << '\n';
    if (r.standalone.empty()) std::cout << "  none: no compute unit runs every block\n";
    std::cout << "\nPareto set: " << r.front.size() << " mappings ("
              << (r.enumerated ? "all mappings enumerated: no more than the search's budget"
                               : "NSGA-II, population " + std::to_string(a.population))
              << ", " << r.evaluations << " evaluations, " << fixed(rep.seconds, 3) << " s)\n"
              << "  T_ms,E_mJ,P" << (all ? ",dvfs" : "") << ",mapping\n";
    for (const auto& s : r.front)
        std::cout << "  " << fixed(s.value.t, 4) << ',' << fixed(s.value.e, 4) << ',' << fixed(s.p, 4)
                  << (all ? "," + l.platform.dvfs[s.dvfs].name : "") << ',' << mapping_text(s.cus, cus) << '\n';
    std::cout << "\nbest P: " << fixed(r.best.p, 4) << "  T " << fixed(r.best.value.t, 3) << " ms  E "
              << fixed(r.best.value.e, 3) << " mJ" << (all ? "  DVFS " + l.platform.dvfs[r.best.dvfs].name : "")
              << "  transitions " << mp::transitions(r.best.cus) << "\n  " << mapping_text(r.best.cus, cus) << '\n';
    if (r.fallback) std::cout << "note: " << r.note << '\n';
    if (rep.exact)
        std::cout << "\nexact: " << rep.exact->size() << " Pareto-optimal mappings from " << rep.exact_evaluations
                  << " enumerated; the search's front reaches " << fixed(100.0 * rep.hypervolume_ratio, 3)
                  << " % of their hypervolume with "
                  << fixed(100.0 * static_cast<double>(r.evaluations) / static_cast<double>(rep.exact_evaluations), 2)
                  << " % of the evaluations\n";
    if (!a.plot.empty()) std::cout << "plot written to " << a.plot << '\n';
    if (!a.export_blocks.empty()) std::cout << "block costs written to " << a.export_blocks << '\n';
}

inline void run_map(MapArgs& a) {
    if (!a.format.empty()) {
        warn_deprecated("map --format " + a.format, a.format == "json" ? "--json" : a.format == "csv" ? "--csv" : "the default text output");
        if (a.json || a.csv) raise<config_error>("map: give --json or --csv, not --format as well");
        a.json = a.format == "json";
        a.csv = a.format == "csv";
    }
    if (a.json && a.csv) raise<config_error>("map: give --json or --csv, not both");
    if (a.generations == 0 && a.max_evaluations == 0) raise<config_error>("map: --gens 0 needs --max-evals");
    auto& req = a.request;
    if (!a.cus.empty()) req.cus = split_list(a.cus);
    req.search = search_options(a);
    io::check_distinct_outputs({{"--blocks", req.blocks}, {"--plot", a.plot}, {"--export-blocks", a.export_blocks}});
    if (!a.plot.empty()) io::check_writable(a.plot);
    if (!a.export_blocks.empty()) io::check_writable(a.export_blocks);
    const auto l = mp::load_network(req);
    if (!a.export_blocks.empty()) {
        std::vector<std::string> names;
        for (const auto& d : l.platform.dvfs) names.push_back(d.name);
        io::write_file_atomic(a.export_blocks, mp::block_costs_csv(l.instances, names));
    }
    const auto rep = mp::search_network(l, req);
    if (!a.plot.empty()) write_map_plot(a.plot, l, rep);
    if (a.json)
        print_json(map_json(a, l, rep));
    else if (a.csv)
        print_map_csv(l, rep);
    else
        print_map_text(a, l, rep);
}

// ------------------------------------------------------------------ nested search: dnncost cosearch

/// One letter per CU for the Table 3 columns: the first letter when the first letters differ,
/// else the last.
inline std::vector<char> cu_letters(const std::vector<std::string>& cus) {
    std::vector<char> first, last;
    for (const auto& c : cus) {
        first.push_back(c.front());
        last.push_back(c.back());
    }
    auto distinct = [](std::vector<char> v) {
        std::sort(v.begin(), v.end());
        return std::adjacent_find(v.begin(), v.end()) == v.end();
    };
    return distinct(first) ? first : last;
}

/// A row of the Table 3 comparison: the mapping by block kind, transitions, latency, energy.
inline void table3_row(std::ostream& os, const std::string& option, const mp::MappingSolution& s,
                       const std::vector<mp::VigBlock>& blocks, const std::vector<char>& letter) {
    std::string stem, graphers, ffns, cls;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
        const char c = letter[s.cus[i]];
        switch (blocks[i].kind) {
            case mp::VigBlockKind::stem:
                stem = c;
                break;
            case mp::VigBlockKind::cls:
                cls = c;
                break;
            case mp::VigBlockKind::grapher:
                graphers += (graphers.empty() ? "" : "-") + std::string(1, c);
                break;
            default:
                ffns += (ffns.empty() ? "" : "-") + std::string(1, c);
                break;
        }
    }
    if (ffns.empty()) ffns = "(none)";
    os << "  " << std::left << std::setw(17) << option << std::setw(5) << stem << std::setw(33) << graphers
       << std::setw(33) << ffns << std::setw(4) << cls << std::right << std::setw(8) << mp::transitions(s.cus)
       << std::setw(9) << fixed(s.value.t, 2) << std::setw(9) << fixed(s.value.e, 2) << '\n';
}

inline void write_cosearch_plot(const std::string& path, const mp::CoSearchReport& rep) {
    const auto& c = rep.comparison;
    const auto& cus = rep.platform.cus;
    std::vector<SvgSeries> series;
    SvgSeries arches{"co-search front (best-P mapping)", {}, "#9467bd", false, 3.0, {}};
    for (const auto& p : rep.result.front) arches.points.push_back({p.mapping.best.value.t, p.mapping.best.value.e});
    series.push_back(std::move(arches));
    SvgSeries f{"IOE front of " + mp::VigSpace::to_string(c.architecture), {}, "#1f77b4", true, 3.0, {}};
    for (const auto& p : c.ioe_front) f.points.push_back({p.value.t, p.value.e});
    series.push_back(std::move(f));
    SvgSeries sa{"standalone", {}, "#d62728", false, 6.0, {}};
    for (std::size_t i = 0; i < c.standalone.size(); ++i) {
        sa.points.push_back({c.standalone[i].value.t, c.standalone[i].value.e});
        sa.labels.push_back(cus[c.standalone_cus[i]] + " only");
    }
    series.push_back(std::move(sa));
    series.push_back(
        {"IOE, latency budget", {{c.ioe.best.value.t, c.ioe.best.value.e}}, "#2ca02c", false, 6.0, {"IOE"}});
    io::write_file_atomic(path, svg_plot("Co-search on " + rep.platform_name, series));
}

inline json cosearch_json(const CoSearchArgs& a, const mp::CoSearchReport& rep) {
    const auto& res = rep.result;
    const auto& c = rep.comparison;
    const auto& cus = rep.platform.cus;
    json j;
    j["platform"] = rep.platform_name;
    j["dataset"] = a.request.dataset;
    j["accuracy"] = "proxy (VigAccuracyProxy), not a trained supernet";
    j["generations"] = res.generations;
    j["outer_evaluations"] = res.outer_evaluations;
    j["inner_runs"] = res.inner_runs;
    j["mapping_evaluations"] = res.mapping_evaluations;
    j["seconds"] = res.seconds;
    j["front"] = json::array();
    for (const auto& p : res.front) {
        json e = solution_json(p.mapping.best, cus, rep.platform);
        e["architecture"] = mp::VigSpace::to_string(p.architecture);
        e["accuracy_proxy"] = p.accuracy;
        e["fallback"] = p.mapping.fallback;
        j["front"].push_back(e);
    }
    json t;
    t["architecture"] = mp::VigSpace::to_string(c.architecture);
    t["latency_budget_ms"] = c.latency_budget;
    for (const auto& s : c.standalone) t["standalone"].push_back(solution_json(s, cus, rep.platform));
    for (const auto& s : c.transitions_1) t["transitions_1"].push_back(solution_json(s, cus, rep.platform));
    for (const auto& s : c.transitions_2) t["transitions_2"].push_back(solution_json(s, cus, rep.platform));
    t["ioe"] = solution_json(c.ioe.best, cus, rep.platform);
    t["ioe_fallback"] = c.ioe.fallback;
    j["table3"] = t;
    return j;
}

inline void print_cosearch_front(const CoSearchArgs& a, const mp::CoSearchReport& rep) {
    const auto& res = rep.result;
    const auto& cus = rep.platform.cus;
    const bool dvfs_search = a.request.search.dvfs_brute_force;
    std::cout << "co-search on " << rep.platform_name << ": OOE population " << a.ooe_population << " x "
              << res.generations << " generations, IOE population " << a.ioe_population << " x " << a.ioe_generations
              << " generations" << (dvfs_search ? ", DVFS brute force" : "") << ", " << a.threads
              << " thread(s), seed " << a.seed << '\n'
              << "accuracy: PROXY for " << a.request.dataset
              << " (VigAccuracyProxy, anchored on MaGNAS Table 2; not a trained supernet)\n"
              << res.outer_evaluations << " architectures scored, " << res.inner_runs
              << " IOE runs (distinct networks), " << res.mapping_evaluations << " mappings evaluated, "
              << fixed(res.seconds, 2) << " s\n\n"
              << "front: " << res.front.size()
              << " architectures (accuracy proxy, latency, energy of the best-P mapping)"
              << (res.front.size() > a.top ? "; the " + std::to_string(a.top) + " most accurate:" : ":") << '\n';
    auto shown = res.front;
    std::sort(shown.begin(), shown.end(), [](const auto& x, const auto& y) { return x.accuracy > y.accuracy; });
    std::cout << "  " << std::left << std::setw(34) << "architecture" << std::right << std::setw(9) << "acc (%)"
              << std::setw(10) << "T (ms)" << std::setw(10) << "E (mJ)" << std::setw(8) << "P" << std::setw(7)
              << "trans"
              << "  " << mp::Platform::joined(cus) << " blocks\n";
    for (std::size_t i = 0; i < shown.size() && i < a.top; ++i) {
        const auto& p = shown[i];
        std::vector<std::size_t> count(cus.size(), 0);
        for (auto c : p.mapping.best.cus) ++count[c];
        std::string use;
        for (std::size_t c = 0; c < cus.size(); ++c) {
            if (c) use += '/';
            use += std::to_string(count[c]);
        }
        std::cout << "  " << std::left << std::setw(34) << mp::VigSpace::to_string(p.architecture) << std::right
                  << std::setw(9) << fixed(p.accuracy, 2) << std::setw(10) << fixed(p.mapping.best.value.t, 2)
                  << std::setw(10) << fixed(p.mapping.best.value.e, 2) << std::setw(8) << fixed(p.mapping.best.p, 3)
                  << std::setw(7) << mp::transitions(p.mapping.best.cus) << "  " << use
                  << (dvfs_search ? "  " + rep.platform.dvfs[p.mapping.best.dvfs].name : "") << '\n';
    }
}

inline void print_cosearch_table3(const CoSearchArgs& a, const mp::CoSearchReport& rep) {
    const auto& c = rep.comparison;
    const auto& cus = rep.platform.cus;
    const auto letter = cu_letters(cus);
    std::cout << "\nstandalone vs distributed (as MaGNAS Table 3) for " << mp::VigSpace::to_string(c.architecture)
              << ", latency budget " << fixed(c.latency_budget, 2) << " ms (+"
              << fixed(100 * a.request.latency_increase, 0) << " % over the fastest standalone), DVFS "
              << rep.platform.dvfs[rep.platform.reference_dvfs].name << ":\n"
              << "  " << std::left << std::setw(17) << "mapping option" << std::setw(5) << "Stem" << std::setw(33)
              << "Grapher" << std::setw(33) << "FFN" << std::setw(4) << "Cls" << std::right << std::setw(8)
              << "#transit" << std::setw(9) << "Lat." << std::setw(9) << "Enrg." << '\n';
    for (std::size_t i = 0; i < c.standalone.size(); ++i)
        table3_row(std::cout, cus[c.standalone_cus[i]] + "-only", c.standalone[i], c.blocks, letter);
    for (const auto& s : c.transitions_1) table3_row(std::cout, "constr-transit1", s, c.blocks, letter);
    for (const auto& s : c.transitions_2) table3_row(std::cout, "constr-transit2", s, c.blocks, letter);
    table3_row(std::cout, "IOE", c.ioe.best, c.blocks, letter);
    if (c.ioe.fallback) std::cout << "note: " << c.ioe.note << '\n';
    std::cout << "  (letters: ";
    for (std::size_t k = 0; k < cus.size(); ++k) std::cout << (k ? ", " : "") << letter[k] << " = " << cus[k];
    std::cout << "; constr-transit-k: the two Pareto-optimal mappings with at most k transitions closest in latency "
                 "to the IOE's)\n";
    if (!a.plot.empty()) std::cout << "plot written to " << a.plot << '\n';
}

inline void run_cosearch(CoSearchArgs& a) {
    cap_threads(a.threads);
    if (!a.plot.empty()) io::check_writable(a.plot);
    auto& req = a.request;
    req.search.population = a.ooe_population;
    req.search.generations = a.ooe_generations;
    req.search.inner.population = a.ioe_population;
    req.search.inner.generations = a.ioe_generations;
    req.search.threads = a.threads;
    req.search.seed = a.seed;
    req.ioe_front = !a.plot.empty();
    const auto rep = mp::run_cosearch(req);
    if (!a.plot.empty()) write_cosearch_plot(a.plot, rep);
    if (a.json) return print_json(cosearch_json(a, rep));
    print_cosearch_front(a, rep);
    print_cosearch_table3(a, rep);
}

}  // namespace map_detail

/// Register `dnncost map`.
inline void add_map_command(Command& app) {
    auto a = std::make_shared<map_detail::MapArgs>();
    auto& req = a->request;
    auto* map = app.add_subcommand("map",
                                   "Map a network's blocks onto compute units: Pareto set of (latency, energy) "
                                   "mappings, standalone mappings and the best P (MaGNAS inner search)");
    map->add_option("--blocks", req.blocks,
                    "block-cost CSV: block,cu,dvfs,t_comp,e_comp,t_in,t_out,e_in,e_out (ms, mJ)");
    map->add_option("--cus", a->cus,
                    "the platform's compute units, comma-separated (a row naming another is an error)");
    map->add_option("--vig", req.vig, "instead of --blocks: a ViG subnet, e.g. 4Mpf320-4Mpf320-4Mpf320-4Mpf320");
    map->add_option("--platform", req.platform, "platform of --vig: xavier | roofline")
        ->check(check::member({"xavier", "roofline"}))
        ->capture_default_str();
    map->add_option("--dvfs", req.dvfs, "DVFS setting name, or 'all' for brute force (default: the first setting)");
    map->add_option("--gamma1", a->gamma1, "exponent of energy in P")
        ->check(check::finite(check::Sign::non_negative))
        ->capture_default_str();
    map->add_option("--gamma2", a->gamma2, "exponent of latency in P")
        ->check(check::finite(check::Sign::non_negative))
        ->capture_default_str();
    map->add_option("--t-target", a->t_target, "latency target: T < this (ms)")
        ->check(check::finite(check::Sign::positive));
    map->add_option("--e-target", a->e_target, "energy target: E < this (mJ)")
        ->check(check::finite(check::Sign::positive));
    map->add_option("--pop", a->population, "NSGA-II population")
        ->transform(check::integer(2, 1000000, "a population size in [2, 10^6]"))
        ->capture_default_str();
    map->add_option("--gens", a->generations, "generations after the initial one (0 = no limit)")
        ->transform(check::integer(0, std::int64_t{1} << 30, "a generation count in [0, 2^30]"))
        ->capture_default_str();
    map->add_option("--max-evals", a->max_evaluations, "evaluation budget (0 = no limit)")
        ->transform(check::integer(0, std::int64_t{1} << 40, "an evaluation budget in [0, 2^40]"))
        ->capture_default_str();
    map->add_option("--seed", a->seed, "random seed")->transform(check::seed())->capture_default_str();
    map->add_option("--pm", a->mutation_probability,
                    "per-gene mutation probability (default 1/blocks; MaGNAS used 0.4)")
        ->check(check::finite(check::Sign::non_negative));
    map->add_flag("--uniform-init", a->uniform_init,
                  "uniform initial mappings instead of CU-preference stratified ones");
    map->add_flag("--exact", req.exact, "also enumerate every mapping (up to 2^20) and report the exact front");
    add_json_flag(*map, a->json, "print one JSON document instead of text");
    map->add_flag("--csv", a->csv, "print the mappings as CSV rows (kind,t_ms,e_mj,p,dvfs,feasible,mapping)");
    map->add_option("--format", a->format, "deprecated: --json or --csv")
        ->check(check::member({"text", "csv", "json"}))
        ->group("");
    map->add_option("--plot", a->plot, "write an SVG of the front with the standalone mappings marked")
        ->check(check::output_path());
    map->add_option("--export-blocks", a->export_blocks,
                    "write the network's block costs (every DVFS setting) as a block-cost CSV")
        ->check(check::output_path());
    map->callback([a] { map_detail::run_map(*a); });
}

/// Register `dnncost cosearch`.
inline void add_cosearch_command(Command& app) {
    auto c = std::make_shared<map_detail::CoSearchArgs>();
    auto& req = c->request;
    auto* co = app.add_subcommand("cosearch",
                                  "Nested architecture x mapping search (MaGNAS OOE + IOE) on the ViG space, "
                                  "with an accuracy PROXY, and a standalone vs distributed comparison");
    co->add_option("--platform", req.platform, "xavier | roofline")
        ->check(check::member({"xavier", "roofline"}))
        ->capture_default_str();
    co->add_option("--dataset", req.dataset, "accuracy proxy anchor: cifar10 | cifar100 | flowers | tiny-imagenet")
        ->check(check::member({"cifar10", "cifar100", "flowers", "tiny-imagenet"}))
        ->capture_default_str();
    auto count = check::integer(1, 1000000, "a count in [1, 10^6]");
    co->add_option("--ooe-pop", c->ooe_population, "outer population")
        ->transform(check::integer(2, 1000000, "a population size in [2, 10^6]"))
        ->capture_default_str();
    co->add_option("--ooe-gens", c->ooe_generations, "outer generations after the initial one")
        ->transform(count)
        ->capture_default_str();
    co->add_option("--ioe-pop", c->ioe_population, "inner population")
        ->transform(check::integer(2, 1000000, "a population size in [2, 10^6]"))
        ->capture_default_str();
    co->add_option("--ioe-gens", c->ioe_generations, "inner generations after the initial one")
        ->transform(count)
        ->capture_default_str();
    co->add_option("--threads", c->threads,
                   "architectures evaluated at once (0 = all cores); the result does not depend on it")
        ->transform(check::integer(0, 1024, "a thread count in [0, 1024]"))
        ->capture_default_str();
    co->add_option("--seed", c->seed, "random seed")->transform(check::seed())->capture_default_str();
    co->add_flag("--dvfs-search", req.search.dvfs_brute_force,
                 "run every IOE at each DVFS setting (brute force) and keep the best");
    co->add_option("--latency-increase", req.latency_increase,
                   "Table 3 comparison: latency budget over the fastest standalone mapping (0.3 = +30 %)")
        ->check(check::finite(check::Sign::non_negative))
        ->capture_default_str();
    co->add_option("--compare", req.compare,
                   "architecture of the Table 3 comparison (default: the most accurate on the front)");
    co->add_option("--top", c->top, "front rows to print")->transform(count)->capture_default_str();
    add_json_flag(*co, c->json, "print one JSON document instead of text");
    co->add_option(
          "--plot", c->plot,
          "write an SVG: the front's best mappings, and the compared network's IOE front and standalone mappings")
        ->check(check::output_path());
    co->callback([c] { map_detail::run_cosearch(*c); });
}

/// Register `dnncost map` and `dnncost cosearch`.
void add_map_commands(Command& app, Context& ctx) {
    (void)ctx;  // both exit 0 on success; an error is an exception
    add_map_command(app);
    add_cosearch_command(app);
}

}  // namespace dnncost::cli
