#!/usr/bin/env python3
"""How a device model's price of one kernel family compares with the runtime's profiled times, by the
size of the kernel: does the ratio move with the work within the family? Joins each profiled kernel
(a `*.kernels.jsonl` of `dnncost measure --profile` or of `device calibrate`'s work directory) with the
model's per-kernel price of the same node (`dnncost predict --per-kernel`), by the node's name. That
join holds where the runtime's kernels keep the graph's node names (ONNX Runtime at "disabled").
Each profile is matched to the ONNX file among NETWORKS that shares most of its kernel names.
Prints the median price / profiled time per band of price, and the slope of log(price / profiled)
on log(price) over the family's kernels.
  kernel_ratio_by_size.py --cli build/release/dnncost --model M.dnnc --kernels K.jsonl [--family Conv] NETWORK.onnx...
"""
import argparse, json, math, os, statistics, subprocess, sys


def per_kernel_prices(cli, model, network):
    out = subprocess.run([cli, "predict", "--model", model, "--per-kernel", network], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{network}: predict failed: {out.stderr.strip()[:400]}")
    prices = {}
    for line in out.stdout.splitlines():
        cols = line.split("\t")
        if len(cols) >= 4:  # INPUT, KERNEL KIND, ms, first nodes
            prices[cols[3].split(",")[0].strip()] = (cols[1], float(cols[2]))
    return prices


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default="build/release/dnncost")
    ap.add_argument("--model", required=True)
    ap.add_argument("--kernels", required=True, help="JSON Lines of profiled networks")
    ap.add_argument("--family", default="Conv", help="kernel kind to compare (as predict --per-kernel names it)")
    ap.add_argument("networks", nargs="+", help="the profiled networks as ONNX files")
    a = ap.parse_args()

    priced = {n: per_kernel_prices(a.cli, a.model, n) for n in a.networks}
    points = []  # (price ms, profiled ms)
    with open(a.kernels) as f:
        for lineno, line in enumerate(f, 1):
            try:
                profile = json.loads(line)
            except ValueError as e:
                raise SystemExit(f"{a.kernels}:{lineno}: not JSON: {e}")
            names = {k["name"] for k in profile.get("kernels", [])}
            network = max(priced, key=lambda n: len(names & priced[n].keys()))
            if not names & priced[network].keys():
                print(f"{a.kernels}:{lineno}: no network shares a kernel name; skipped", file=sys.stderr)
                continue
            for k in profile["kernels"]:
                kind, ms = priced[network].get(k["name"], (None, 0.0))
                if kind == a.family and k["ms"] > 0 and ms > 0:
                    points.append((ms, k["ms"]))
    if len(points) < 3:
        raise SystemExit(f"only {len(points)} {a.family} kernels matched: nothing to compare")

    print(f"| {a.family} price, ms | kernels | median price / profiled |")
    print("|---|---|---|")
    for lo, hi in [(0, 0.05), (0.05, 0.1), (0.1, 0.2), (0.2, 0.5), (0.5, 1), (1, 5), (5, math.inf)]:
        band = [p / t for p, t in points if lo <= p < hi]
        if band:
            print(f"| {lo}–{hi} | {len(band)} | {statistics.median(band):.2f} |")
    x = [math.log(p) for p, _ in points]
    y = [math.log(p / t) for p, t in points]
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxx = sum((v - mx) ** 2 for v in x)
    slope = sum((u - mx) * (v - my) for u, v in zip(x, y)) / sxx if sxx > 0 else float("nan")
    print(f"\n{len(points)} kernels; slope of log(price / profiled) on log(price): {slope:.3f}")


if __name__ == "__main__":
    main()
