# Pricing and inspecting from Python against the CLI's figures for the same files.
import math

import dnncost
from conftest import DEVICE_ALL, DEVICE_DISABLED, NB201, RESNET18, SQUEEZENET, cli_json


def test_path_bytes_and_list_agree():
    m = dnncost.load(DEVICE_ALL)
    assert m.preset == "device"
    one = m.predict(RESNET18)
    assert isinstance(one, float) and math.isfinite(one) and one > 0
    with open(RESNET18, "rb") as f:
        data = f.read()
    assert m.predict(data) == one
    assert m.predict(bytearray(data)) == one
    both = m.predict([RESNET18, SQUEEZENET])
    assert both[0] == one and len(both) == 2


def test_same_number_as_the_cli():
    for model in (DEVICE_ALL, DEVICE_DISABLED):
        m = dnncost.load(model)
        cli = cli_json("predict", "--model", model, RESNET18, SQUEEZENET)
        col = cli["columns"][0]
        assert [p[col] for p in cli["predictions"]] == m.predict([RESNET18, SQUEEZENET])
        archs = ["nb201:" + a for a in NB201]
        cli = cli_json("predict", "--model", model, *archs)
        col = cli["columns"][0]
        assert [p[col] for p in cli["predictions"]] == m.predict_archs(NB201, space="nb201")
        assert m.predict(archs) == m.predict_archs(NB201)


def test_per_kernel_breakdown_adds_up():
    m = dnncost.load(DEVICE_ALL)
    b = m.predict(RESNET18, per_kernel=True)
    assert b["kernels"] and b["total_ms"] == m.predict(RESNET18)
    total = sum(k["ms"] for k in b["kernels"]) + b["run_overhead_ms"]
    assert abs(total - b["total_ms"]) <= 1e-9 * b["total_ms"]
    assert all(k["nodes"] for k in b["kernels"])
    cli = cli_json("predict", "--per-kernel", "--model", DEVICE_ALL, RESNET18)
    assert [(k["kernel"], k["ms"], k["nodes"]) for k in cli["breakdown"][0]["kernels"]] == [
        (k["kernel"], k["ms"], k["nodes"]) for k in b["kernels"]]
    assert cli["breakdown"][0]["fallbacks"] == b["fallbacks"]
    assert cli["breakdown"][0]["beyond_samples"] == b["beyond_samples"]


def test_inspect_matches_the_cli():
    d = dnncost.inspect(RESNET18)
    cli = cli_json("inspect", RESNET18)
    for key in ("macs", "flops", "params", "bytes", "nodes", "edges", "tensors", "peak_memory", "ops"):
        assert d[key] == cli[key], key
    table = d["per_node"]
    assert len(table["name"]) == d["nodes"]
    assert table["macs"] == [n["macs"] for n in cli["per_node"]]
    assert sum(table["params"]) == d["params"]


def test_inspect_architecture_string():
    d = dnncost.inspect("nb201:" + NB201[0])
    assert d["macs"] > 0 and d["peak_memory"]["total_bytes"] > 0
    assert "nb201" in dnncost.spaces()
