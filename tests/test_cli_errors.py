"""Every bad input: one line on stderr, exit status 2, no traceback, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SHORT_TOML, run_cli

CASES = {
    "rate-zero": (["--rate", "0"], "link.rate", "must be positive"),
    "rate-negative": (["--rate", "-100Mbit"], "link.rate", "must be positive"),
    "rate-bytes": (["--rate", "100MB/s"], "link.rate", "byte rates"),
    "rtt-zero": (["--rtt", "0ms"], "link.rtt", "must be positive"),
    "buffer-negative": (["--buffer", "-1bdp"], "link.buffer", "must not be negative"),
    "unknown-cca": (["--cca", "copa"], "flows[0].cca", "allowed: reno, cubic"),
    "second-unknown-cca": (["--cca", "cubic,bbr9"], "flows[1].cca", "allowed:"),
    "parsecs": (["--duration", "10 parsecs"], "duration", "allowed units: ns, us, ms, s, min"),
    "loss-150": (["--loss", "150%"], "link.loss", "below 100%"),
    "interval-small": (["--interval", "10us"], "interval", "at least 1ms"),
    "size-zero": (["--size", "0"], "flows[0].size", "must be positive"),
    "flows-zero": (["--flows", "0"], "flows[0].count", "from 1 to"),
    "flows-not-int": (["--flows", "two"], "--flows", "not a valid integer"),
    "seed-not-int": (["--seed", "x"], "--seed", "not a valid integer"),
    "pacing-bad": (["--pacing", "maybe"], "--pacing", "'on', 'off'"),
    "unknown-flag": (["--colour", "red"], "--colour", "no such option"),
    "missing-value": (["--rate"], "--rate", "requires a value"),
    "missing-file": (["no-such-file.toml"], "no-such-file.toml", "no such scenario file"),
}


def assert_one_line_error(result, field: str, message: str) -> None:
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {field}: "), lines[0]
    assert message in lines[0]
    assert result.stdout == ""


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_flags(name: str, tmp_path: Path) -> None:
    args, field, message = CASES[name]
    out = tmp_path / "out"
    result = run_cli("run", "--out", str(out), *args, cwd=tmp_path)
    assert_one_line_error(result, field, message)
    assert not out.exists()


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "scenario.toml"
    p.write_text(text)
    return p


FILE_CASES = {
    "unknown-top-key": ("colour = 1\n" + SHORT_TOML, "colour", "unknown key"),
    "unknown-link-key": (SHORT_TOML.replace("[link]", "[link]\njitter = 1"), "link.jitter", "unknown key"),
    "mtu": (SHORT_TOML.replace("[link]", "[link]\nmtu = 500"), "link.mtu", "552 to 65535 bytes"),
    "black-hole-without-mtu": (
        SHORT_TOML.replace("[link]", "[link]\nmtu_black_hole = true"),
        "link.mtu_black_hole",
        "needs link.mtu",
    ),
    "mtu-probing": (SHORT_TOML + "[tcp]\nmtu_probing = 3\n", "tcp.mtu_probing", "from 0 to 2"),
    "unknown-flow-key": (SHORT_TOML + "weight = 2\n", "flows[0].weight", "unknown key"),
    "unknown-tcp-key": (SHORT_TOML + "[tcp]\nnagle = true\n", "tcp.nagle", "unknown key"),
    "unknown-cca": (SHORT_TOML.replace('"cubic"', '"copa"'), "flows[0].cca", "allowed:"),
    "loss": (SHORT_TOML.replace("[link]", '[link]\nloss = "150%"'), "link.loss", "below 100%"),
    "rate": (SHORT_TOML.replace('"10Mbit"', '"0Mbit"'), "link.rate", "must be positive"),
    "rtt": (SHORT_TOML.replace('"20ms"', '"0s"'), "link.rtt", "must be positive"),
    "buffer": (SHORT_TOML.replace('"1bdp"', '"-1bdp"'), "link.buffer", "must not be negative"),
    "duration": (SHORT_TOML.replace('"2s"', '"10 parsecs"'), "duration", "unknown duration unit"),
    "params": (
        SHORT_TOML + "params = { beta = 0.5 }\n",
        "flows[0].params.beta",
        "must be a whole number in [1, 1023], got 0.5",
    ),
}


@pytest.mark.parametrize("name", sorted(FILE_CASES))
def test_bad_files(name: str, tmp_path: Path) -> None:
    text, field, message = FILE_CASES[name]
    path = write(tmp_path, text)
    out = tmp_path / "out"
    result = run_cli("run", str(path), "--out", str(out))
    assert_one_line_error(result, field, message)
    assert not out.exists()


def test_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, SHORT_TOML + "\n[[flows]\ncca = 'reno'\n")
    out = tmp_path / "out"
    result = run_cli("run", str(path), "--out", str(out))
    assert_one_line_error(result, str(path), "invalid TOML")
    bad_line = SHORT_TOML.count("\n") + 2
    assert f"line {bad_line}," in result.stderr
    assert not out.exists()


def test_flag_fixes_a_bad_file_value(tmp_path: Path) -> None:
    # Flags override the file before validation, so the file's bad rate never counts;
    # the error that remains is the one the flag cannot fix.
    path = write(tmp_path, SHORT_TOML.replace('"10Mbit"', '"0"').replace('"20ms"', '"0s"'))
    result = run_cli("run", str(path), "--rate", "10Mbit")
    assert_one_line_error(result, "link.rtt", "must be positive")


def test_out_is_a_file(tmp_path: Path) -> None:
    out = tmp_path / "taken"
    out.write_text("not a directory")
    result = run_cli("run", "--duration", "1s", "--out", str(out))
    assert_one_line_error(result, "--out", "not a directory")
    assert out.read_text() == "not a directory"


def test_unknown_command() -> None:
    result = run_cli("fly")
    assert_one_line_error(result, "command", "allowed: ")
    assert "run" in result.stderr.split("allowed: ")[1]


def test_version() -> None:
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.startswith("ccbench ")


def test_help() -> None:
    result = run_cli("run", "--help")
    assert result.returncode == 0
    for flag in (
        "--cca",
        "--rate",
        "--rtt",
        "--buffer",
        "--loss",
        "--duration",
        "--flows",
        "--seed",
        "--interval",
        "--size",
        "--pacing",
        "--out",
        "--json",
    ):
        assert flag in result.stdout
