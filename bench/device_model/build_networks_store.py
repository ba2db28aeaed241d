#!/usr/bin/env python3
"""A `device build` networks store (BUILD_WORK/networks.csv: the whole networks it profiled, by
name) made readable by `device residual --data`: each id becomes the ONNX file of that network,
written by `dnncost device networks --kind context --count N --seed SEED --out ONNX_DIR` with the
build's count and seed. Ids are written relative to OUT's directory; a network of the store that
ONNX_DIR lacks is an error (a different seed or count), never a silently shorter store. The
store's sidecar (STORE.device.json) is copied beside OUT.

  build_networks_store.py BUILD_STORE.csv ONNX_DIR OUT.csv"""
import csv
import os
import shutil
import sys


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    store, onnx_dir, out = sys.argv[1:]
    listing = os.path.join(onnx_dir, "networks.tsv")
    files = {}  # network name -> its ONNX file
    try:
        with open(listing) as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                fields = line.rstrip("\n").split("\t")
                if len(fields) < 2 or not fields[0] or not fields[1]:
                    raise SystemExit(f"build_networks_store.py: {listing}:{number}: not 'FILE<TAB>NAME'")
                files[fields[1]] = fields[0]
    except OSError as e:
        raise SystemExit(f"build_networks_store.py: {listing}: {e}")
    try:
        with open(store, newline="") as f:
            reader = csv.DictReader(f)
            fields, rows = reader.fieldnames, list(reader)
    except OSError as e:
        raise SystemExit(f"build_networks_store.py: {store}: {e}")
    if not fields or "id" not in fields or not rows:
        raise SystemExit(f"build_networks_store.py: {store}: not a results store with rows")
    missing = sorted({r["id"] for r in rows} - set(files))
    if missing:
        raise SystemExit(f"build_networks_store.py: {store}: {len(missing)} networks not in {listing} "
                         f"(another seed or count?), first: {missing[0]}")
    absent = sorted({files[r["id"]] for r in rows} - set(os.listdir(onnx_dir)))
    if absent:
        raise SystemExit(f"build_networks_store.py: {onnx_dir}: {len(absent)} files its networks.tsv lists are "
                         f"missing, first: {absent[0]}")
    here = os.path.dirname(os.path.abspath(out))
    for r in rows:
        r["id"] = os.path.relpath(os.path.join(os.path.abspath(onnx_dir), files[r["id"]]), here)
    tmp = out + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, out)
    # the store's sidecar (runner, host, settings) goes with it
    sidecar, out_sidecar = store[:-4] + ".device.json", out[:-4] + ".device.json"
    if store.endswith(".csv") and out.endswith(".csv") and os.path.exists(sidecar):
        shutil.copyfile(sidecar, out_sidecar + ".tmp")
        os.replace(out_sidecar + ".tmp", out_sidecar)
    print(f"build_networks_store.py: {len(rows)} networks of {store} -> {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
