#!/usr/bin/env python3
"""One kernel_samples.json from the samples of several device builds of one device (the same rules
and features), each sample key once (the first file's wins), for `dnncost device build --refit`.
  merge_samples.py OUT_DIR/kernel_samples.json FIRST.json MORE.json...
The run overhead is the first file's: every file's own overhead is printed, and they should agree."""
import json, os, sys

if len(sys.argv) < 4:
    raise SystemExit(__doc__)
out, paths = sys.argv[1], sys.argv[2:]
def load(path):
    try:
        with open(path) as f:
            d = json.load(f)
        for field in ("format", "rules_text", "feature_names", "run_overhead_ms", "samples"):
            if field not in d:
                raise ValueError(f"no '{field}'")
        for i, s in enumerate(d["samples"]):
            if not {"key", "kind", "latency_ms", "features"} <= s.keys():
                raise ValueError(f"sample {i + 1} lacks a key, kind, latency or features")
        return d
    except (OSError, ValueError) as e:  # json.JSONDecodeError is a ValueError
        raise SystemExit(f"{path}: not a kernel_samples.json of dnncost device build: {e}")


docs = [load(p) for p in paths]
first = docs[0]
for p, d in zip(paths[1:], docs[1:]):
    if d.get("format") != first.get("format"):
        raise SystemExit(f"{p}: format {d.get('format')!r}, {paths[0]} has {first.get('format')!r}")
    if d["rules_text"] != first["rules_text"]:
        raise SystemExit(f"{p}: other fusion rules than {paths[0]}")
    if d["feature_names"] != first["feature_names"]:
        raise SystemExit(f"{p}: other kernel features than {paths[0]}")
merged, seen = dict(first), set()
merged["samples"] = []
for p, d in zip(paths, docs):
    fresh = [s for s in d["samples"] if s["key"] not in seen]
    seen.update(s["key"] for s in fresh)
    merged["samples"] += fresh
    print(f"{p}: {len(d['samples'])} samples, {len(fresh)} new; run overhead {d['run_overhead_ms']} ms")
print(f"{out}: {len(merged['samples'])} samples")
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
with open(out + ".tmp", "w") as f:
    json.dump(merged, f)
os.replace(out + ".tmp", out)
