# dnncost.nsga2 with a Python objective against the C++ NSGA-II on the library's ZDT1
# (tests/python/zdt1_front.cpp): the same seed gives the same front, number for number.
import math
import subprocess

import dnncost
from conftest import tool


def zdt1(x):
    # the arithmetic of search/problems.hpp's Zdt1, operation for operation
    s = 0.0
    for v in x[1:]:
        s += v
    g = 1.0 + 9.0 * s / float(len(x) - 1)
    return [x[0], g * (1.0 - math.sqrt(x[0] / g))]


def cpp_front(pop, gens, seed, threads, variables):
    out = subprocess.run([tool("DNNCOST_ZDT1_FRONT"), str(pop), str(gens), str(seed), str(threads), str(variables)],
                         check=True, capture_output=True, text=True).stdout
    return sorted(tuple(float(v) for v in line.split()) for line in out.splitlines())


def py_front(result):
    return sorted(tuple(x) + tuple(f) for x, f in zip(result["x"], result["f"]))


def test_zdt1_same_front_as_cpp():
    pop, gens, seed, variables = 24, 15, 7, 6
    r = dnncost.nsga2(zdt1, [(0.0, 1.0)] * variables, 2, pop=pop, gens=gens, seed=seed, threads=2)
    assert r["generations"] == gens and r["evaluations"] == pop * (gens + 1)
    front = py_front(r)
    assert len(front) >= 2
    assert front == cpp_front(pop, gens, seed, 2, variables)
    assert front == cpp_front(pop, gens, seed, 1, variables)


def test_same_seed_same_front_any_threads():
    a = dnncost.nsga2(zdt1, [(0.0, 1.0)] * 4, 2, pop=16, gens=5, seed=3, threads=1)
    b = dnncost.nsga2(zdt1, [(0.0, 1.0)] * 4, 2, pop=16, gens=5, seed=3, threads=2)
    assert py_front(a) == py_front(b)
    c = dnncost.nsga2(zdt1, [(0.0, 1.0)] * 4, 2, pop=16, gens=5, seed=4)
    assert py_front(a) != py_front(c)


def test_objective_that_prices_on_two_threads():
    # the objective takes the GIL in the search's threads and prices with it released again
    from conftest import DEVICE_ALL
    m = dnncost.load(DEVICE_ALL)
    ops = ["none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"]

    def arch(x):
        o = [ops[min(4, int(v))] for v in x]
        return f"|{o[0]}~0|+|{o[1]}~0|{o[2]}~1|+|{o[3]}~0|{o[4]}~1|{o[5]}~2|"

    def evaluate(x):
        return [m.predict_archs(arch(x)), -sum(x)]

    a = dnncost.nsga2(evaluate, [(0.0, 4.999)] * 6, 2, pop=12, gens=3, seed=5, threads=2)
    b = dnncost.nsga2(evaluate, [(0.0, 4.999)] * 6, 2, pop=12, gens=3, seed=5, threads=1)
    assert py_front(a) == py_front(b)
    for x, f in zip(a["x"], a["f"]):
        assert f[0] == m.predict("nb201:" + arch(x))
