#!/usr/bin/env python3
"""A device model with its sample boundary against the same model without it (the kernel sum), on
stores measured earlier, as given and after the global factor `device calibrate` takes from a shot
store (the median of measured over priced), without measuring anything.

  kernel_sum_vs_boundary.py --cli build/release/dnncost --model M.dnnc --shots SHOTS.csv
                            --kernel-sum-out K.dnnc [--larger PLAN.json MEASURED.json] STORE...

The model without the boundary (written to K.dnnc) is the same file with its three rates set to
zero (payload versions 2 to 8: version, rules, run overhead, calibration factor, then the rates),
checked with `device info`. Store ids that end in .onnx are read beside the store; NB201 cells get
their space's prefix. --larger: a `device extrapolate --networks N --plan --json` listing priced by
`--model M --model K.dnnc`, and the measured listing of the same networks. Prints a markdown table,
one row per store."""
import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import zlib

from evaluate import disturbed, load_store, predict


def without_boundary(src, dst):
    b = open(src, "rb").read()
    if not b.startswith(b"\x89DNNC\r\n\x1a") or len(b) < 64:
        raise SystemExit(f"{src}: not a dnncost model file")
    at = 8 + 4
    kind_len, = struct.unpack_from("<I", b, at)
    at += 4 + kind_len + 8  # kind, config hash
    payload_len, = struct.unpack_from("<Q", b, at)
    at += 8
    payload = bytearray(b[at:at + payload_len])
    version, = struct.unpack_from("<I", payload, 0)
    if not 2 <= version <= 8:  # the rates follow the rules, overhead and factor from version 2 on
        raise SystemExit(f"{src}: device model payload version {version}: this script reads 2 to 8")
    q = 4
    rules_len, = struct.unpack_from("<Q", payload, q)
    q += 8 + rules_len + 8 + 8  # rules, run overhead, calibration factor
    for i in range(3):
        struct.pack_into("<d", payload, q + 8 * i, 0.0)
    out = bytearray(b[:at]) + payload + b[at + payload_len:-4]
    out += struct.pack("<I", zlib.crc32(bytes(out)) & 0xFFFFFFFF)
    with open(dst + ".tmp", "wb") as f:
        f.write(out)
    os.replace(dst + ".tmp", dst)


def check_rates_zero(cli, model):
    out = subprocess.run([cli, "device", "info", "--model", model, "--json"], check=True, capture_output=True,
                         text=True).stdout
    rates = json.loads(out)["sample_boundary"]
    if any(rates[k] != 0 for k in ("ms_per_kernel", "ms_per_output_mb", "ms_per_reorder_mb")):
        raise SystemExit(f"{model}: the rates were not zeroed: {rates}")


def priced_store(cli, models, store):
    why = disturbed(store)
    if why:
        print(f"kernel_sum_vs_boundary.py: warning: {store} was measured on a disturbed machine ({why})",
              file=sys.stderr)
    rows = load_store(store)
    ids = list(rows)
    here = os.path.dirname(os.path.abspath(store))
    return [rows[i] for i in ids], [predict(cli, m, ids, here) for m in models]


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
    ap.add_argument("--kernel-sum-out", required=True, help="where to write the model without the boundary")
    ap.add_argument("stores", nargs="*")
    a = ap.parse_args()
    kernel_sum = a.kernel_sum_out
    without_boundary(a.model, kernel_sum)
    check_rates_zero(a.cli, kernel_sum)
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
            for k, v in p.items():
                if os.path.abspath(k) == os.path.abspath(model):
                    return v
            raise SystemExit(f"{a.larger[0]}: no prices of {model} (list it with --model when planning)")

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
