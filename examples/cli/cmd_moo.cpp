// `dnncost moo`: NSGA-II on a standard multi-objective problem, reporting hypervolume, IGD,
// evaluations and wall time (text or one JSON document), optionally writing the front as CSV.
#include <cstdint>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <dnncost/search/hypervolume.hpp>
#include <dnncost/search/indicators.hpp>
#include <dnncost/search/nsga2.hpp>
#include <dnncost/search/problems.hpp>

#include "commands.hpp"
#include "common.hpp"

namespace dnncost::cli {

namespace moo_detail {

struct MooArgs {
    std::string problem = "zdt1";
    std::size_t population = 100;
    std::size_t generations = 250;
    std::size_t max_evaluations = 0;
    double max_seconds = 0.0;
    std::uint64_t seed = 1;
    std::size_t threads = 1;
    double crossover_probability = 0.9;
    double eta_crossover = 20.0;
    double eta_mutation = 20.0;
    double mutation_probability = -1.0;
    double reference = 1.1;
    std::size_t igd_points = 1000;
    bool archive = false;
    bool json = false;
    std::string front_csv;
};

// The analytic front for IGD, or empty where the problem has none here.
template <class P>
std::vector<double> reference_front_of(const P& p, std::size_t points) {
    using namespace search::problems;
    if constexpr (std::is_same_v<P, Constr>) {
        std::vector<double> out;
        for (std::size_t k = 0; k < points; ++k) {
            const double f1 =
                7.0 / 18.0 + (1.0 - 7.0 / 18.0) * static_cast<double>(k) / static_cast<double>(points - 1);
            out.push_back(f1);
            out.push_back(Constr::front_f2(f1));
        }
        return out;
    } else if constexpr (std::is_same_v<P, Srn>) {
        return {};
    } else {
        return p.reference_front(points);
    }
}

// The standard problems, erased to one type so that NSGA-II is compiled once for all of them:
// the same genes, objectives and constraint values, so the same search as on the problem itself.
class AnyProblem {
public:
    using Genome = std::vector<double>;

    template <class P>
    explicit AnyProblem(const P& p)
        : m_bounds(p.bounds()), m_objectives(p.num_objectives()), m_evaluate([p](const Genome& x) {
              search::Evaluation e;
              const auto f = p.evaluate(x);
              e.objectives.assign(f.begin(), f.end());
              if constexpr (search::HasConstraints<P>) {
                  const auto c = p.constraints(x);
                  e.violations.assign(c.begin(), c.end());
              }
              return e;
          }) {
        if constexpr (search::HasConstraints<P>) m_constraints = p.num_constraints();
    }

