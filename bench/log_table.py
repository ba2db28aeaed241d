#!/usr/bin/env python3
"""The table of a dnncost_reproduce_spaces run from its per-fit .log lines, for a run that was
stopped before it wrote its own table (or to merge several logs). Mean ± sample std over the
seeds found; the 'seeds' column says how many.

    python3 bench/log_table.py [--compact] bench/results/NAME.log [more.log ...] > table.md

--compact: one row per setting and target, one column per preset, each cell
"Spearman / ±10 % (seeds)" as means over the seeds.
"""
import re
import statistics
import sys
from collections import defaultdict

FIT = re.compile(r"^(?P<setting>.+?) seed (?P<seed>\d+) (?P<preset>\w+) (?P<target>[^:]+): spearman (?P<sp>[-\d.e]+|nan), "
                 r"±10% (?P<w10>[-\d.e]+|nan), mape (?P<mape>[-\d.e]+|nan), (?P<epochs>\d+) epochs, (?P<secs>[\d.e+-]+) s")


def cell(values, scale=1.0, digits=3):
    v = [x * scale for x in values]
    sd = statistics.stdev(v) if len(v) > 1 else 0.0
    return f"{statistics.mean(v):.{digits}f} ± {sd:.{digits}f}"


PRESETS = ["additive", "hifisage", "brpnas", "perfsage"]


def compact(fits):
    presets = [p for p in PRESETS if any(k[2] == p for k in fits)]
    presets += sorted({k[2] for k in fits} - set(presets))
    print("| setting | target | " + " | ".join(presets) + " |")
    print("|---|---|" + "---|" * len(presets))
    for setting, target in sorted({(k[0], k[1]) for k in fits}):
        cells = {}
        for p in presets:
            runs = list(fits.get((setting, target, p), {}).values())
            if runs:
                cells[p] = (statistics.mean(r[0] for r in runs), statistics.mean(r[2] for r in runs), len(runs))
        row = []
        for p in presets:
            if p not in cells:
                row.append("")
                continue
            row.append(f"{cells[p][0]:.3f} / {cells[p][1]:.2f} ({cells[p][2]})")
        print(f"| {setting} | {target} | " + " | ".join(row) + " |")


def main(paths):
    as_compact = bool(paths) and paths[0] == "--compact"
    if as_compact:
        paths = paths[1:]
    fits = defaultdict(dict)  # (setting, target, preset) -> seed -> values (the last line of a seed wins)
    for path in paths:
        try:
            f = open(path, encoding="utf-8")
        except OSError as e:
            sys.exit(f"log_table: cannot read {path}: {e.strerror}")
        with f:
            for line in f:
                m = FIT.match(line.strip())
                if m:
                    key = (m["setting"], m["target"], m["preset"])
                    fits[key][int(m["seed"])] = tuple(float(m[k]) for k in ("sp", "mape", "w10", "epochs", "secs"))
    if not fits:
        sys.exit(f"log_table: no fit lines in {', '.join(paths)}")
    if as_compact:
        compact(fits)
        return
    print("| setting | target | preset | seeds | Spearman | MAPE % | ±10% | epochs | train s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (setting, target, preset) in sorted(fits):
        runs = list(fits[(setting, target, preset)].values())
        cols = list(zip(*runs))
        print(f"| {setting} | {target} | {preset} | {len(runs)} | {cell(cols[0])} | {cell(cols[1], 100, 2)} | "
              f"{cell(cols[2])} | {cell(cols[3], digits=0)} | {cell(cols[4], digits=1)} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
