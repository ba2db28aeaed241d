#!/usr/bin/env python3
"""A device model with its sample boundary against the same model without it (the kernel sum), on
stores measured earlier, as given and after `device calibrate` on shots measured earlier, without
measuring anything.

  kernel_sum_vs_boundary.py --cli build/release/dnncost --model M.dnnc --calibration-work DIR
                            --kernel-sum-out K.dnnc [--larger PLAN.json MEASURED.json] STORE...

The kernel sum (written to K.dnnc) is `device residual --no-boundary --no-residual`: the model as
built, its rates, scale, residual and calibration removed (checked with `device info`). DIR is the
work directory of a `device calibrate` run (its shots.csv and shots.kernels.jsonl); each model is
calibrated on a copy of it, so the calibration makes the choices it made then (global factor, family
or intensity factors) and measures nothing (the shot networks are written again where the copy lacks
them). Store ids that end in .onnx are read beside the store; NB201 cells get their space's prefix.
--larger: a `device extrapolate --networks N --plan --json` listing priced by `--model M --model
K.dnnc`, and the measured listing of the same networks. Prints a markdown table, one row per store,
with each store also at its own median factor (how its networks spread about their level)."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from evaluate import disturbed, load_store, predict


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])}: failed: {out.stderr.strip()[-600:]}")
    return out.stdout


def kernel_sum(cli, model, store, dst):
    run([cli, "device", "residual", "--model", model, "--no-boundary", "--no-residual", "--data", store, "--out", dst,
         "--json"])
    info = json.loads(run([cli, "device", "info", "--model", dst, "--json"]))
    rates = info["sample_boundary"]
    if any(rates[k] != 0 for k in ("ms_per_kernel", "ms_per_output_mb", "ms_per_reorder_mb")) or \
            info["calibration_factor"] != 1:
        raise SystemExit(f"{dst}: not the kernel sum: {rates}, factor {info['calibration_factor']}")


def calibrated(cli, model, work, scratch, name):
    """The model calibrated on a copy of `work`, and the calibration's choices."""
    copy = os.path.join(scratch, name + ".work")
    shutil.copytree(work, copy)
    with open(os.path.join(work, "shots.device.json")) as f:
        runner = json.load(f)["runners"][0]  # a store holds one runner's measurements
    out = os.path.join(scratch, name + ".dnnc")
    doc = json.loads(run([cli, "device", "calibrate", "--model", model, "--runner", runner, "--work", copy, "--out",
                          out, "--json"]))
    if doc.get("measured_again"):
        raise SystemExit(f"{work}: the calibration measured shots again: its store is not complete")
    slope = (doc.get("intensity_factor") or {}).get("slope")
    how = doc["shrinkage"] if isinstance(doc["shrinkage"], str) else \
        f"family factors from {doc['family_factors_from']}, shrinkage {doc['shrinkage']:g}"
    how += f", intensity slope {slope:.3f}" if slope else ""
    if not doc["applied"]:  # no better than none on the shots: the model is kept as given
        return out, f"not applied (leave-one-out {doc['loo_mape']:.1f} %, as given {doc['given_mape']:.1f} %)"
    return out, f"factor {doc['factor']:.3f} ({how}; leave-one-out {doc['loo_mape']:.1f} %)"


def priced_store(cli, models, store):
    """The store's latencies, each model's prices of its networks, and why its runs are not to be
    trusted (None when they are)."""
    why = disturbed(store)
    if why:
        print(f"kernel_sum_vs_boundary.py: warning: {store} was measured on a disturbed machine ({why})",
              file=sys.stderr)
    rows = load_store(store)
    ids = list(rows)
    here = os.path.dirname(os.path.abspath(store))
    return [rows[i] for i in ids], [predict(cli, m, ids, here) for m in models], why