    std::size_t num_objectives() const { return m_objectives; }
    std::size_t num_constraints() const { return m_constraints; }
    std::vector<search::Bounds> bounds() const { return m_bounds; }
    search::Evaluation evaluate(const Genome& x) const { return m_evaluate(x); }

private:
    std::vector<search::Bounds> m_bounds;
    std::size_t m_objectives = 0, m_constraints = 0;
    std::function<search::Evaluation(const Genome&)> m_evaluate;
};

void run_search(const AnyProblem& problem, const std::vector<double>& reference, const MooArgs& a, Context& ctx) {
    search::Options opt;
    opt.population = a.population;
    opt.generations = a.generations;
    opt.max_evaluations = a.max_evaluations;
    opt.max_seconds = a.max_seconds;
    opt.threads = a.threads;
    opt.archive = a.archive;
    opt.real.crossover_probability = a.crossover_probability;
    opt.real.eta_crossover = a.eta_crossover;
    opt.real.eta_mutation = a.eta_mutation;
    opt.real.mutation_probability = a.mutation_probability;
    search::Nsga2 nsga(problem, opt, a.seed);
    const auto result = nsga.run();

    const std::size_t m = problem.num_objectives();
    const auto& final_set = a.archive ? result.archive : result.front;
    std::vector<double> front;
    for (const auto& ind : final_set) front.insert(front.end(), ind.objectives.begin(), ind.objectives.end());
    const std::vector<double> ref_point(m, a.reference);
    const double hv = search::hypervolume(front, ref_point);
    const bool has_igd = !reference.empty();
    const double igd = has_igd ? search::igd(front, reference, m) : 0.0;
    std::size_t feasible = 0;
    for (const auto& ind : final_set) feasible += ind.feasible() ? 1 : 0;

    if (!a.front_csv.empty()) {
        std::ostringstream csv;
        csv.precision(17);
        for (std::size_t k = 0; k < m; ++k) csv << (k ? "," : "") << 'f' << (k + 1);
        const std::size_t genes = final_set.empty() ? 0 : final_set.front().genome.size();
        for (std::size_t i = 0; i < genes; ++i) csv << ",x" << i;
        csv << ",violation\n";
        for (const auto& ind : final_set) {
            for (std::size_t k = 0; k < m; ++k) csv << (k ? "," : "") << ind.objectives[k];
            for (double x : ind.genome) csv << ',' << x;
            csv << ',' << ind.violation << '\n';
        }
        io::write_file_atomic(a.front_csv, csv.str());
    }

    if (a.json) {
        json j;
        j["problem"] = a.problem;
        j["population"] = a.population;
        j["generations"] = result.generations;
        j["seed"] = a.seed;
        j["threads"] = a.threads;
        j["front_size"] = final_set.size();
        j["feasible"] = feasible;
        j["hv"] = hv;
        j["hv_reference"] = a.reference;
        j["igd"] = has_igd ? json(igd) : json(nullptr);
        j["evaluations"] = result.evaluations;
        j["seconds"] = result.seconds;
        if (!a.front_csv.empty()) j["front_csv"] = a.front_csv;
        print_json(j);
    } else {
        std::cout << "problem " << a.problem << ": NSGA-II, population " << a.population << ", " << result.generations
                  << " generations, seed " << a.seed << ", " << a.threads << " thread(s)\n"
                  << "front: " << final_set.size() << " points (" << feasible << " feasible)"
                  << (a.archive ? " from the archive\n" : "\n") << "hypervolume (reference " << a.reference
                  << " per objective): " << hv << '\n';
        if (has_igd)
            std::cout << "IGD (" << a.igd_points << "-point analytic front): " << igd << '\n';
        else
            std::cout << "IGD: no analytic front for this problem\n";
        std::cout << "evaluations: " << result.evaluations << '\n' << "wall time: " << result.seconds << " s\n";
        if (!a.front_csv.empty()) std::cout << "front written to " << a.front_csv << '\n';
    }
    ctx.exit_code = 0;
}


template <class P>
void run_problem(const P& typed, const MooArgs& a, Context& ctx) {
    const AnyProblem problem(typed);
    run_search(problem, reference_front_of(typed, a.igd_points), a, ctx);
}

inline void run_moo(const MooArgs& args, Context& ctx) {
    namespace pr = search::problems;
    MooArgs a = args;
    cap_threads(a.threads);
    if (!a.front_csv.empty()) io::check_writable(a.front_csv);
    if (a.igd_points < 2) raise<config_error>("moo: --igd-points must be at least 2, got ", a.igd_points);
    if (a.problem == "zdt1") return run_problem(pr::Zdt1{}, a, ctx);
    if (a.problem == "zdt2") return run_problem(pr::Zdt2{}, a, ctx);
    if (a.problem == "zdt3") return run_problem(pr::Zdt3{}, a, ctx);
    if (a.problem == "zdt4") return run_problem(pr::Zdt4{}, a, ctx);
    if (a.problem == "zdt6") return run_problem(pr::Zdt6{}, a, ctx);
    if (a.problem == "dtlz1") return run_problem(pr::Dtlz1{}, a, ctx);
    if (a.problem == "dtlz2") return run_problem(pr::Dtlz2{}, a, ctx);
    if (a.problem == "constr") return run_problem(pr::Constr{}, a, ctx);
    if (a.problem == "srn") return run_problem(pr::Srn{}, a, ctx);
    raise<config_error>("moo: unknown problem '", a.problem, "'");
}

}  // namespace moo_detail

/// Register `dnncost moo`.
void add_moo_commands(Command& app, Context& ctx) {
    auto args = std::make_shared<moo_detail::MooArgs>();
    auto* cmd = app.add_subcommand("moo",
                                   "Run NSGA-II on a standard problem (ZDT, DTLZ, CONSTR, SRN) and report "
                                   "hypervolume, IGD, evaluations and wall time");
    cmd->add_option("--problem", args->problem, "zdt1 | zdt2 | zdt3 | zdt4 | zdt6 | dtlz1 | dtlz2 | constr | srn")
        ->check(check::member({"zdt1", "zdt2", "zdt3", "zdt4", "zdt6", "dtlz1", "dtlz2", "constr", "srn"}))
        ->capture_default_str();
    cmd->add_option("--pop", args->population, "population size (>= 2)")
        ->transform(check::integer(2, 100000, "a population size in [2, 10^5]"))
        ->capture_default_str();
    cmd->add_option("--gens", args->generations, "generations after the initial one (0 = no limit)")
        ->transform(check::integer(0, std::int64_t{1} << 40, "a generation count in [0, 2^40]"))
        ->capture_default_str();
    cmd->add_option("--max-evals", args->max_evaluations, "evaluation budget (0 = no limit)")
        ->transform(check::integer(0, std::int64_t{1} << 50, "an evaluation budget in [0, 2^50]"))
        ->capture_default_str();
    cmd->add_option("--max-seconds", args->max_seconds, "wall-time budget (0 = no limit)")
        ->check(check::finite(check::Sign::non_negative))
        ->check(check::in_range(0, 1e9, "seconds"))
        ->capture_default_str();
    cmd->add_option("--seed", args->seed, "random seed")->transform(check::seed())->capture_default_str();
    cmd->add_option("--threads", args->threads, "evaluation threads (0 = all cores); the front does not depend on it")
        ->transform(check::integer(0, 1024, "a thread count in [0, 1024]"))
        ->capture_default_str();
    cmd->add_option("--pc", args->crossover_probability, "SBX crossover probability")
        ->check(check::in_range(0, 1, "(a probability)"))
        ->capture_default_str();
    cmd->add_option("--eta-c", args->eta_crossover, "SBX distribution index")
        ->check(check::in_range(0, 1e6, "(a distribution index)"))
        ->capture_default_str();
    cmd->add_option("--eta-m", args->eta_mutation, "polynomial mutation distribution index")
        ->check(check::in_range(0, 1e6, "(a distribution index)"))
        ->capture_default_str();
    cmd->add_option("--pm", args->mutation_probability, "per-gene mutation probability (default 1/n)")
        ->check(check::in_range(0, 1, "(a probability)"));
    cmd->add_option("--ref", args->reference, "hypervolume reference value in every objective")
        ->check(check::in_range(-1e12, 1e12, "(an objective value)"))
        ->capture_default_str();
    cmd->add_option("--igd-points", args->igd_points, "points of the analytic front for IGD")
        ->transform(check::integer(1, 10000000, "a point count in [1, 10^7]"))
        ->capture_default_str();
    cmd->add_flag("--archive", args->archive,
                  "report the archive of every non-dominated solution seen instead of "
                  "the final population's front");
    add_json_flag(*cmd, args->json, "print one JSON document (keys hv, igd, evaluations, seconds, ...)");
    cmd->add_option("--front", args->front_csv, "write the front (objectives, genes, violation) to this CSV file")
        ->check(check::output_path());
    cmd->callback([args, &ctx] { moo_detail::run_moo(*args, ctx); });
}

}  // namespace dnncost::cli
