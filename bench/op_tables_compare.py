#!/usr/bin/env python3
"""Table-summed latency against measured end-to-end latency (docs/cost_tables.md).

usage: op_tables_compare.py DNNCOST WORK_DIR > op_tables_ort.md

WORK_DIR holds, per optimisation level L in (all, disabled):
  e2e_L.csv                      `dnncost measure` store of the full networks and their variants
  table_NET_L.csv                `dnncost table build` table of network NET (mobilenet_v2, resnet50)
  nosink/table_NET_L.csv         optional: the same table measured without the sink
and the variants' ONNX files as thin/NET_I.onnx. Every network is priced with its own network's
table (`dnncost table price --extrapolate`, multilinear and plane) and compared with its
measured latency. Only the standard library is used.
"""
import csv
import json
import os
import statistics
import subprocess
import sys

dnncost, work = sys.argv[1], sys.argv[2]
nets = ["mobilenet_v2", "resnet50"]


def measured(level):
    """Latency by model path: the `ok` result, else the median of the finished rounds of a run
    that was stopped early (counted in `partial`)."""
    ok, rounds = {}, {}
    with open(os.path.join(work, f"e2e_{level}.csv")) as f:
        for row in csv.DictReader(f):
            path = os.path.normpath(os.path.join(work, row["id"]))
            if row["status"] == "ok":
                ok[path] = float(row["latency_ms"])
            elif row["status"] == "round":
                rounds.setdefault(path, []).append(float(row["latency_ms"]))
    partial[level] = sum(1 for p in rounds if p not in ok)
    for p, v in rounds.items():
        ok.setdefault(p, statistics.median(v))
    return ok


partial = {}


def price(table, models, mode):
    args = [dnncost, "table", "price", "--table", table, "--mode", mode, "--extrapolate", "--json"]
    for m in models:
        args += ["--model", m]
    r = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    r = r if isinstance(r, list) else [r]
    return {os.path.normpath(x["model"]): x["latency_ms"] for x in r}


def models_of(net, meas):
    full = [m for m in meas if os.path.basename(m) == f"{net}.onnx"]
    thin = sorted(m for m in meas if os.path.basename(m).startswith(f"{net}_"))
    return full, thin


print("| level | network | models | measured ms (full) | table ms (full) | table / measured, full | "
      "MAPE of variants, multilinear | MAPE, plane | table / measured, variants (median) | "
      "Spearman rank corr., variants |")
print("|---|---|---|---|---|---|---|---|---|---|")
rows_nosink = []


def spearman(a, b):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        for pos, i in enumerate(order):
            r[i] = pos
        return r
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.mean(ra), statistics.mean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return num / den if den else float("nan")


for level in ["all", "disabled"]:
    try:
        meas = measured(level)
    except FileNotFoundError:
        continue
    for net in nets:
        table = os.path.join(work, f"table_{net}_{level}.csv")
        if not os.path.exists(table):
            continue
        full, thin = models_of(net, meas)
        if net in os.environ.get("FULL_ONLY", "").split(","):
            thin = []  # a table of the network's own channel counts only: no variants
        models = full + thin
        try:
            ml = price(table, models, "multilinear")
            pl = price(table, models, "plane")
        except subprocess.CalledProcessError as e:
            print(f"| {level} | {net} | table incomplete: {e.stderr.strip()[:120]} |")
            continue
        f = full[0] if full else None
        if not thin:
            print(f"| {level} | {net} | 1 | {meas[f]:.2f} | {ml[f]:.2f} | {ml[f] / meas[f]:.2f} | - | - | - | - |")
            continue
        ape = [abs(ml[m] - meas[m]) / meas[m] for m in thin]
        ape_pl = [abs(pl[m] - meas[m]) / meas[m] for m in thin]
        ratio = [ml[m] / meas[m] for m in thin]
        rho = spearman([ml[m] for m in thin], [meas[m] for m in thin]) if len(thin) > 2 else float("nan")
        print(f"| {level} | {net} | 1 + {len(thin)} | {meas[f]:.2f} | {ml[f]:.2f} | {ml[f] / meas[f]:.2f} | "
              f"{100 * statistics.mean(ape):.1f} % | {100 * statistics.mean(ape_pl):.1f} % | "
              f"{statistics.median(ratio):.2f} | {rho:.2f} |")
        ns = os.path.join(work, "nosink", f"table_{net}_{level}.csv")
        if f and os.path.exists(ns):
            try:
                v = price(ns, [f], "multilinear")[os.path.normpath(f)]
                rows_nosink.append(f"| {level} | {net} | {meas[f]:.2f} | {v:.1f} | {v / meas[f]:.1f} |")
            except subprocess.CalledProcessError:
                pass

for level, n in partial.items():
    if n:
        print(f"\n{level}: {n} networks measured in fewer rounds than asked (the run was stopped; "
              "median of the finished rounds)")

if rows_nosink:
    print()
    print("Without the sink (each operator's output handed back to the host as a graph output):")
    print()
    print("| level | network | measured ms | table ms, no sink | table / measured |")
    print("|---|---|---|---|---|")
    for r in rows_nosink:
        print(r)
