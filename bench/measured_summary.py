#!/usr/bin/env python3
"""Summarise the data set measured on this machine (bench/measure_dataset.sh) as a Markdown table:
networks per space and optimisation level, latency range, the median spread of the rounds, the
noise check (re-measurement from scratch), the time per network, and the speed-up of graph
optimisation "all" over "disabled" on the networks measured at both levels.

usage: bench/measured_summary.py [DIR=data/measured] > bench/results/measured_dataset.md
"""
import csv
import json
import math
import os
import statistics
import sys

d = sys.argv[1] if len(sys.argv) > 1 else "data/measured"


def space_of(net_id):
    if net_id.startswith("|"):
        return "nb201"
    if ":" in net_id and not net_id.startswith("/"):
        return net_id.split(":", 1)[0]
    return "onnx"


def load(level):
    path = os.path.join(d, f"ort_cpu_{level}_1t.csv")
    rows = {}
    if not os.path.exists(path):
        return rows
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["status"] == "ok":
                rows[r["key"]] = r
    return rows


levels = {lv: load(lv) for lv in ("all", "disabled")}
log = []
logpath = os.path.join(d, "measure_log.jsonl")
if os.path.exists(logpath):
    with open(logpath) as f:
        log = [json.loads(line) for line in f if line.strip()]

device = {}
sidecar = os.path.join(d, "ort_cpu_all_1t.device.json")
if os.path.exists(sidecar):
    with open(sidecar) as f:
        device = json.load(f)
rd = device.get("runner_device", {})
st = device.get("settings", {})
print("# The data set measured on this machine\n")
host = device.get("host", {})
round_ms = f", at least {st['round_ms']} ms" if "round_ms" in st else ""
cpu = rd.get("cpu", "?")
if "cpu_family" in host:
    cpu = f"{host['cpu']} (family {host['cpu_family']}, model {host['cpu_model']}, {host.get('isa_level', '?')})"
print(f"ONNX Runtime {rd.get('version', '?')} (onnxruntime-node, Node.js {rd.get('node', '?')}), CPU execution "
      f"provider, {rd.get('threads', '?')} thread, on an {cpu} VM with "
      f"{rd.get('logical_cpus', '?')} vCPUs. Protocol: {st.get('rounds')} rounds × ({st.get('warmup')} warm-up + "
      f"{st.get('repeats')} timed runs{round_ms}), the {st.get('statistic')} of the "
      f"rounds' {st.get('statistic')}s, further rounds above a "
      f"spread of {100 * st.get('remeasure_spread', 0):.0f} % up to {st.get('max_rounds')} rounds. "
      "Produced by `bench/measure_dataset.sh`; this file by `bench/measured_summary.py`.\n")
refs = device.get("references", [])
if refs:
    lat = [float(r["latency_ms"]) for r in refs]
    print(f"The reference network, measured at the start of each invocation ({len(refs)} times, "
          f"{refs[0]['time'][:10]} to {refs[-1]['time'][:10]}): {min(lat):.4g}–{max(lat):.4g} ms "
          f"(kernel {host.get('kernel', '?')}, CPU flags digest {host.get('flags_digest', '?')}).\n")

print("## Networks\n")
print("| space | level | networks | latency min / median / max (ms) | median spread | peak memory median (MB) |")
print("| --- | --- | --- | --- | --- | --- |")
for lv, rows in levels.items():
    by = {}
    for r in rows.values():
        by.setdefault(space_of(r["id"]), []).append(r)
    for sp in sorted(by):
        lat = sorted(float(r["latency_ms"]) for r in by[sp])
        spread = statistics.median(float(r["spread"]) for r in by[sp])
        mem = [float(r["peak_memory_bytes"]) for r in by[sp] if r.get("peak_memory_bytes")]
        memtxt = f"{statistics.median(mem) / 1e6:.1f}" if mem else "—"
        print(f"| {sp} | {lv} | {len(lat)} | {lat[0]:.3g} / {statistics.median(lat):.3g} / {lat[-1]:.3g} | "
              f"{100 * spread:.1f} % | {memtxt} |")

print("\n## Noise and time per network\n")
print("Each invocation's noise check re-measures networks from scratch with fresh runner processes; "
      "the load average is the machine's when the invocation started; \"disturbed\" is the harness's own "
      "verdict on the run (other processes kept a core busy).\n")
print("| level | what | networks measured | s per network | load average | disturbed | re-measured | within ±5 % | within ±10 % | σ (log) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for e in log:
    s = e["summary"]
    nc = s.get("noise_check") or {}
    spn = s.get("seconds_per_network")
    spn_txt = f"{spn:.2f}" if isinstance(spn, (int, float)) and spn > 0 else "—"
    if nc:
        noise = f"{nc.get('pairs')} | {100 * nc['within_5']:.0f} % | {100 * nc['within_10']:.0f} % | {nc['sigma']:.3f}"
    else:
        noise = "— | — | — | —"
    disturbed = {True: "yes", False: "no"}.get(s.get("disturbed"), "—")  # older summaries did not say
    print(f"| {e['level']} | {e['what']} | {s.get('measured')} | {spn_txt} | {e['loadavg'].split()[0]} | {disturbed} | {noise} |")

print("\n## What graph optimisation buys\n")
print("Speed-up = latency at \"disabled\" / latency at \"all\", on the networks measured at both levels.\n")
print("| space | networks at both | speed-up median | min | max |")
print("| --- | --- | --- | --- | --- |")
both = {}
for k, r in levels["all"].items():
    if k in levels["disabled"]:
        both.setdefault(space_of(r["id"]), []).append(
            float(levels["disabled"][k]["latency_ms"]) / float(r["latency_ms"]))
for sp in sorted(both):
    v = sorted(both[sp])
    print(f"| {sp} | {len(v)} | {statistics.median(v):.2f}× | {v[0]:.2f}× | {v[-1]:.2f}× |")
onnx = [(os.path.basename(r["id"]), float(levels["disabled"][k]["latency_ms"]), float(r["latency_ms"]))
        for k, r in levels["all"].items() if k in levels["disabled"] and space_of(r["id"]) == "onnx"]
if onnx:
    print("\n| model | disabled (ms) | all (ms) | speed-up |")
    print("| --- | --- | --- | --- |")
    for name, dis, al in sorted(onnx):
        print(f"| {name} | {dis:.2f} | {al:.2f} | {dis / al:.2f}× |")
