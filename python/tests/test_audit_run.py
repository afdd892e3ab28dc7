"""audit_run is `dpsgd-lab audit-run --json`: the same report, number for number, for the same
config and seed; and it is a pure function of (config, seed)."""
import dpsgd_lab as dl

CONFIG = "simulations/audit/one_run_q1.toml"


def test_audit_run_equals_the_cli(cli, root):
    code, out, err = cli("audit-run", "--config", CONFIG, "--canaries", 200, "--seed", 3, "--json")
    assert code == 0, err
    got = dl.audit_run(config=str(root / CONFIG), canaries=200, seed=3)
    for r in (out, got):
        r.pop("wall_time_s")
    assert got == out


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
