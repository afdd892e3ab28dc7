"""audit_run is `dpsgd-lab audit-run --json`: the same report, number for number and field for
field, for the same config and seed, at q = 1 (the Gaussian-DP curve: `mu_lb`) and with
subsampling (the PLD curves: `noise_lb`); and it is a pure function of (config, seed)."""
import pytest
import dpsgd_lab as dl

CONFIG = "simulations/audit/one_run_q1.toml"
SUBSAMPLED = "simulations/audit/digits.toml"


def fields(r, path=""):
    """Every (path, value) of a JSON object, nested objects and lists flattened; the CLI's
    strings "inf" / "-inf" for a non-finite float (JSON has none) read as the float."""
    if r in ("inf", "-inf"):
        return {path: float(r)}
    if isinstance(r, dict):
        return {p: v for k, x in r.items() for p, v in fields(x, f"{path}.{k}").items()}
    if isinstance(r, list):
        return {p: v for i, x in enumerate(r) for p, v in fields(x, f"{path}[{i}]").items()}
    return {path: r}


def assert_same_report(cli_report, py_report):
    """Every field of the CLI's --json object is in the Python dict with the same value, and the
    Python dict has no field the CLI lacks; only the wall time may differ."""
    a, b = fields(cli_report), fields(py_report)
    assert set(a) == set(b), (sorted(set(a) - set(b)), sorted(set(b) - set(a)))
    for k in a:
        if k != ".wall_time_s":
            assert a[k] == b[k], (k, a[k], b[k])
    return a


def test_audit_run_equals_the_cli(cli, root):
    code, out, err = cli("audit-run", "--config", CONFIG, "--canaries", 200, "--seed", 3, "--json")
    assert code == 0, err
    got = dl.audit_run(config=str(root / CONFIG), canaries=200, seed=3)
    f = assert_same_report(out, got)
    # q = 1: the f-DP bound is against the Gaussian-DP curve and carries mu_lb, not noise_lb.
    assert out["fdp_exact"] is True
    assert ".threats[0].fdp.mu_lb" in f and ".threats[0].fdp.noise_lb" not in f


def test_audit_run_equals_the_cli_with_subsampling(cli, root, tmp_path):
    """q = 0.1: the digits config at epsilon 8 (m = 1000) and 2 (m = 200). The f-DP bound of
    every threat model carries noise_lb (the smallest z' whose PLD curve is rejected; "inf" in
    the CLI's JSON and float('inf') in Python when none is) and no mu_lb. Same keywords: confidence, delta and
    force as the CLI's flags, and reproducible as --reproducible: on a CSV only the research
    mode replays (the default draws the run's noise from the OS, so two runs differ)."""
    text = (root / SUBSAMPLED).read_text().replace(
        '"../../data/digits.csv"', f'"{root / "data" / "digits.csv"}"')
    for eps, m in ((8.0, 1000), (2.0, 200)):
        cfg = tmp_path / f"digits_eps{eps:g}.toml"
        cfg.write_text(text.replace("epsilon = 2.0", f"epsilon = {eps}"))
        code, out, err = cli("audit-run", "--config", cfg, "--canaries", m, "--seed", 2,
                             "--confidence", 0.9, "--delta", 1e-6, "--force", "--reproducible",
                             "--json")
        assert code == 0, err
        with pytest.warns(UserWarning, match="not a private release"):
            got = dl.audit_run(config=str(cfg), canaries=m, seed=2, confidence=0.9,
                               delta=1e-6, force=True, reproducible=True)
        f = assert_same_report(out, got)
        assert out["fdp_exact"] is False and out["confidence"] == 0.9 and out["delta"] == 1e-6
        lbs = [v for k, v in f.items() if k.endswith(".fdp.noise_lb")]
        assert len(lbs) == 3 and not any(k.endswith(".mu_lb") for k in f)
        assert all(v > 0 for v in lbs), lbs


def test_audit_run_is_a_function_of_config_and_seed(root):
    a = dl.audit_run(config=str(root / CONFIG), canaries=100, seed=5)
    b = dl.audit_run(config=str(root / CONFIG), canaries=100, seed=5)
    c = dl.audit_run(config=str(root / CONFIG), canaries=100, seed=6)
    for r in (a, b, c):
        r.pop("wall_time_s")
    assert a == b
    assert a != c
    assert [t["threat"] for t in a["threats"]] == ["every iterate", "released model",
                                                   "released model"]
    assert a["epsilon_claimed"] <= a["epsilon_rdp"]
