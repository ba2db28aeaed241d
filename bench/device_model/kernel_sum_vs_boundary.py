#!/usr/bin/env python3
"""A device model with its sample boundary against the same model without it (the kernel sum), on
stores measured earlier, as given and after the global factor `device calibrate` takes from a shot
store (the median of measured over priced), without measuring anything.

  kernel_sum_vs_boundary.py --cli build/release/dnncost --model M.dnnc --shots SHOTS.csv
                            [--kernel-sum-out K.dnnc] [--larger PLAN.json MEASURED.json] STORE...

The model without the boundary (written to K.dnnc, default M.kernel_sum.dnnc) is the same file with
its three rates set to zero (the payload of version 8: version, rules, run overhead, calibration
factor, then the rates). Store ids that end in .onnx are read beside the store; NB201 cells get
their space's prefix. --larger: a `device extrapolate --networks N --plan --json` listing priced by
`--model M --model K.dnnc`, and the measured listing of the same networks. Prints a markdown table,
one row per store."""
import argparse
import csv
import json
import os
import statistics
import struct
import subprocess
import sys
import zlib


def without_boundary(src, dst):
    b = open(src, "rb").read()
    at = 8 + 4
    kind_len, = struct.unpack_from("<I", b, at)
    at += 4 + kind_len + 8  # kind, config hash
    payload_len, = struct.unpack_from("<Q", b, at)
    at += 8
    payload = bytearray(b[at:at + payload_len])
    q = 4  # payload version
    rules_len, = struct.unpack_from("<Q", payload, q)
    q += 8 + rules_len + 8 + 8  # rules, run overhead, calibration factor
    for i in range(3):
        struct.pack_into("<d", payload, q + 8 * i, 0.0)
    out = bytearray(b[:at]) + payload + b[at + payload_len:-4]
    out += struct.pack("<I", zlib.crc32(bytes(out)) & 0xFFFFFFFF)
    open(dst, "wb").write(out)


def store_rows(store):
    rows = {}
    with open(store) as f:
        for r in csv.DictReader(f):
            if r["status"] == "ok":
                rows[r["id"]] = float(r["latency_ms"])
    return rows


def prices(cli, model, store, ids):
    here = os.path.dirname(os.path.abspath(store))
    args = [os.path.join(here, i) if i.endswith(".onnx") else ("nb201:" + i if i.startswith("|") else i) for i in ids]
    out = subprocess.run([cli, "predict", "--model", model, "--json"] + args, check=True, capture_output=True,
                         text=True).stdout
    return [p["latency"] for p in json.loads(out)["predictions"]]


def priced_store(cli, models, store):
    rows = store_rows(store)
    ids = list(rows)
    return [rows[i] for i in ids], [prices(cli, m, store, ids) for m in models]


def summary(ratios):
    mape = 100 * sum(abs(r - 1) for r in ratios) / len(ratios)
    within = sum(abs(r - 1) <= 0.1 for r in ratios)
    return f"{mape:.1f} % / {within} of {len(ratios)}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default="build/release/dnncost")
    ap.add_argument("--model", required=True)
    ap.add_argument("--shots", required=True)
    ap.add_argument("--larger", nargs=2, metavar=("PLAN", "MEASURED"))
    ap.add_argument("--kernel-sum-out", default=None, help="where to write the model without the boundary")
    ap.add_argument("stores", nargs="*")
    a = ap.parse_args()
    kernel_sum = a.kernel_sum_out or os.path.splitext(a.model)[0] + ".kernel_sum.dnnc"
    without_boundary(a.model, kernel_sum)
    models = [a.model, kernel_sum]
    measured, priced = priced_store(a.cli, models, a.shots)
    factors = [statistics.median(m / p for m, p in zip(measured, pm)) for pm in priced]
    print(f"shot factor: with the boundary {factors[0]:.3f}, kernel sum {factors[1]:.3f}")
    print("| store | with the boundary: as given -> calibrated | kernel sum: as given -> calibrated |")
    print("|---|---|---|")
    tables = [(s, *priced_store(a.cli, models, s)) for s in a.stores]
    if a.larger:
        plan, listing = (json.load(open(f)) for f in a.larger)
        latency = {n["name"]: n["measured_ms"] for n in listing["networks"]}
        names = [n["name"] for n in plan["networks"] if n["name"] in latency]
        by_name = {n["name"]: n["predicted_ms"] for n in plan["networks"]}

        def price_of(model, name):
            p = by_name[name]
            return next(v for k, v in p.items() if os.path.abspath(k) == os.path.abspath(model))

        tables.append(("larger networks", [latency[n] for n in names],
                       [[price_of(m, n) for n in names] for m in models]))
    for name, measured, priced in tables:
        cells = []
        for f, pm in zip(factors, priced):
            ratios = [p / m for m, p in zip(measured, pm)]
            cells.append(f"{summary(ratios)} -> {summary([f * r for r in ratios])}")
        print(f"| {name} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    sys.exit(main())
