#!/usr/bin/env python3
"""What a non-linear learner reaches on the NB201 latency tables with far more data than 100
networks: gradient-boosted trees on the full cell encoding (6 edges x 5 operations, one-hot),
trained on log latency, 3 random splits per size, tested on 3,000 other networks.

A side check for bench/results/noise_nb201.md, not part of the build or the tests: it
needs numpy, scipy and scikit-learn, which scripts/deps.sh does not install.
    python3 bench/gbm_ceiling.py [data/nb201/latency_ms.csv] [device ...]
"""
import csv
import re
import sys

import numpy as np
from scipy.stats import spearmanr
from sklearn.ensemble import HistGradientBoostingRegressor

OPS = ["none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"]


def encode(arch):
    edges = re.findall(r"([a-z_0-9x]+)~\d", arch)
    if len(edges) != 6:
        raise ValueError(f"bad NB201 string: {arch!r}")
    v = np.zeros(30)
    for i, op in enumerate(edges):
        v[5 * i + OPS.index(op)] = 1.0
    return v


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "data/nb201/latency_ms.csv"
    devices = sys.argv[2:] or ["gold_6240", "silver_4114"]
    rows = list(csv.DictReader(open(path, newline="")))
    x = np.array([encode(r["arch"]) for r in rows])
    print("| device | training networks | Spearman | within ±10 % |")
    print("| --- | --- | --- | --- |")
    for dev in devices:
        y = np.array([float(r[dev]) for r in rows])
        for n in (100, 1000, 10000):
            res = []
            for seed in range(3):
                idx = np.random.default_rng(seed).permutation(len(y))
                tr, te = idx[:n], idx[-3000:]
                model = HistGradientBoostingRegressor(max_iter=500, learning_rate=0.05, random_state=0)
                model.fit(x[tr], np.log(y[tr]))
                p, t = np.exp(model.predict(x[te])), y[te]
                res.append((spearmanr(p, t)[0], np.mean(np.abs(p / t - 1) <= 0.1)))
            rho, w10 = np.mean(res, axis=0)
            print(f"| {dev} | {n} | {rho:.3f} | {w10:.3f} |")


if __name__ == "__main__":
    main()
