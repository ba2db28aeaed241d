#!/usr/bin/env python3
"""What including dnncost costs: compile time and compiler memory of one translation unit per
public header, and of the programs a user writes first, in header-only and compiled mode.

Each TU is compiled alone (one compiler at a time: run it on a quiet machine), at -O2 with the
project's warnings, as a user's build would compile it. A header's TU includes it and defines an
empty main(); the scenario TUs are real programs of examples/. Compiled mode is the TU as a program
linking dnncost::compiled compiles it (-DDNNCOST_COMPILED=1); it is measured for the headers that
read core/config.hpp (the others compile the same either way).

usage: bench/compile_times/run.py [--out bench/results/compile_times] [--only SUBSTRING] [--cxx g++]
Writes OUT.json (one JSON document) and OUT.md (the tables).
"""
import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
INCLUDE = os.path.join(ROOT, "include")


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def base_flags(cxx):
    flags = ["-std=c++20", "-O2", "-Wall", "-Wextra", "-Wpedantic", "-I" + INCLUDE, "-isystem", "/usr/include/eigen3",
             "-DONNX_ML=1", "-DONNX_NAMESPACE=onnx"]
    if os.path.exists("/usr/include/xgboost/c_api.h"):
        flags.append("-DDNNCOST_HAS_XGBOOST=1")
    return flags


def compile_once(cxx, flags, source_text=None, source_file=None):
    """Wall seconds and peak compiler memory (MiB) of one compile to an object file."""
    with tempfile.TemporaryDirectory() as tmp:
        src = source_file
        if source_text is not None:
            src = os.path.join(tmp, "tu.cpp")
            with open(src, "w") as f:
                f.write(source_text)
        cmd = ["/usr/bin/time", "-f", "%e %M", cxx] + flags + ["-c", src, "-o", os.path.join(tmp, "tu.o")]
        p = subprocess.run(cmd, capture_output=True, text=True)
        last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
        if p.returncode != 0:
            raise RuntimeError(f"compile failed: {' '.join(cmd)}\n{p.stderr[-3000:]}")
        wall, rss_kb = last.split()
        return float(wall), int(rss_kb) / 1024.0


def reads_config(cxx, flags, header):
    """Whether the header (transitively) includes core/config.hpp: its compiled-mode TU differs."""
    p = subprocess.run([cxx] + flags + ["-MM", "-x", "c++", "-"], input=f"#include <dnncost/{header}>\n",
                       capture_output=True, text=True)
    return "core/config.hpp" in p.stdout


def public_headers(only):
    out = []
    for d, _, files in os.walk(os.path.join(INCLUDE, "dnncost")):
        for f in files:
            if not f.endswith(".hpp"):
                continue
            rel = os.path.relpath(os.path.join(d, f), os.path.join(INCLUDE, "dnncost"))
            # definitions of the compiled parts: the library's own sources include them
            if rel.endswith("_impl.hpp") and rel != "device/fusion_discovery_impl.hpp":
                continue
            if only and only not in rel:
                continue
            out.append(rel)
    return sorted(out)


SCENARIOS = [
    # (name, source file, modes, extra flags)
    ("price an ONNX file with a saved device model (examples/price.cpp)", "examples/price.cpp"),
    ("the quick start: dnncost.hpp + io/onnx.hpp, used (examples/quickstart.cpp)", "examples/quickstart.cpp"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "compile_times"))
    ap.add_argument("--only", default="", help="measure only headers whose path contains this")
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("--no-headers", action="store_true", help="the scenarios only")
    a = ap.parse_args()
    flags = base_flags(a.cxx)
    version = subprocess.run([a.cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    result = {"cpu": cpu_name(), "cores": os.cpu_count(), "compiler": version, "flags": " ".join(flags),
              "date": time.strftime("%Y-%m-%d"), "scenarios": [], "headers": []}
    data_dir = '-DDNNCOST_DATA_DIR="' + os.path.join(ROOT, "data") + '"'
    for name, src in SCENARIOS:
        for mode, extra in (("compiled", ["-DDNNCOST_COMPILED=1"]), ("header-only", [])):
            wall, mib = compile_once(a.cxx, flags + extra + [data_dir], source_file=os.path.join(ROOT, src))
            result["scenarios"].append({"tu": name, "mode": mode, "seconds": wall, "mib": round(mib)})
            print(f"{wall:7.1f} s {mib:7.0f} MiB  {mode:11s} {name}", file=sys.stderr, flush=True)
    for opt in ("-O0", "-O2"):
        for mode, extra in (("compiled", ["-DDNNCOST_COMPILED=1"]), ("header-only", [])):
            f = [x if x != "-O2" else opt for x in flags] + extra
            wall, mib = compile_once(a.cxx, f, source_text="#include <dnncost/dnncost.hpp>\nint main() {}\n")
            name = f"dnncost.hpp alone, {opt}"
            result["scenarios"].append({"tu": name, "mode": mode, "seconds": wall, "mib": round(mib)})
            print(f"{wall:7.1f} s {mib:7.0f} MiB  {mode:11s} {name}", file=sys.stderr, flush=True)
    if not a.no_headers:
        for h in public_headers(a.only):
            text = f"#include <dnncost/{h}>\nint main() {{}}\n"
            row = {"header": h}
            wall, mib = compile_once(a.cxx, flags, source_text=text)
            row["header_only"] = {"seconds": wall, "mib": round(mib)}
            if reads_config(a.cxx, flags, h):
                wall, mib = compile_once(a.cxx, flags + ["-DDNNCOST_COMPILED=1"], source_text=text)
                row["compiled"] = {"seconds": wall, "mib": round(mib)}
            result["headers"].append(row)
            c = row.get("compiled")
            print(f"{row['header_only']['seconds']:7.1f} s {row['header_only']['mib']:7.0f} MiB"
                  + (f"  | compiled {c['seconds']:6.1f} s {c['mib']:6.0f} MiB" if c else "") + f"  {h}",
                  file=sys.stderr, flush=True)
    write(a.out, result)


def write(out, r):
    os.makedirs(os.path.dirname(out), exist_ok=True)
    for path, text in ((out + ".json", json.dumps(r, indent=1) + "\n"), (out + ".md", markdown(r))):
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)


def markdown(r):
    lines = [f"# What including dnncost costs",
             "",
             f"{r['cpu']} ({r['cores']} cores), {r['compiler']}, one compile at a time, `-O2` "
             f"(`bench/compile_times/run.py`, {r['date']}). Compiled mode: the TU of a program linking "
             "`dnncost::compiled`; header-only: the same TU against the headers alone.",
             "",
             "| translation unit | mode | seconds | compiler MiB |",
             "|---|---|---|---|"]
    for s in r["scenarios"]:
        lines.append(f"| {s['tu']} | {s['mode']} | {s['seconds']:.1f} | {s['mib']} |")
    if r["headers"]:
        lines += ["", "## One translation unit per header (`#include` + an empty `main`)", "",
                  "Slowest first. Compiled mode is shown for the headers whose content depends on it.", "",
                  "| header | header-only s | MiB | compiled s | MiB |", "|---|---|---|---|---|"]
        for h in sorted(r["headers"], key=lambda h: -h["header_only"]["seconds"]):
            c = h.get("compiled")
            lines.append(f"| `{h['header']}` | {h['header_only']['seconds']:.1f} | {h['header_only']['mib']} | "
                         + (f"{c['seconds']:.1f} | {c['mib']} |" if c else "= | = |"))
        total = sum(h["header_only"]["seconds"] for h in r["headers"])
        lines += ["", f"{len(r['headers'])} headers, {total:.0f} s in all."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
