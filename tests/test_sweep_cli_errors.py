"""Bad sweep plans and bad flags of ``ccbench sweep`` and ``ccbench results``: one line
``error: <field>: <what is allowed>`` on stderr, exit status 2, nothing run or written."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import Completed, run_cli

BASE = """\
duration = "1s"

[link]
rate = "10Mbit"
rtt = "20ms"

[[flows]]
cca = "cubic"
"""


def assert_one_line_error(result: Completed, field: str, message: str) -> None:
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {field}: "), lines[0]
    assert message in lines[0], lines[0]
    assert result.stdout == ""


PLANS = {
    "unknown-key": (BASE + "[sweep]\ncolour = 1\n", "sweep.colour", "unknown key; allowed keys: name"),
    "scenario-key-below-sweep": (
        "[sweep]\nname = 'x'\n" + BASE.replace("[link]", "[link]", 1),
        "sweep.duration",
        "write it before [sweep]",
    ),
    "unknown-scenario-key": (BASE.replace("[link]", "[link]\njitter = [1, 2]"), "link.jitter", "unknown key"),
    "empty-list": (BASE.replace('rate = "10Mbit"', "rate = []"), "link.rate", "empty list"),
    "step-zero": (
        BASE.replace('rate = "10Mbit"', 'rate = { from = 10, to = 100, step = 0, unit = "Mbit" }'),
        "link.rate",
        "step must not be 0",
    ),
    "wrong-direction": (
        BASE.replace('rate = "10Mbit"', 'rate = { from = 100, to = 10, step = 10, unit = "Mbit" }'),
        "link.rate",
        "goes away from to = 10",
    ),
    "swept-twice": (
        BASE.replace('rate = "10Mbit"', 'rate = ["10Mbit", "20Mbit"]') + '[sweep.vary]\n"link.rate" = ["30Mbit"]\n',
        "link.rate",
        "swept twice",
    ),
    "list-for-table": (
        'duration = "1s"\nlink = ["10Mbit"]\n[[flows]]\ncca = "cubic"\n',
        "link",
        "cannot be swept as a whole",
    ),
    "params-list": (BASE + "params = [1, 2]\n", "flows[0].params", "cannot be swept as a whole"),
    "invalid-point": (
        BASE.replace('cca = "cubic"', 'cca = ["cubic", "copa"]'),
        "flows[0].cca",
        "unknown algorithm 'copa'; allowed: reno, cubic, bbr, bbr2, bbr3, bic, ",
    ),
    "invalid-late-point": (
        BASE.replace('rtt = "20ms"', 'rtt = { from = 20, to = -20, step = -10, unit = "ms" }'),
        "link.rtt",
        "must be positive, e.g. '40ms' (point 3 of 5: link.rtt=0ms)",
    ),
    "zip-lengths": (
        BASE.replace('rate = "10Mbit"', 'rate = ["10Mbit", "20Mbit"]').replace(
            'rtt = "20ms"', 'rtt = ["10ms", "20ms", "40ms"]'
        )
        + '[sweep]\nzip = [["link.rate", "link.rtt"]]\n',
        "sweep.zip",
        "as many values each",
    ),
    "toml-syntax": (BASE + "[[flows]\n", "plan.toml", "invalid TOML"),
}


@pytest.mark.parametrize("name", sorted(PLANS))
def test_bad_plans(name: str, tmp_path: Path) -> None:
    text, field, message = PLANS[name]
    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    store = tmp_path / "store"
    result = run_cli("sweep", "plan.toml", "--store", str(store), cwd=tmp_path)
    assert_one_line_error(result, field, message)
    assert not store.exists()
    assert not (tmp_path / "ccbench-results").exists()


FLAGS = {
    "no-plan": ([], "PLAN.toml", "missing"),
    "missing-plan": (["nope.toml"], "nope.toml", "no such scenario file"),
    "workers-zero": (["plan.toml", "--workers", "0"], "--workers", "at least 1"),
    "workers-and-cluster": (
        ["plan.toml", "--workers", "2", "--cluster", "tcp://127.0.0.1:1"],
        "--workers",
        "not used with --cluster",
    ),
    "cluster-address": (["plan.toml", "--cluster", "localhost"], "--cluster", "tcp://"),
    "engine": (["plan.toml", "--engine", "ns3"], "--engine", "'sim', 'kernel'"),
    "store-is-a-file": (["plan.toml", "--store", "plan.toml"], "plan.toml", "not a directory"),
}


@pytest.mark.parametrize("name", sorted(FLAGS))
def test_bad_sweep_flags(name: str, tmp_path: Path) -> None:
    args, field, message = FLAGS[name]
    (tmp_path / "plan.toml").write_text(BASE)
    result = run_cli("sweep", *args, cwd=tmp_path)
    assert_one_line_error(result, field, message)
    assert not (tmp_path / "ccbench-results").exists()


def test_unreachable_cluster(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "plan.toml").write_text(BASE)
    result = run_cli("sweep", "plan.toml", "--cluster", f"tcp://127.0.0.1:{port}", cwd=tmp_path)
    assert_one_line_error(result, "--cluster", "cannot reach a Dask scheduler")


def test_results_without_a_store(tmp_path: Path) -> None:
    result = run_cli("results", "--store", str(tmp_path / "none"), cwd=tmp_path)
    assert_one_line_error(result, str(tmp_path / "none"), "no results store here")
    assert not (tmp_path / "none").exists()


def test_results_bad_where(tmp_path: Path) -> None:
    result = run_cli("results", "--where", "link.rate", cwd=tmp_path)
    assert_one_line_error(result, "--where", "KEY=VALUE")
