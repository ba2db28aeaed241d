# dnncost.measure through the measuring tests' fake runner (tests/measure/fake_runner.sh):
# resumable, a crashing runner survived, the summary has the fields of `dnncost measure --json`.
import os
import subprocess
import json

import pytest

import dnncost
from conftest import NB201, tool

QUICK = dict(rounds=2, warmup=0, repeats=2, timeout=5)


def runner(mode, work):
    return f"bash {tool('DNNCOST_FAKE_RUNNER')} {mode} {work}"


def test_measure_resume_and_crash(tmp_path, capfd):
    out = str(tmp_path / "good.csv")
    r = dnncost.measure(NB201, space="nb201", runner=runner("good", tmp_path), out=out, device="fake", **QUICK)
    assert (r["measured"], r["skipped"], r["failed"]) == (3, 0, 0)
    assert r["out"] == out and r["device"] == "fake" and r["runner_device"]["name"] == "fake"
    assert "ok " in capfd.readouterr().err
    again = dnncost.measure(NB201, space="nb201", runner=runner("good", tmp_path), out=out, device="fake", **QUICK)
    assert (again["measured"], again["skipped"]) == (0, 3)
    quiet = dnncost.measure(["nb201:" + a for a in NB201], runner=runner("good", tmp_path), out=out, device="fake",
                            progress=False, **QUICK)
    assert quiet["skipped"] == 3 and "ok " not in capfd.readouterr().err  # warnings stay
    crash = dnncost.measure(NB201, space="nb201", runner=runner("crash", tmp_path), out=str(tmp_path / "crash.csv"),
                            device="fake", **QUICK)
    assert (crash["measured"], crash["failed"]) == (3, 0)
    bad = dnncost.measure(NB201, space="nb201", runner=runner("garbage", tmp_path), out=str(tmp_path / "bad.csv"),
                          device="fake", **QUICK)
    assert bad["failed"] == 3 and bad["failed_by_reason"] == {"garbage": 3}
    store = dnncost.measure(space="nb201", sample=2, seed=1, runner=runner("good", tmp_path),
                            out=str(tmp_path / "sample.csv"), device="fake", **QUICK)
    assert store["measured"] == 2
    # network names: a space network with its own options, a synthesised one; the ids say what was measured
    named = [NB201[0] + "@batch=2", "cnn:r64-s16-basic-Relu-w16d1s2k3"]
    r = dnncost.measure(named, runner=runner("good", tmp_path), out=str(tmp_path / "named.csv"), device="fake", **QUICK)
    assert r["measured"] == 2
    with open(tmp_path / "named.csv") as f:
        ids = {line.split(",")[1] for line in f.read().splitlines()[1:]}
    assert ids == set(named)


def test_same_fields_as_the_cli(tmp_path):
    cli = tool("DNNCOST_CLI")
    r = dnncost.measure(space="nb201", sample=2, seed=4, runner=runner("good", tmp_path),
                        out=str(tmp_path / "py.csv"), device="fake", **QUICK)
    out = subprocess.run([cli, "measure", "--device", "fake", "--space", "nb201", "--sample", "2", "--seed", "4",
                          "--rounds", "2", "--warmup", "0", "--repeats", "2", "--timeout", "5",
                          "--runner", runner("good", tmp_path), "--out", str(tmp_path / "cli.csv"), "--json"],
                         check=True, capture_output=True, text=True).stdout
    c = json.loads(out)
    assert set(r) == set(c)
    assert r["settings"] == c["settings"]
    for key in ("measured", "skipped", "failed", "failed_by_reason", "duplicates", "device"):
        assert r[key] == c[key], key
