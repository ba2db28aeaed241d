# Paths the Python tests use, from the environment ctest sets (python/CMakeLists.txt): the data
# directory, the CLI (for independent figures), the C++ ZDT1 front program and the fake runner.
import os
import subprocess
import json

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.environ.get("DNNCOST_DATA", os.path.join(ROOT, "data"))
DEVICE_ALL = os.path.join(DATA, "devices", "ort-cpu-all-1t.dnnc")
DEVICE_DISABLED = os.path.join(DATA, "devices", "ort-cpu-disabled-1t.dnnc")
RESNET18 = os.path.join(DATA, "onnx", "resnet18-v1-7-no-weight.onnx")
SQUEEZENET = os.path.join(DATA, "onnx", "squeezenet1_1.onnx")
NB201 = [
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|",
    "|avg_pool_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|nor_conv_1x1~0|skip_connect~1|skip_connect~2|",
    "|none~0|+|nor_conv_1x1~0|none~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_1x1~2|",
]


def tool(var):
    """A program ctest names in the environment: skipped when unnamed (pytest run by hand, or a
    build without the CLI), a failure when named but missing."""
    path = os.environ.get(var)
    if not path:
        pytest.skip(f"{var} is not set (run through ctest)")
    if not os.path.exists(path):
        pytest.fail(f"{var}={path} does not exist")
    return path


def cli_json(*args):
    """`dnncost ARGS --json`, parsed."""
    out = subprocess.run([tool("DNNCOST_CLI"), *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)
