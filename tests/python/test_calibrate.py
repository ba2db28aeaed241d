# dnncost.calibrate: a factor planted in a results store measured "here" is found and scales every
# price of the committed model; through the measuring tests' fake runner (tests/measure/fake_runner.sh,
# "size": a latency from each model file's size) the report is `dnncost device calibrate --json`'s
# document to the last digit; bad arguments are clear errors.
import csv
import os
import subprocess
import json

import pytest

import dnncost
from conftest import DEVICE_ALL, NB201, SQUEEZENET, tool

QUICK = dict(rounds=1, max_rounds=1, warmup=0, repeats=1, round_ms=0, timeout=30)


def size_runner(work):
    return f"bash {tool('DNNCOST_FAKE_RUNNER')} size {work}"


def test_planted_factor_is_found_and_scales_every_price(tmp_path):
    # a store of three networks measured "here" at 2.5 times the committed model's prices: the
    # calibration finds 2.5 and the calibrated model prices every network 2.5 times as high
    cli = tool("DNNCOST_CLI")
    files = []
    for i, arch in enumerate(NB201):
        f = str(tmp_path / f"net{i}.onnx")
        subprocess.run([cli, "nb201", arch, "--onnx", f], check=True, capture_output=True)
        files.append(f)
    store = str(tmp_path / "here.csv")
    dnncost.measure(files, runner=f"bash {tool('DNNCOST_FAKE_RUNNER')} good {tmp_path}", out=store, device="fake",
                    progress=False, rounds=1, warmup=0, repeats=1, round_ms=0)
    given = dnncost.load(DEVICE_ALL)
    price = dict(zip((os.path.basename(f) for f in files), given.predict(files)))
    with open(store) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3
    for r in rows:
        r["latency_ms"] = repr(2.5 * price[os.path.basename(r["id"])])
    with open(store, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)

    out = str(tmp_path / "cal.dnnc")
    m = dnncost.calibrate(DEVICE_ALL, data=store, out=out, shots=3, global_only=True, progress=False)
    r = m.report
    assert r["applied"] and r["factor"] == pytest.approx(2.5, rel=1e-9)
    assert r["family_factors"] == {} and r["intensity_factor"] is None and len(r["shots"]) == 3
    assert os.path.exists(out) and m.source == out
    nets = ["nb201:" + a for a in NB201] + [SQUEEZENET]
    for b, a in zip(given.predict(nets), m.predict(nets)):
        assert a == pytest.approx(2.5 * b, rel=1e-9)
    assert dnncost.load(out).predict(nets) == m.predict(nets)  # the file written is the model returned


def test_report_is_the_cli_document(tmp_path):
    cli = tool("DNNCOST_CLI")
    py = dnncost.calibrate(DEVICE_ALL, runner=size_runner(tmp_path), out=str(tmp_path / "py.dnnc"), shots=2,
                           progress=False, **QUICK).report
    args = [cli, "device", "calibrate", "--model", DEVICE_ALL, "--runner", size_runner(tmp_path), "--shots", "2",
            "--out", str(tmp_path / "cli.dnnc"), "--rounds", "1", "--max-rounds", "1", "--warmup", "0",
            "--repeats", "1", "--round-ms", "0", "--timeout", "30", "--json"]
    c = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    assert set(py) == set(c)
    for key in set(c) - {"out", "shots", "disturbed", "measured_again"}:
        assert py[key] == c[key], key
    assert [s["predicted_ms"] for s in py["shots"]] == [s["predicted_ms"] for s in c["shots"]]


def test_shots_in_memory_measure_as_their_files(tmp_path):
    # your own networks as shots, as files or as the bytes of the same models (a PyTorch export, say)
    files = [SQUEEZENET, str(tmp_path / "nb.onnx")]
    subprocess.run([tool("DNNCOST_CLI"), "nb201", NB201[0], "--onnx", files[1], "--weights", "random"], check=True,
                   capture_output=True)
    common = dict(runner=size_runner(tmp_path), global_only=True, progress=False, **QUICK)
    by_file = dnncost.calibrate(DEVICE_ALL, out=str(tmp_path / "f.dnnc"), shots=files, **common).report
    blobs = [open(f, "rb").read() for f in files]
    in_memory = dnncost.calibrate(DEVICE_ALL, out=str(tmp_path / "b.dnnc"), shots=[blobs[0], bytearray(blobs[1])],
                                  **common).report
    assert len(in_memory["shots"]) == 2
    for a, b in zip(by_file["shots"], in_memory["shots"]):
        assert (a["measured_ms"], a["predicted_ms"]) == (b["measured_ms"], b["predicted_ms"])
    assert in_memory["factor"] == by_file["factor"]


def test_bad_arguments(tmp_path):
    out = str(tmp_path / "x.dnnc")
    with pytest.raises(ValueError, match=r"not a count in \[1, 100\]"):
        dnncost.calibrate(DEVICE_ALL, runner=size_runner(tmp_path), out=out, shots=0)
    with pytest.raises(ValueError, match="runner= .* or data="):
        dnncost.calibrate(DEVICE_ALL, out=out)
    with pytest.raises(TypeError, match="dnncost.calibrate: unknown option 'noise_check'"):
        dnncost.calibrate(DEVICE_ALL, runner=size_runner(tmp_path), out=out, noise_check=3)
    with pytest.raises(TypeError, match="shots: expected a count or a list of ONNX models"):
        dnncost.calibrate(DEVICE_ALL, runner=size_runner(tmp_path), out=out, shots=SQUEEZENET)
    with pytest.raises(dnncost.Error, match=r"<shots\[1\]>"):  # bytes that are no ONNX model, named by place
        dnncost.calibrate(DEVICE_ALL, runner=size_runner(tmp_path), out=out, shots=[SQUEEZENET, b"not onnx"])
    with pytest.raises(dnncost.Error, match="missing.dnnc"):
        dnncost.calibrate(str(tmp_path / "missing.dnnc"), runner=size_runner(tmp_path), out=out, shots=1)
    with pytest.raises(dnncost.Error, match="nope.onnx"):
        dnncost.calibrate(DEVICE_ALL, runner=size_runner(tmp_path), out=out, shots=[str(tmp_path / "nope.onnx")])
    assert not os.path.exists(out)
