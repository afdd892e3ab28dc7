"""train takes the [privacy] budget table that `clipnorm recommend` writes, as `train --config`
does: DP-SGD's spend is checked against the data set's ledger before any work and recorded in
it, so the budget given once to recommend carries over to a Python train (from the written
config file, with its paths relative to the file, and on arrays with a privacy dict); a second
train, which would exceed the budget, is refused with a ValueError and records nothing."""
import numpy as np
import pytest

import dpsgd_lab as dl


def recommend_config(cli, tmp_path):
    ledger = tmp_path / "ledger.jsonl"
    config = tmp_path / "sub" / "rec.toml"
    config.parent.mkdir()
    rc, out, err = cli("clipnorm", "recommend", "--csv", "data/breast_cancer.csv", "--label",
                       "target", "--epsilon", 2, "--feature-ranges",
                       "data/breast_cancer.ranges.csv", "--test-fraction", 0.2, "--epochs", 30,
                       "--ledger", ledger, "--write-config", config, "--json")
    assert rc == 0, err
    return config, ledger


def test_train_on_the_recommended_config_spends_from_its_ledger(cli, tmp_path, monkeypatch):
    config, ledger = recommend_config(cli, tmp_path)
    before = ledger.read_text()
    # From another folder: the config's data and ledger paths are read from its own folder.
    monkeypatch.chdir(tmp_path)
    run = dl.train(config=str(config))
    b = run["budget"]
    assert b["spent_before_epsilon"] == pytest.approx(0.3)
    assert b["total_epsilon"] <= 2.0 * (1 + 1e-12)
    assert b["total_delta"] <= 1e-5 * (1 + 1e-12)
    assert run["accuracy"]["n_test"] > 0
    after = ledger.read_text()
    assert after.startswith(before) and len(after.splitlines()) == len(before.splitlines()) + 1
    # The budget is used up: a second train is refused and records nothing.
    with pytest.raises(ValueError, match="ledger"):
        dl.train(config=str(config), seed=1)
    assert ledger.read_text() == after


def test_train_on_arrays_takes_a_privacy_dict(tmp_path):
    X, y = dl.generate({"n": 400, "d": 3, "labels": {"kind": "multinomial", "classes": 2,
                                                     "separable": True}}, seed=1)
    ledger = tmp_path / "ledger.jsonl"
    rec = dl.recommend_clip_norm(X, y, epsilon=2.0, feature_bounds=np.full(3, 4.0),
                                 ledger=str(ledger))
    config = {"seed": 1, "loss": {"family": "logistic"},
              "dpsgd": {"steps": rec["steps"], "batch_size": rec["batch_size"],
                        "learning_rate": 0.5, "clip_norm": rec["clip_norm"],
                        "noise": {"kind": "target", "epsilon": rec["dpsgd_epsilon"] * 0.999,
                                  "delta": rec["dpsgd_delta"]}},
              "privacy": {"ledger": str(ledger)}}
    n_before = len(ledger.read_text().splitlines())
    run = dl.train(X, y, config=config)
    assert run["budget"]["total_epsilon"] <= 2.0 * (1 + 1e-12)
    assert len(ledger.read_text().splitlines()) == n_before + 1
    with pytest.raises(ValueError, match="ledger"):
        dl.train(X, y, config=config)
