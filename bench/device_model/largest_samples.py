#!/usr/bin/env python3
"""The largest sample of each kernel family of a build, for tests/data/kernel_samples_all_largest.json.

    largest_samples.py BUILD_WORK/kernel_samples.json OUT.json

`device extrapolate --samples` needs only each family's largest sample (by FLOPs) to tell which
kernels of a network lie beyond the build: this keeps those and the file's header, so that a test
can judge kernels beyond a committed model's build without the build's whole sample file.
"""
import json, os, sys, tempfile


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    src, out = sys.argv[1], sys.argv[2]
    try:
        with open(src) as f:
            doc = json.load(f)
        flops = doc["feature_names"].index("log_flops")
        if not doc["samples"]:
            raise ValueError("it has no samples")
        for i, s in enumerate(doc["samples"]):
            if not (isinstance(s.get("kind"), str) and len(s.get("features", [])) > flops):
                raise ValueError(f"sample {i} has no kind or no log_flops feature")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise SystemExit(f"largest_samples.py: {src}: not a kernel sample file ({e})")
    largest = {}
    for s in doc["samples"]:
        family = s["kind"].split("+", 1)[0]
        if family not in largest or s["features"][flops] > largest[family]["features"][flops]:
            largest[family] = s
    doc["samples"] = [largest[f] for f in sorted(largest)]
    # written whole or not at all
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)), suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        os.unlink(tmp)
        raise
    print(f"{out}: {len(doc['samples'])} families")


if __name__ == "__main__":
    main()
