#!/usr/bin/env python3
"""Price a PyTorch network with dnncost's device models, then search its channel widths.

A small convolutional network is defined here, exported to ONNX in memory (no file is written),
and priced by both committed device models of ONNX Runtime on one CPU thread (all graph
optimisations, and none). Then NSGA-II searches the widths of its three convolution stages,
trading the predicted latency against a capacity proxy (the parameter count: more is better).

    PYTHONPATH=build/release/python python3 examples/python/price_and_search.py

Needs PyTorch (Debian: apt-get install python3-torch, or scripts/deps.sh --torch).
"""
import io
import os
import sys
import time

import dnncost

try:
    import torch
    from torch import nn
except ImportError:
    sys.exit("price_and_search.py needs PyTorch: apt-get install python3-torch (Debian 12), "
             "or scripts/deps.sh --torch, or pip install torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEVICES = {
    "ORT CPU, all optimisations": os.path.join(ROOT, "data", "devices", "ort-cpu-all-1t.dnnc"),
    "ORT CPU, basic optimisations": os.path.join(ROOT, "data", "devices", "ort-cpu-basic-1t.dnnc"),
    "ORT CPU, no optimisations": os.path.join(ROOT, "data", "devices", "ort-cpu-disabled-1t.dnnc"),
}


class SmallNet(nn.Module):
    """Three conv-BN-ReLU stages (each halving the resolution) and a linear classifier."""

    def __init__(self, widths=(16, 32, 64), classes=10):
        super().__init__()
        layers, c_in = [], 3
        for w in widths:
            layers += [nn.Conv2d(c_in, w, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(),
                       nn.Conv2d(w, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU()]
            c_in = w
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(c_in, classes)

    def forward(self, x):
        return self.head(self.features(x).mean(dim=(2, 3)))


def onnx_bytes(net, resolution=32):
    """The network as ONNX, exported into memory."""
    buf = io.BytesIO()
    net.eval()
    torch.onnx.export(net, torch.zeros(1, 3, resolution, resolution), buf, opset_version=13,
                      input_names=["input"], output_names=["logits"])
    return buf.getvalue()


def main():
    models = {name: dnncost.load(path) for name, path in DEVICES.items()}

    base = onnx_bytes(SmallNet())
    info = dnncost.inspect(base)
    print(f"SmallNet(16, 32, 64) at 32x32: {info['macs'] / 1e6:.1f} M MACs, {info['params'] / 1e3:.1f} k parameters, "
          f"peak memory {info['peak_memory']['total_bytes'] / 1024:.0f} KiB")
    for name, m in models.items():
        b = m.predict(base, per_kernel=True)
        slowest = max(b["kernels"], key=lambda k: k["ms"])
        print(f"  {name}: {b['total_ms']:.4f} ms in {len(b['kernels'])} kernels "
              f"(slowest: {slowest['kernel']}, {slowest['ms']:.4f} ms)")

    # Channel-width search: genes are the three stage widths in [8, 128], rounded to multiples of
    # 8; objectives are the predicted latency (all optimisations) and minus the parameter count.
    latency = models["ORT CPU, all optimisations"]
    cache = {}

    def widths_of(x):
        return tuple(int(round(v / 8)) * 8 for v in x)

    def evaluate(x):
        w = widths_of(x)
        if w not in cache:
            data = onnx_bytes(SmallNet(w))
            cache[w] = (latency.predict(data), dnncost.inspect(data)["params"])
        ms, params = cache[w]
        return [ms, -float(params)]

    t0 = time.perf_counter()
    r = dnncost.nsga2(evaluate, [(8.0, 128.0)] * 3, 2, pop=16, gens=8, seed=1)
    seconds = time.perf_counter() - t0
    front = sorted({widths_of(x): f for x, f in zip(r["x"], r["f"])}.items(), key=lambda kv: kv[1][0])
    print(f"\nNSGA-II: {r['evaluations']} evaluations ({len(cache)} distinct networks exported and priced) "
          f"in {seconds:.1f} s; Pareto front (widths, latency, parameters):")
    for w, (ms, neg_params) in front:
        print(f"  {str(w):16} {ms:8.4f} ms  {-neg_params / 1e3:8.1f} k")


if __name__ == "__main__":
    main()
