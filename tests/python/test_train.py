# dnncost.train on a committed results store, the saved model priced by the CLI alike.
import dnncost
from conftest import DATA, NB201, cli_json
import os

STORE = os.path.join(DATA, "measured", "ort_cpu_all_1t.csv")


def test_train_save_load_predict(tmp_path):
    est = dnncost.train(STORE, preset="additive", n_train=200, n_val=50, n_test=200, seed=1)
    assert est.preset == "additive"
    rep = est.report
    assert rep["n_train"] == 200 and rep["test"]["n"] == 200 and rep["test"]["spearman"] > 0.5
    before = est.predict_archs(NB201)
    path = str(tmp_path / "m.dnnc")
    est.save(path)
    again = dnncost.load(path)
    assert again.predict_archs(NB201) == before
    assert dict(again.metadata)["target"] == "latency_ms"
    cli = cli_json("predict", "--model", path, "--space", "nb201", *NB201)
    col = cli["columns"][0]
    assert [p[col] for p in cli["predictions"]] == before
    assert "additive" in dnncost.presets()


def test_train_bad_input(tmp_path):
    import pytest
    with pytest.raises(dnncost.Error):
        dnncost.train(str(tmp_path / "none.csv"), preset="additive")
    with pytest.raises(dnncost.Error):
        dnncost.train(STORE, preset="nosuchpreset")
