#!/usr/bin/env python3
"""Markdown table of the reports bench/adaptation.sh wrote: per device, the mean over seeds of
Spearman and ±10 % accuracy of the adapted model and of the shots-only ridge floor."""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1]
rows = {}
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    r = json.load(open(path))
    rows.setdefault(r["target"], []).append(r)
print("| device | seeds | adapted Spearman | adapted ±10 % | floor Spearman | floor ±10 % |")
print("| --- | --- | --- | --- | --- | --- |")
means = []
for dev, rs in rows.items():
    s = statistics.mean(r["spearman"] for r in rs)
    w = statistics.mean(r["within_10"] for r in rs)
    has_floor = all("baseline" in r for r in rs)
    fs = statistics.mean(r["baseline"]["spearman"] for r in rs) if has_floor else float("nan")
    fw = statistics.mean(r["baseline"]["within_10"] for r in rs) if has_floor else float("nan")
    means.append((s, w, fs, fw))
    print(f"| {dev} | {len(rs)} | {s:.3f} | {w:.2f} | {fs:.3f} | {fw:.2f} |")
if means:
    m = [statistics.mean(x[i] for x in means) for i in range(4)]
    print(f"| **mean** | | **{m[0]:.3f}** | **{m[1]:.2f}** | {m[2]:.3f} | {m[3]:.2f} |")
