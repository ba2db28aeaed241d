#!/usr/bin/env python3
"""Pricing a batch of NB201 networks from Python against the same work in C++ alone.

Both sides build the 64 graphs and price them in one predict call with a committed device model:
C++ timed inside the module with a steady clock (dnncost._time_cpp_batch, no Python in the loop),
Python timed around Estimator.predict_archs (argument conversion, GIL release, result list).
Rounds alternate between the two, back to back; each round keeps its best of `--repeats` batches,
and the ratio is given of the medians of the rounds and, round by round, of each round's pair.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python_overhead.py [--rounds 21]
"""
import argparse
import os
import platform
import random
import statistics
import time

import dnncost

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS = ["none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"]


def nb201_archs(n, seed):
    rng = random.Random(seed)
    edge = lambda j: f"{rng.choice(OPS)}~{j}"
    return [f"|{edge(0)}|+|{edge(0)}|{edge(1)}|+|{edge(0)}|{edge(1)}|{edge(2)}|" for _ in range(n)]


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=os.path.join(ROOT, "data", "devices", "ort-cpu-all-1t.dnnc"))
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()

    m = dnncost.load(a.model)
    archs = nb201_archs(a.batch, 1)
    m.predict_archs(archs)  # warm-up: first-use allocations on both sides
    cpp, py = [], []
    for _ in range(a.rounds):
        cpp.append(dnncost._time_cpp_batch(m, archs, "nb201", a.repeats))
        best = float("inf")
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            m.predict_archs(archs)
            best = min(best, time.perf_counter() - t0)
        py.append(best)
    c, p = statistics.median(cpp), statistics.median(py)
    paired = sorted(a / b for a, b in zip(cpp, py))  # each round's ratio: drift between rounds cancels
    print(f"host: {cpu_name()}, {os.cpu_count()} logical CPUs, load average {os.getloadavg()[0]:.2f}")
    print(f"model: {os.path.basename(a.model)}, batch of {a.batch} NB201 networks, {a.rounds} rounds x best of "
          f"{a.repeats}")
    print(f"C++:    median {c * 1e3:.3f} ms per batch (rounds {min(cpp) * 1e3:.3f} .. {max(cpp) * 1e3:.3f})")
    print(f"Python: median {p * 1e3:.3f} ms per batch (rounds {min(py) * 1e3:.3f} .. {max(py) * 1e3:.3f})")
    print(f"Python runs at {100 * c / p:.1f} % of the C++ speed (ratio of the medians); per round: median "
          f"{100 * statistics.median(paired):.1f} %, range {100 * paired[0]:.1f} .. {100 * paired[-1]:.1f} %")


if __name__ == "__main__":
    main()
