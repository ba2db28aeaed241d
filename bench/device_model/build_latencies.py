#!/usr/bin/env python3
"""The latency each `device build` measured for its profiled networks, side by side: one row per
network (in the first build's order), one column per build as a ratio to the first build's time.
A host whose speed changed between builds shows as columns away from 1; a stretch of one build
measured slow, as a run of rows.
  build_latencies.py BUILD.json [BUILD.json ...]   (the `device build --json` documents)"""
import json
import os
import sys


def latencies(path):
    try:
        with open(path) as f:
            networks = json.load(f)["networks"]["per_network"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"build_latencies.py: {path}: not a device build document ({e})")
    return {n["id"]: n["latency_ms"] for n in networks}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    builds = [latencies(p) for p in sys.argv[1:]]
    first = builds[0]
    # a build is named by the folder its document is in (new_level.sh writes one per folder)
    names = [os.path.basename(os.path.dirname(os.path.abspath(p))) for p in sys.argv[2:]]
    print("\t".join(["#", "network", "ms (first)"] + [f"ratio {n}" for n in names]))
    for i, (net, ms) in enumerate(first.items()):
        ratios = [f"{b[net] / ms:.3f}" if net in b else "-" for b in builds[1:]]
        print("\t".join([str(i), net, f"{ms:.4g}"] + ratios))


if __name__ == "__main__":
    main()
