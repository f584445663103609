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


# UDP flows and arrivals: (files written beside the scenario, run's arguments, field,
# message); "SCENARIO" stands for the scenario file.
ARRIVALS = '\n[[arrivals]]\ncca = "cubic"\nload = "{load}"\nsizes = "{sizes}"\n'
TRAFFIC_CASES = {
    "empty-cdf": (
        {"sizes.cdf": "# bytes probability\n\n"},
        ["--arrivals", "cubic", "--arrival-load", "0.5", "--arrival-sizes", "sizes.cdf"],
        "arrivals[0].sizes",
        "sizes.cdf: the CDF is empty",
    ),
    "cdf-not-increasing": (
        {"sizes.cdf": "1000 0.2\n500 0.6\n3000 1\n"},
        ["--arrivals", "cubic", "--arrival-load", "0.5", "--arrival-sizes", "sizes.cdf"],
        "arrivals[0].sizes",
        "sizes.cdf line 2: '500 0.6' is below the line before ('1000 0.2'); the CDF must not decrease",
    ),
    "cdf-not-ending-at-1": (
        {"sizes.cdf": "1000 0.2\n3000 0.9\n"},
        ["--arrivals", "cubic", "--arrival-load", "0.5", "--arrival-sizes", "sizes.cdf"],
        "arrivals[0].sizes",
        "sizes.cdf line 2: the CDF ends at probability 0.9; it must end at 1",
    ),
    "load-above-1": (
        {},
        ["--arrivals", "cubic", "--arrival-load", "1.5"],
        "arrivals[0].load",
        "must be above 0 and at most 1",
    ),
    "load-above-1-in-a-file": (
        {"SCENARIO": SHORT_TOML + ARRIVALS.format(load="150%", sizes="10KB")},
        [],
        "arrivals[0].load",
        "must be above 0 and at most 1",
    ),
    "times-going-backwards": (
        {"times.txt": "0.5\n1.25\n# a comment\n1.0\n"},
        ["--arrivals", "cubic", "--arrival-times", "times.txt"],
        "arrivals[0].times",
        "times.txt line 4: 1s is before 1250ms on the line before; arrival times must not go backwards",
    ),
    "cdf-file-beside-the-scenario": (
        {"SCENARIO": SHORT_TOML + ARRIVALS.format(load="50%", sizes="sizes.cdf"), "sizes.cdf": "10KB 0.5\n"},
        [],
        "arrivals[0].sizes",
        "sizes.cdf line 1: the CDF ends at probability 0.5",
    ),
    "arrivals-without-a-process": (
        {},
        ["--arrivals", "cubic"],
        "--arrivals",
        "give --arrival-load, --arrival-rate or --arrival-times too",
    ),
    "unknown-sizes": (
        {},
        ["--arrivals", "cubic", "--arrival-load", "0.5", "--arrival-sizes", "web"],
        "arrivals[0].sizes",
        "'web' is not a built-in distribution (web-search, data-mining)",
    ),
    "tcp-key-on-a-udp-flow": (
        {"SCENARIO": SHORT_TOML + '\n[[flows]]\nkind = "udp"\nrate = "1Mbit"\ncca = "cubic"\n'},
        [],
        "flows[1].cca",
        "is a TCP flow's key, not for a UDP flow",
    ),
    "udp-key-on-a-tcp-flow": (
        {"SCENARIO": SHORT_TOML + 'on = "1s"\n'},
        [],
        "flows[0].on",
        'give the entry kind = "udp"',
    ),
    "udp-on-without-off": (
        {},
        ["--udp", "2Mbit", "--udp-on", "1s"],
        "flows[1].off",
        "give both on and off periods, or neither",
    ),
    "udp-flags-without-udp": ({}, ["--udp-on", "1s"], "--udp-on", "needs UDP flows"),
    "udp-size": ({}, ["--udp", "2Mbit", "--udp-size", "70000"], "flows[1].size", "must be from 1 to 65507"),
    "udp-up-without-uplink": (
        {},
        ["--udp", "2Mbit", "--udp-direction", "up"],
        "flows[1].direction",
        "needs a reverse bottleneck",
    ),
    "udp-on-the-vm": (
        {},
        ["--udp", "2Mbit", "--engine", "vm"],
        "udp",
        "guest agent runs TCP flows only",
    ),
}


@pytest.mark.parametrize("name", sorted(TRAFFIC_CASES))
def test_bad_traffic(name: str, tmp_path: Path) -> None:
    files, args, field, message = TRAFFIC_CASES[name]
    for file, text in files.items():
        (tmp_path / ("scenario.toml" if file == "SCENARIO" else file)).write_text(text)
    scenario = ["scenario.toml"] if "SCENARIO" in files else []
    out = tmp_path / "out"
    # From another directory: files a scenario names are found beside it.
    cwd = tmp_path if not scenario else tmp_path.parent
    prefix = "" if not scenario else f"{tmp_path.name}/"
    result = run_cli("run", *(prefix + s for s in scenario), "--duration", "2s", "--out", str(out), *args, cwd=cwd)
    assert_one_line_error(result, field, message)
    assert not out.exists()
