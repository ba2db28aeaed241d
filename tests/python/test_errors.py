# Bad input is a Python exception with the library's one-line message, never a crash.
import math
import os

import pytest

import dnncost
from conftest import DEVICE_ALL, NB201, RESNET18


def test_error_types():
    assert issubclass(dnncost.Error, RuntimeError)
    assert issubclass(dnncost.ConfigError, dnncost.Error) and issubclass(dnncost.ConfigError, ValueError)


def test_truncated_and_foreign_onnx(tmp_path):
    m = dnncost.load(DEVICE_ALL)
    with open(RESNET18, "rb") as f:
        data = f.read()
    for bad in (data[: len(data) // 2], b"", b"not an onnx model at all"):
        with pytest.raises(dnncost.Error) as e:
            m.predict(bad)
        assert "\n" not in str(e.value)
    path = tmp_path / "half.onnx"
    path.write_bytes(data[:1000])
    with pytest.raises(dnncost.Error, match="half.onnx"):
        m.predict(str(path))
    with pytest.raises(dnncost.Error):
        dnncost.inspect(data[:100])
    with pytest.raises(dnncost.Error, match="missing.onnx"):
        m.predict(str(tmp_path / "missing.onnx"))
    with pytest.raises(TypeError):
        m.predict(42)


def test_corrupted_model_file(tmp_path):
    with open(DEVICE_ALL, "rb") as f:
        data = bytearray(f.read())
    for cut in (data[:20], data[: len(data) // 2]):
        p = tmp_path / "cut.dnnc"
        p.write_bytes(bytes(cut))
        with pytest.raises(dnncost.Error, match="cut.dnnc"):
            dnncost.load(str(p))
    data[len(data) // 2] ^= 0xFF
    p = tmp_path / "flipped.dnnc"
    p.write_bytes(bytes(data))
    with pytest.raises(dnncost.Error, match="flipped.dnnc"):
        dnncost.load(str(p))
    with pytest.raises(dnncost.Error):
        dnncost.load(str(tmp_path / "none.dnnc"))


def test_unknown_space_and_arch():
    m = dnncost.load(DEVICE_ALL)
    with pytest.raises(dnncost.Error, match="nosuchspace"):
        m.predict_archs(NB201[:1], space="nosuchspace")
    with pytest.raises(dnncost.Error):
        m.predict_archs(["|bogus~0|"], space="nb201")
    with pytest.raises(dnncost.Error):
        m.predict("nb201:|nor_conv_3x3~0|+|")
    # a wrong type names the argument and what it got, not pybind11's "Unable to cast"
    for bad in (None, 3, b"abc"):
        with pytest.raises(TypeError, match="predict_archs: archs: expected an architecture string"):
            m.predict_archs(bad)
    with pytest.raises(TypeError, match=r"predict_archs: archs\[1\]: expected an architecture string, got 1 \(int\)"):
        m.predict_archs([NB201[0], 1])
    # any iterable of strings is a list of architectures
    assert m.predict_archs(a for a in NB201[:2]) == m.predict_archs(NB201[:2])


def test_search_bad_bounds_and_objectives():
    def zero(x):
        return [0.0, 0.0]

    with pytest.raises(ValueError):
        dnncost.nsga2(zero, [(0.0, math.nan)], 2, pop=4, gens=1)
    with pytest.raises(ValueError):
        dnncost.nsga2(zero, [(1.0, 0.0)], 2, pop=4, gens=1)
    with pytest.raises(ValueError):
        dnncost.nsga2(zero, [], 2, pop=4, gens=1)
    with pytest.raises(ValueError):
        dnncost.nsga2(zero, [(0.0, 1.0)], 2, pop=1, gens=1)

    class Boom(Exception):
        pass

    def raises(x):
        raise Boom("no")

    for threads in (1, 2):
        with pytest.raises(Boom, match="no"):
            dnncost.nsga2(raises, [(0.0, 1.0)], 2, pop=8, gens=2, threads=threads)
    with pytest.raises(dnncost.Error, match="objectives"):
        dnncost.nsga2(lambda x: [1.0, 2.0, 3.0], [(0.0, 1.0)], 2, pop=8, gens=2)
    with pytest.raises(dnncost.Error, match="NaN"):
        dnncost.nsga2(lambda x: [math.nan, 1.0], [(0.0, 1.0)], 2, pop=8, gens=2, threads=2)
    with pytest.raises(dnncost.Error, match="not a sequence"):
        dnncost.nsga2(lambda x: "ab", [(0.0, 1.0)], 2, pop=8, gens=2)
    with pytest.raises(dnncost.Error, match="not a sequence"):
        dnncost.nsga2(lambda x: None, [(0.0, 1.0)], 2, pop=8, gens=2)


def test_bad_measure_options(tmp_path):
    with pytest.raises(TypeError, match="rouns"):
        dnncost.measure(NB201, space="nb201", runner="true", out=str(tmp_path / "s.csv"), device="d", rouns=3)
    with pytest.raises(ValueError):
        dnncost.measure(NB201, space="nb201", runner="true", out=str(tmp_path / "s.csv"), device="d", rounds=0)
    with pytest.raises(ValueError):
        dnncost.measure(None, runner="true", out=str(tmp_path / "s.csv"), device="d")
    # options and runners of the wrong type name the option and the value
    for option, value, expected in (("rounds", "abc", "an integer"), ("rounds", 3.7, "an integer"),
                                    ("noise_check", -1, "a non-negative integer"), ("timeout", "1", "a number"),
                                    ("fresh_sessions", "yes", "True or False")):
        with pytest.raises(TypeError, match=f"option '{option}': expected {expected}, got"):
            dnncost.measure(NB201, space="nb201", runner="true", out=str(tmp_path / "s.csv"), device="d",
                            **{option: value})
    for runner in (None, [1]):
        with pytest.raises(TypeError, match="runner: expected a command string"):
            dnncost.measure(NB201, space="nb201", runner=runner, out=str(tmp_path / "s.csv"), device="d")
    assert not (tmp_path / "s.csv").exists()
