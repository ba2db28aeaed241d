"""Convolution kernels of profiled networks against the kernel sum's prices, per kind.

    python3 kernel_level.py CLI MODEL DRIFT_DIR CONTEXT_DIR

CLI is a built dnncost, MODEL the "all" build without its boundary (the kernel sum: OUT/built.dnnc
of new_level.sh), DRIFT_DIR this
folder, CONTEXT_DIR the build's networks as ONNX (`dnncost device networks --kind context --count 40
--seed 1 --out CONTEXT_DIR`). Each profiled kernel's time, less the build's profiler cost per kernel,
is scaled so the profile adds up to the network's unprofiled latency (as the build's in-context
samples are), and matched to the pass kernel whose first node shares its block path.
"""
import collections
import csv
import json
import os
import subprocess
import sys

PER_KERNEL_MS = 0.002303477512253001  # the build's fitted profiler cost (all/build.json)
OVERHEAD_MS = 0.01029                 # the model's run overhead


def per_kernel(cli, model, args):
    out = subprocess.run([cli, "predict", "--model", model, "--per-kernel"] + args, check=True,
                         capture_output=True, text=True).stdout
    nets = collections.defaultdict(list)
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) >= 4:
            nets[f[0]].append((f[1], float(f[2]), f[3].split(" ")[0]))
    return nets


def block(name):
    name = name.split(":")[0]
    return name.rsplit(".", 1)[0] if "." in name else name


def compare(store, ours, network_of):
    latency = {r["key"]: (float(r["latency_ms"]), r["id"]) for r in csv.DictReader(open(store))}
    totals = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for line in open(store.replace(".csv", ".kernels.jsonl")):
        p = json.loads(line)
        lat, ident = latency[p["key"]]
        ks = p["kernels"]
        scale = (lat - OVERHEAD_MS) / (sum(k["ms"] for k in ks) - PER_KERNEL_MS * len(ks))
        profiled = collections.defaultdict(list)
        for k in ks:
            profiled[block(k["name"])].append((k["op"], max(k["ms"] - PER_KERNEL_MS, 0.1 * k["ms"]) * scale))
        for kind, ms, node in ours[network_of(ident)]:
            if not kind.startswith(("Conv", "Depthwise")):
                continue
            convs = [t for op, t in profiled.get(block(node), []) if op in ("Conv", "FusedConv")]
            if len(convs) == 1:
                t = totals[kind.split("+")[0]]
                t[0] += convs[0]
                t[1] += ms
                t[2] += 1
    for kind, (measured, predicted, n) in sorted(totals.items()):
        print(f"  {kind:15s} {n:4d} kernels, measured / priced {measured / predicted:.3f}")


cli, model, here, context = sys.argv[1:5]
held = os.path.join(here, "p_heldout_ofa.csv")
archs = [r["id"] for r in csv.DictReader(open(held))]
print("held-out OFA networks")
compare(held, per_kernel(cli, model, ["--space", "ofa"] + archs), lambda i: i)
build = os.path.join(here, "p_ctx.csv")
files = [os.path.join(context, r["id"].split("/")[-1]) for r in csv.DictReader(open(build))]
print("the build's own networks")
compare(build, per_kernel(cli, model, files), lambda i: os.path.join(context, i.split("/")[-1]))
