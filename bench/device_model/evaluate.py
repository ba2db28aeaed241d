#!/usr/bin/env python3
"""Accuracy of saved estimators on results stores of `dnncost measure`: MAPE, share within
±10 % and ±25 %, Spearman's rho, median and worst ratio of predicted to measured latency, one row
per (model, store), or with --by-space per (model, store, search space) of a mixed store.
A store whose run the harness would judge disturbed (a reference network in its sidecar that
drifted beyond max(5 %, 3 x its spread)) is marked, so that its figures are re-taken, not reported;
a store the harness warned noisy (the median spread of its networks above the re-measure threshold of
its settings) is named in its own column: its figures stand, with that said beside them.
Writes one JSON document (a list of rows) and prints a markdown table.
  evaluate.py --cli build/release/dnncost --out rows.json [--by-space] --stores STORE... -- MODEL[=LABEL]...
A model argument is FILE or FILE=LABEL."""
import argparse, csv, json, math, os, statistics, subprocess, sys


def load_store(path):
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["status"] == "ok":
                rows[r["id"]] = float(r["latency_ms"])  # the last ok row of an id wins
    return rows


def store_sidecar(store):
    """A store's sidecar document (runner, settings, reference runs; empty without one)."""
    sidecar = (store[:-4] if store.endswith(".csv") else store) + ".device.json"
    try:
        with open(sidecar) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def store_references(store):
    """The reference network's runs in a store's sidecar (empty without one)."""
    return store_sidecar(store).get("references") or []


def noisy(store):
    """The median spread of a store's networks (the last ok row of each) when it is above the
    re-measure threshold of the store's settings, as the harness warns (measure/campaign_impl.hpp);
    else None."""
    threshold = (store_sidecar(store).get("settings") or {}).get("remeasure_spread")
    spreads = {}
    with open(store) as f:
        for r in csv.DictReader(f):
            try:
                if r["status"] == "ok":
                    spreads[r["id"]] = float(r["spread"])
            except (KeyError, TypeError, ValueError):
                continue  # a row without a readable spread says nothing about the noise
    if threshold is None or not spreads:
        return None
    median = statistics.median(spreads.values())
    return median if median > threshold else None


def disturbed(store):
    """Why a store's runs are not to be trusted (its sidecar's reference drifts), or None. The bound
    is the harness's own (measure::reference_drifted in include/dnncost/measure/reference.hpp)."""
    refs = store_references(store)
    # a drift whose slow spans' networks the harness measured again did not reach the results
    why = [f"reference drifted {100 * r['drift']:.1f} %" for r in refs
           if r.get("drift", 0) > max(0.05, 3 * r.get("spread", 0)) and not r.get("slow_spans_covered")]
    return "; ".join(why) or None


def space_of(net_id):
    """The search space of a store's id (bare |...| strings are NB201), or onnx for a model file."""
    if net_id.startswith("|"):
        return "nb201"
    return "onnx" if net_id.endswith(".onnx") else net_id.split(":", 1)[0]


def predict(cli, model, ids, store_dir):
    # a bare NB201 string is the one id without its space; an ONNX path is relative to its store
    named = ["nb201:" + i if i.startswith("|") else os.path.normpath(os.path.join(store_dir, i))
             if i.endswith(".onnx") else i for i in ids]
    out = subprocess.run([cli, "predict", "--model", model, "--json", *named], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{model}: predict failed: {out.stderr.strip()[:400]}")
    doc = json.loads(out.stdout)
    return [p["latency"] for p in doc["predictions"]]


def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = math.sqrt(sum((x - ma) ** 2 for x in ra))
    vb = math.sqrt(sum((y - mb) ** 2 for y in rb))
    return cov / (va * vb) if va > 0 and vb > 0 else float("nan")


def metrics(pred, meas):
    ratio = sorted(p / m for p, m in zip(pred, meas))
    err = [abs(r - 1) for r in ratio]
    n = len(ratio)
    return {"n": n, "mape": sum(err) / n, "within_10": sum(e <= 0.10 for e in err) / n,
            "within_25": sum(e <= 0.25 for e in err) / n, "spearman": spearman(pred, meas),
            "median_ratio": ratio[n // 2] if n % 2 else (ratio[n // 2 - 1] + ratio[n // 2]) / 2,
            "worst_ratio": max(ratio, key=lambda r: abs(math.log(r)) if r > 0 else math.inf),
            "negative_or_nonfinite": sum(not (math.isfinite(p) and p >= 0) for p in pred),
            "zero": sum(p == 0 for p in pred)}  # a linear model floored at zero: no latency at all


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default="build/release/dnncost")
    ap.add_argument("--out", required=True)
    ap.add_argument("--stores", nargs="+", required=True)
    ap.add_argument("--by-space", action="store_true", help="one row per search space of each store")
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    models = [m.split("=", 1) if "=" in m else [m, os.path.basename(m)] for m in a.models]
    stores = a.stores
    rows = []
    for store in stores:
        meas = load_store(store)
        why = disturbed(store)
        spread = noisy(store)
        if why:
            print(f"evaluate.py: warning: {store} was measured on a disturbed machine ({why}): re-take it",
                  file=sys.stderr)
        groups = {}
        for i in sorted(meas):
            groups.setdefault(space_of(i) if a.by_space else None, []).append(i)
        for path, label in models:
            for space, ids in sorted(groups.items(), key=lambda g: g[0] or ""):
                pred = predict(a.cli, path, ids, os.path.dirname(os.path.abspath(store)))
                m = metrics(pred, [meas[i] for i in ids])
                name = os.path.basename(store) + (f" {space}" if space else "")
                rows.append({"model": label, "store": name, **({"space": space} if space else {}), **m,
                             "disturbed": why, "noisy_median_spread": spread})
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(rows, f, indent=1)
    os.replace(tmp, a.out)
    print("| store | model | n | MAPE | ±10 % | ±25 % | Spearman | median pred/meas | worst | disturbed | noisy |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['store']} | {r['model']} | {r['n']} | {100 * r['mape']:.1f} % | {100 * r['within_10']:.0f} % | "
              f"{100 * r['within_25']:.0f} % | {r['spearman']:.3f} | {r['median_ratio']:.2f} | {r['worst_ratio']:.2f} | "
              f"{r['disturbed'] or 'no'} | "
              f"{'median spread %.1f %%' % (100 * r['noisy_median_spread']) if r['noisy_median_spread'] else 'no'} |")


if __name__ == "__main__":
    main()
