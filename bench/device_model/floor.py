#!/usr/bin/env python3
"""The measurement floor: the same networks measured twice. For every store of FIRST_DIR that
SECOND_DIR also holds (same file name), the MAPE of the second measurement against the first,
raw and after their median ratio, and the share within ±10 % after it; beside the factor, how the
reference network moved between the two (the median of its measurements in each store's sidecar,
second over first: a whole run in a slow spell shows there, where the harness's drift check, within
one run, cannot see it). Prints a table.
  floor.py FIRST_DIR SECOND_DIR"""
import csv, glob, os, statistics, sys

from evaluate import store_references


def load(path):
    return {r["id"]: float(r["latency_ms"]) for r in csv.DictReader(open(path)) if r["status"] == "ok"}


def reference_median(store):
    """The median of the reference network's measurements in STORE's sidecar, with its key."""
    refs = store_references(store)
    values = refs[0].get("values_ms") if refs else None
    return (refs[0].get("key"), statistics.median(values)) if values else (None, None)


def reference_ratio(first, second):
    (ka, a), (kb, b) = reference_median(first), reference_median(second)
    return f"{b / a:.3f}" if a and b and ka == kb else "-"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    first_dir, second_dir = sys.argv[1:]
    print("store | n | MAPE raw | factor | reference | MAPE after it | within ±10 % after it")
    for first in sorted(glob.glob(os.path.join(first_dir, "*.csv"))):
        second = os.path.join(second_dir, os.path.basename(first))
        if not os.path.exists(second):
            continue
        a, b = load(first), load(second)
        r = [b[k] / a[k] for k in a if k in b]
        if not r:
            print(f"{os.path.basename(first)} | 0 | no network measured in both")
            continue
        f = statistics.median(r)
        print(f"{os.path.basename(first)} | {len(r)} | {100 * statistics.mean(abs(x - 1) for x in r):.1f} % | "
              f"{f:.3f} | {reference_ratio(first, second)} | {100 * statistics.mean(abs(x / f - 1) for x in r):.1f} % | "
              f"{100 * sum(abs(x / f - 1) <= 0.1 for x in r) / len(r):.0f} %")


if __name__ == "__main__":
    main()
