#!/usr/bin/env python3
"""How a device model's prices compare with the runtime's profiled times within one kernel family,
by the kernels' arithmetic intensity (FLOPs per byte moved) and by their price: does the ratio move
with the kind of work inside the family? Reads the JSON documents of `dnncost device check --json`
(run with the model's own rules, so that each network lists its `kernel_prices`) and prints, per
band and per file, the kernels counted and the median of profiled / priced time.
  ratio_by_intensity.py [--family Conv] CHECK.json[.gz]...
"""
import argparse, gzip, json, math, os, statistics, sys

INTENSITY_BANDS = [0, 5, 10, 20, 40, 80, 160, math.inf]
PRICE_BANDS = [0, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, math.inf]


def kernels_of(path, family):
    try:
        doc = json.load(gzip.open(path, "rt") if path.endswith(".gz") else open(path))
    except (OSError, ValueError) as e:
        raise SystemExit(f"{path}: cannot read a device check document: {e}")
    if doc.get("prices_by_family") is None:
        raise SystemExit(f"{path}: no prices (device check ran with --rules other than the model's)")
    out = []
    for net in doc.get("per_network", []):
        for k in net.get("kernel_prices", []):
            if k["kind"].split("+")[0] == family and k["priced_ms"] > 0 and k["profiled_ms"] > 0 and k["bytes"] > 0:
                out.append((k["flops"] / k["bytes"], k["priced_ms"], k["profiled_ms"]))
    return out


def table(title, files, key, bands):
    print(f"\n| {title} | " + " | ".join(os.path.basename(f) for f in files) + " |")
    print("|---" * (len(files) + 1) + "|")
    for lo, hi in zip(bands[:-1], bands[1:]):
        cells = []
        for rows in files.values():
            r = [p / q for (x, q, p) in rows if lo <= key(x, q) < hi]
            cells.append(f"{statistics.median(r):.2f} ({len(r)})" if r else "-")
        if any(c != "-" for c in cells):
            print(f"| {lo:g}–{hi:g} | " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", default="Conv", help="kernel family (a kind's first unit)")
    ap.add_argument("checks", nargs="+", help="`dnncost device check --json` documents")
    a = ap.parse_args()
    files = {f: kernels_of(f, a.family) for f in a.checks}
    if not any(files.values()):
        raise SystemExit(f"no {a.family} kernel with a price and a profiled time in {', '.join(a.checks)}")
    print(f"median profiled / priced time of the {a.family} kernels (kernels)")
    table("FLOPs per byte", files, lambda x, q: x, INTENSITY_BANDS)
    table("price, ms", files, lambda x, q: q, PRICE_BANDS)


if __name__ == "__main__":
    sys.exit(main())
