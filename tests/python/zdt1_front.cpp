// The C++ NSGA-II on the library's ZDT1 (search/problems.hpp), for tests/python/test_search.py
// to compare with dnncost.nsga2 on a ZDT1 written in Python: one line per front member, its
// genes then its two objectives, every number to 17 significant digits.
//
//   dnncost_zdt1_front POPULATION GENERATIONS SEED THREADS VARIABLES
#include <cstdio>
#include <cstdlib>
#include <exception>

#include <dnncost/search/nsga2.hpp>
#include <dnncost/search/problems.hpp>

int main(int argc, char** argv) try {
    if (argc != 6) {
        std::fprintf(stderr, "usage: %s POPULATION GENERATIONS SEED THREADS VARIABLES\n", argv[0]);
        return 2;
    }
    dnncost::search::problems::Zdt1 zdt1;
    zdt1.variables = std::strtoull(argv[5], nullptr, 10);
    dnncost::search::Options o;
    o.population = std::strtoull(argv[1], nullptr, 10);
    o.generations = std::strtoull(argv[2], nullptr, 10);
    o.threads = std::strtoull(argv[4], nullptr, 10);
    dnncost::search::Nsga2 nsga(zdt1, o, std::strtoull(argv[3], nullptr, 10));
    for (const auto& ind : nsga.run().front) {
        for (double x : ind.genome) std::printf("%.17g ", x);
        std::printf("%.17g %.17g\n", ind.objectives[0], ind.objectives[1]);
    }
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "dnncost_zdt1_front: error: %s\n", e.what());
    return 1;
}