def summary(ratios):
    mape = 100 * sum(abs(r - 1) for r in ratios) / len(ratios)
    within = sum(abs(r - 1) <= 0.1 for r in ratios)
    return f"{mape:.1f} % / {within} of {len(ratios)}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default="build/release/dnncost")
    ap.add_argument("--model", required=True)
    ap.add_argument("--calibration-work", required=True, help="a device calibrate work directory")
    ap.add_argument("--larger", nargs=2, metavar=("PLAN", "MEASURED"))
    ap.add_argument("--kernel-sum-out", required=True, help="where to write the model without the boundary")
    ap.add_argument("stores", nargs="*")
    a = ap.parse_args()
    for need in ("shots.csv", "shots.device.json"):
        if not os.path.isfile(os.path.join(a.calibration_work, need)):
            raise SystemExit(f"{a.calibration_work}: no {need}: not the work directory of a device calibrate run")
    for s in a.stores:
        if not os.path.isfile(s):
            raise SystemExit(f"{s}: no such results store")
    given = [a.model, a.kernel_sum_out]
    with tempfile.TemporaryDirectory() as scratch:
        with_cal, with_how = calibrated(a.cli, a.model, a.calibration_work, scratch, "boundary")
        # the calibration's copy has the shot networks again: a store `device residual` can read
        kernel_sum(a.cli, a.model, os.path.join(scratch, "boundary.work", "shots.csv"), a.kernel_sum_out)
        sum_cal, sum_how = calibrated(a.cli, a.kernel_sum_out, a.calibration_work, scratch, "kernel_sum")
        print(f"calibration: with the boundary {with_how}; kernel sum {sum_how}")
        # the last two columns: each store at its own median factor, its networks' spread about their
        # level with the level itself left out
        print("| store | with the boundary: as given -> calibrated | kernel sum: as given -> calibrated "
              "| with the boundary, own factor | kernel sum, own factor |")
        print("|---|---|---|---|---|")
        models = given + [with_cal, sum_cal]
        tables = [(s, *priced_store(a.cli, models, s)) for s in a.stores]
        if a.larger:
            plan, listing = (json.load(open(f)) for f in a.larger)
            latency = {n["name"]: n["measured_ms"] for n in listing["networks"]}
            names = [n["name"] for n in plan["networks"] if n["name"] in latency]
            by_name = {n["name"]: n["predicted_ms"] for n in plan["networks"]}

            def price_of(model, name):
                for k, v in by_name[name].items():
                    if os.path.abspath(k) == os.path.abspath(model):
                        return v
                raise SystemExit(f"{a.larger[0]}: no prices of {model} (list it with --model when planning)")

            # a network's price scales with the calibration factor alone when the calibration chose
            # one global factor; the larger networks are listed only then
            factors = [json.loads(run([a.cli, "device", "info", "--model", m, "--json"])) for m in models[2:]]
            if all(not f.get("family_factors") and not f.get("intensity_factor") for f in factors):
                tables.append(("larger networks", [latency[n] for n in names],
                               [[price_of(m, n) for n in names] for m in given] +
                               [[f["calibration_factor"] * price_of(m, n) for n in names]
                                for f, m in zip(factors, given)], None))
            else:
                print("kernel_sum_vs_boundary.py: the larger networks left out: a calibration chose more than a "
                      "global factor", file=sys.stderr)
        # stores named from where they part
        root = os.path.commonpath([os.path.abspath(s) for s in a.stores]) if len(a.stores) > 1 else ""
        if root and os.path.isfile(root):
            root = os.path.dirname(root)
        for name, measured, priced, why in tables:
            if name in a.stores and root:
                name = os.path.relpath(os.path.abspath(name), root)
            if why:  # a row to re-take, not to read
                name += f" (disturbed: {why})"
            cells = []
            for as_given, cal in ((priced[0], priced[2]), (priced[1], priced[3])):
                cells.append(f"{summary([p / m for m, p in zip(measured, as_given)])} -> "
                             f"{summary([p / m for m, p in zip(measured, cal)])}")
            for as_given in priced[:2]:
                ratios = [p / m for m, p in zip(measured, as_given)]
                level = statistics.median(ratios)
                cells.append(summary([r / level for r in ratios]))
            print(f"| {name} | {' | '.join(cells)} |")


if __name__ == "__main__":
    sys.exit(main())
