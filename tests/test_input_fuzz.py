"""Generated input at every edge of ccbench: scenario files, ``run`` flags, sweep plans,
Mahimahi and CPU traces, pcap files and iperf3 reports.

Every case either runs and gives a summary whose invariants hold (no NaN, goodput at
most the capacity, delivered at most sent, no negative queue delay), or is refused with
exit status 2, exactly one ``error:`` line on stderr, and nothing written. Nothing may
end in a traceback or a panic.

A few hundred cases in all by default (well under a minute); for a longer search:

    CCBENCH_FUZZ_EXAMPLES=10000 .venv/bin/python -m pytest -q tests/test_input_fuzz.py

(the count applies to each test).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest
import tomli_w
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ccbench.cli import main

EXAMPLES = int(os.environ.get("CCBENCH_FUZZ_EXAMPLES", "0"))


def fuzz(default: int) -> Any:
    return settings(
        max_examples=EXAMPLES or default,
        deadline=None,
        derandomize=not EXAMPLES,
        suppress_health_check=list(HealthCheck),
        database=None,
    )


@contextlib.contextmanager
def workdir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="ccbench-fuzz-"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def ccbench(*args: str) -> tuple[int, str, str]:
    """``ccbench ARGS`` in this process: (status, stdout, stderr)."""
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8")  # --json writes to sys.stdout.buffer
    err = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(args))
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else 1
    out.flush()
    return status, raw.getvalue().decode(), err.getvalue()


def refused_or_ran(status: int, stdout: str, stderr: str, out: Optional[Path]) -> Optional[dict[str, Any]]:
    """The summary of a run; None for a refusal, which must be one line and write nothing."""
    if status == 2:
        lines = stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), stderr
        assert "Traceback" not in stderr and "panicked" not in stderr
        assert stdout == ""
        if out is not None:
            assert not out.exists(), f"refused, but {out} was written"
        return None
    assert status == 0, (status, stderr)
    event("ran")
    summary = json.loads(stdout, parse_constant=lambda c: pytest.fail(f"{c} in the summary"))
    return summary


def check_summary(summary: dict[str, Any], capacity_bps: Optional[float]) -> None:
    def finite(value: Any, where: str) -> None:
        if isinstance(value, float):
            assert math.isfinite(value), where
        elif isinstance(value, dict):
            for k, v in value.items():
                finite(v, f"{where}.{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                finite(v, f"{where}[{i}]")

    finite(summary, "summary")
    for f in summary["flows"]:
        assert f["delivered_bytes"] <= f["sent_bytes"], f
        assert f["goodput_bps"] >= 0
        if capacity_bps is not None:
            assert f["goodput_bps"] <= capacity_bps * (1 + 1e-9), (f["goodput_bps"], capacity_bps)
    delay = summary["link"]["queue_delay_ms"]
    assert all(v >= 0 for v in delay.values()), delay


# Values at the edges of each field and ordinary ones (strings as a user would type
# them, numbers, and things of the wrong type).


def edgy(ordinary: list[Any], edges: list[Any]) -> st.SearchStrategy[Any]:
    """An ordinary value six times out of seven (so that most cases run), else an edge."""
    return st.sampled_from(ordinary * (6 * max(1, len(edges)) // max(1, len(ordinary))) + edges)


DURATIONS = edgy(["100ms", "300ms"], ["0s", "-1s", "1ns", "1 parsec", "5", 5, 1.5, "1e3ms", "100000000h", ""])
RATES = edgy(
    ["1Mbit", "10Mbit", "100Mbit"], ["10Tbit", "11Tbit", "0", "1bit", "-5Mbit", "1e30Gbit", "fast", 1_000_000, 0, True]
)
RTTS = edgy(["1ms", "20ms", "40ms"], ["0ms", "1ns", "600s", "536s", "-3ms", "x", 40])
BUFFERS = edgy(["1bdp", "0.5bdp", "100pkt", "64KB"], ["0", "-1bdp", "1e9bdp", "nanbdp", "1pkt", 3])
LOSSES = edgy(["0", "1%"], ["0.5", "100%", "150%", "-1%", "nan", 0.01])
CCAS = edgy(["cubic", "reno", "bbr", "bbr3"], ["copa", "", "CUBIC"])
INTS = edgy([1, 2, 10], [0, 64, 1000, 65535, 65536, 2**31, 2**32, 2**63, -1])
HZ = edgy([100, 250, 1000], [300, 1024, 2_000_000, 1_000_000, 0, -1, "x"])
SIZES = edgy(["100KB", "1MB", "6MiB"], ["0", "1", "1e30B", "-1MB", "2GiB"])
DIRECTIONS = edgy(["down", "up"], ["sideways", "", "UP", 1])


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


def without_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


@st.composite
def scenario_docs(draw: st.DrawFn) -> dict[str, Any]:
    link = without_none(
        {
            "rate": draw(RATES),
            "rtt": draw(RTTS),
            "buffer": draw(maybe(BUFFERS)),
            "loss": draw(maybe(LOSSES)),
            "nic_rate": draw(maybe(RATES)),
            "aqm": draw(maybe(st.sampled_from(["droptail", "codel", "fq_codel", "red"]))),
        }
    )
    if link.get("aqm") not in (None, "droptail"):
        link.pop("buffer", None)
    reverse = draw(
        maybe(
            st.fixed_dictionaries(
                {"rate": RATES},
                optional={"buffer": BUFFERS, "loss": LOSSES, "aqm": st.sampled_from(["droptail", "fq_codel", "red"])},
            )
        )
    )
    if reverse is not None:
        link["reverse"] = reverse
    tcp = without_none(
        {
            "hz": draw(maybe(HZ)),
            "mss": draw(maybe(edgy([536, 1448, 9000], [0, 63, 64, 9001, 2**40]))),
            "init_cwnd": draw(maybe(INTS)),
            "pacing_shift": draw(maybe(edgy([10], [0, 31, 32, 64, -1]))),
            "rto_min": draw(maybe(edgy(["200ms", "1ms"], ["0s", "121s", "1ns"]))),
        }
    )
    flows = draw(
        st.lists(
            st.fixed_dictionaries(
                {"cca": CCAS},
                optional={
                    "count": INTS,
                    "start": edgy(["0s", "10ms"], ["1s", "-1s", "x"]),
                    "size": SIZES,
                    "rwnd": SIZES,
                    "pacing_stride": INTS,
                    "fixed_cwnd": INTS,
                    "repeat": INTS,
                    "access_delay": RTTS,
                    "direction": DIRECTIONS,
                },
            ),
            min_size=draw(edgy([1], [0])),
            max_size=3,
        )
    )
    doc = without_none(
        {
            "duration": draw(DURATIONS),
            "interval": draw(maybe(edgy(["1ms", "10ms", "100ms"], ["0s", "1us"]))),
            "seed": draw(maybe(INTS)),
            "link": link,
            "flows": flows,
        }
    )
    if tcp:
        doc["tcp"] = tcp
    return doc


def capacity(doc: dict[str, Any]) -> Optional[float]:
    """The most any flow can get: the faster direction's rate."""
    from ccbench.units import parse_rate

    link = doc["link"]
    rates = [link["rate"], *([link["reverse"]["rate"]] if "reverse" in link else [])]
    return max(float(parse_rate(r)) for r in rates)


@fuzz(150)
@given(scenario_docs())
def test_scenario_files(doc: dict[str, Any]) -> None:
    with workdir() as d:
        path = d / "scenario.toml"
        path.write_text(tomli_w.dumps(doc))
        out = d / "out"
        summary = refused_or_ran(*ccbench("run", str(path), "--json", "--out", str(out)), out)
        if summary is not None:
            assert (out / "summary.json").exists()
            check_summary(summary, capacity(doc))


FLAG_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "--rate": RATES,
    "--rtt": RTTS,
    "--buffer": BUFFERS,
    "--loss": LOSSES,
    "--duration": DURATIONS,
    "--flows": INTS,
    "--seed": INTS,
    "--interval": st.sampled_from(["1ms", "50ms", "0", "1us", "x"]),
    "--size": SIZES,
    "--pacing": st.sampled_from(["on", "off", "maybe"]),
    "--rwnd": st.sampled_from(["auto", "3MB", "1", "2GiB"]),
    "--cpu": st.sampled_from(["server", "phone-lowend", "toaster"]),
    "--cpu-share": st.sampled_from(["25%", "0%", "100%", "1e-9", "2"]),
    "--cpu-slice": st.sampled_from(["10ms", "1ns", "0s", "1us", "100000h"]),
    "--pacing-stride": INTS,
    "--fixed-cwnd": INTS,
    "--fixed-pacing-rate": RATES,
    "--tso-rtt-log": INTS,
    "--aqm": st.sampled_from(["codel", "fq_codel", "red"]),
    "--repeat": INTS,
    "--pause": DURATIONS,
    "--reverse-rate": RATES,
    "--reverse-buffer": BUFFERS,
    "--reverse-loss": LOSSES,
    "--reverse-aqm": st.sampled_from(["droptail", "fq_codel", "red"]),
    "--direction": st.sampled_from(["down", "up", "down,up", "up,up,up", "sideways", ","]),
}


@st.composite
def flag_lists(draw: st.DrawFn) -> list[str]:
    names = draw(st.lists(st.sampled_from(sorted(FLAG_VALUES)), max_size=5, unique=True))
    args = ["--cca", draw(edgy(["cubic", "bbr", "reno,cubic"], ["x"]))]
    for name in names:
        args += [name, str(draw(FLAG_VALUES[name]))]
    if "--duration" not in names:
        args += ["--duration", "200ms"]
    return args


@fuzz(120)
@given(flag_lists())
def test_run_flags(args: list[str]) -> None:
    with workdir() as d:
        out = d / "out"
        summary = refused_or_ran(*ccbench("run", *args, "--json", "--out", str(out)), out)
        if summary is not None:
            check_summary(summary, None)


PLAN_VALUES = st.one_of(
    RATES,
    st.lists(RATES, max_size=3),
    st.just({"from": 1, "to": 4, "step": 1, "unit": "Mbit"}),
    st.fixed_dictionaries(
        {"from": INTS, "to": INTS, "step": INTS}, optional={"unit": st.sampled_from(["Mbit", "ms", "x"])}
    ),
    st.just({"from": 1, "to": 1e12, "step": 1, "unit": "Mbit"}),
)


@st.composite
def sweep_plans(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "duration": draw(st.one_of(DURATIONS, st.lists(DURATIONS, max_size=2))),
        "link": {
            "rate": draw(PLAN_VALUES),
            "rtt": draw(st.one_of(RTTS, st.lists(RTTS, max_size=2))),
            "buffer": draw(st.one_of(BUFFERS, st.lists(BUFFERS, max_size=2))),
        },
        "flows": [{"cca": draw(st.one_of(CCAS, st.lists(CCAS, max_size=2)))}],
        "sweep": without_none(
            {"name": draw(st.sampled_from(["fuzz", "", "a/b", "x" * 300])), "repetitions": draw(maybe(INTS))}
        ),
    }


@fuzz(80)
@given(sweep_plans())
def test_sweep_plans(plan: dict[str, Any]) -> None:
    with workdir() as d:
        path = d / "plan.toml"
        path.write_text(tomli_w.dumps(plan))
        store = d / "store"
        status, stdout, stderr = ccbench("sweep", str(path), "--dry-run", "--store", str(store), "--quiet")
        if status == 2:
            refused_or_ran(status, stdout, stderr, store)
        else:
            assert status == 0, stderr


def lines(items: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(items, max_size=12).map("\n".join)


MAHIMAHI_LINES = st.one_of(
    st.integers(0, 40).map(str),
    st.integers(0, 40).map(str),
    st.integers(0, 40).map(str),
    st.sampled_from(["-1", "", " ", "1.5", "x", "1e3", "99999999999999", "# comment", "\x00", "٣"]),
)


def mahimahi(draw_lines: st.SearchStrategy[list[str]]) -> st.SearchStrategy[str]:
    """Mostly sorted timestamps (a trace), sometimes in the order drawn."""

    def order(ls: list[str]) -> list[str]:
        return sorted(ls, key=lambda x: int(x) if x.isdigit() else -1)

    return st.one_of(
        draw_lines.map(order).map("\n".join), draw_lines.map(order).map("\n".join), draw_lines.map("\n".join)
    )


@fuzz(120)
@given(mahimahi(st.lists(MAHIMAHI_LINES, max_size=12)), st.booleans())
def test_mahimahi_traces(text: str, ack: bool) -> None:
    with workdir() as d:
        trace = d / "link.trace"
        trace.write_text(text)
        out = d / "out"
        flag = "--ack-trace" if ack else "--trace"
        summary = refused_or_ran(
            *ccbench("run", flag, str(trace), "--duration", "200ms", "--json", "--out", str(out)), out
        )
        if summary is not None:
            check_summary(summary, None if not ack else 100e6)


CPU_LINES = st.one_of(
    st.tuples(
        edgy(["1ms", "2.5ms", "10ms"], ["0s", "0", "-1ms", "1ns", "1e9s", "x"]),
        edgy(["1ms", "7.5ms"], ["0s", "-1ms", "100000h", "y", "1us"]),
    ).map(" ".join),
    st.tuples(
        edgy(["1ms", "2.5ms", "10ms"], ["0s", "0", "-1ms", "1ns", "1e9s", "x"]),
        edgy(["1ms", "7.5ms"], ["0s", "-1ms", "100000h", "y", "1us"]),
    ).map(" ".join),
    st.sampled_from(["", "# note", "1ms", "1ms 2ms 3ms", "\t"]),
)


@fuzz(100)
@given(lines(CPU_LINES))
def test_cpu_traces(text: str) -> None:
    with workdir() as d:
        trace = d / "cpu.txt"
        trace.write_text(text)
        out = d / "out"
        summary = refused_or_ran(
            *ccbench(
                "run", "--cpu-trace", str(trace), "--duration", "200ms", "--rate", "10Mbit", "--json", "--out", str(out)
            ),
            out,
        )
        if summary is not None:
            check_summary(summary, 10e6)


@pytest.fixture(scope="module")
def seed_pcap(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    d = tmp_path_factory.mktemp("pcap")
    status, _, err = ccbench(
        "run", "--duration", "300ms", "--rate", "10Mbit", "--pcap", "sender", "--json", "--out", str(d)
    )
    assert status == 0, err
    return (d / "capture-sender.pcap").read_bytes()


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    data = bytearray(seed[: draw(st.integers(0, len(seed)))] if draw(st.booleans()) else seed)
    for _ in range(draw(st.integers(0, 8))):
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data)


@fuzz(100)
@given(data=st.data())
def test_pcap_files(seed_pcap: bytes, data: st.DataObject) -> None:
    blob = data.draw(st.one_of(mutated(seed_pcap), st.binary(max_size=64)))
    args = data.draw(
        st.sampled_from(
            [
                [],
                ["--flow", "0"],
                ["--flow", "-1"],
                ["--port", "70000"],
                ["--side", "receiver"],
                ["--interval", "0s"],
                ["--interval", "1ns"],
            ]
        )
    )
    with workdir() as d:
        path = d / "capture.pcap"
        path.write_bytes(blob)
        out = d / "out"
        status, stdout, stderr = ccbench("analyze", str(path), *args, "--json", "--out", str(out))
        summary = refused_or_ran(status, stdout, stderr, out)
        if summary is not None:
            check_summary_measured(summary)


def check_summary_measured(summary: dict[str, Any]) -> None:
    """A measured run (pcap or iperf3): no NaN or infinity, no negative rate. (Delivered
    may exceed sent here: a capture that missed data segments, or a corrupted sequence
    number, still shows the receiver acknowledging them.)"""
    text = json.dumps(summary)
    assert "NaN" not in text and "Infinity" not in text
    for f in summary.get("flows", []):
        for key in ("goodput_bps", "throughput_bps"):
            assert f.get(key) is None or f[key] >= 0, (key, f)


def iperf3_report(draw: st.DrawFn) -> Any:
    number = st.one_of(
        st.integers(-5, 10**12), st.floats(allow_nan=True, allow_infinity=True), st.none(), st.text(max_size=3)
    )
    stream = st.fixed_dictionaries(
        {},
        optional={
            "socket": st.integers(-1, 10),
            "start": number,
            "end": number,
            "seconds": number,
            "bytes": number,
            "bits_per_second": number,
            "retransmits": number,
            "snd_cwnd": number,
            "rtt": number,
            "rttvar": number,
            "pmtu": number,
            "omitted": st.booleans(),
            "sender": st.booleans(),
        },
    )
    interval = st.fixed_dictionaries({"streams": st.lists(stream, max_size=3)}, optional={"sum": stream})
    start = st.fixed_dictionaries(
        {
            "test_start": st.fixed_dictionaries(
                {},
                optional={
                    "protocol": st.sampled_from(["TCP", "UDP", 5]),
                    "num_streams": number,
                    "reverse": st.sampled_from([0, 1, "x"]),
                    "duration": number,
                },
            )
        },
        optional={
            "connected": st.lists(
                st.fixed_dictionaries(
                    {}, optional={"socket": st.integers(-1, 10), "local_port": number, "remote_port": number}
                ),
                max_size=3,
            ),
            "timestamp": st.fixed_dictionaries({}, optional={"timesecs": number}),
        },
    )
    return draw(
        st.one_of(
            st.fixed_dictionaries(
                {"start": start, "intervals": st.lists(interval, max_size=4)},
                optional={"end": st.just({}), "error": st.text(max_size=5)},
            ),
            st.just([]),
            st.just("x"),
            st.none(),
        )
    )


@fuzz(120)
@given(data=st.data())
def test_iperf3_reports(data: st.DataObject) -> None:
    report = data.draw(st.composite(iperf3_report)())
    with workdir() as d:
        path = d / "report.json"
        text = json.dumps(report, allow_nan=True)
        if data.draw(st.booleans()):
            text = text[: data.draw(st.integers(0, len(text)))]
        path.write_text(text)
        out = d / "out"
        status, stdout, stderr = ccbench("import-iperf3", str(path), "--json", "--out", str(out))
        summary = refused_or_ran(status, stdout, stderr, out)
        if summary is not None:
            check_summary_measured(summary)


def test_the_issue_example_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "hz.toml"
    path.write_text(
        'duration = "1s"\n[link]\nrate = "10Mbit"\nrtt = "40ms"\n[tcp]\nhz = 2000000\n[[flows]]\ncca = "cubic"\n'
    )
    status, stdout, stderr = ccbench("run", str(path))
    assert status == 2 and stdout == ""
    assert stderr.startswith("error: tcp.hz: must divide 1000000") and stderr.count("\n") == 1


def test_a_run_beyond_the_machine_is_refused_with_the_estimate(tmp_path: Path) -> None:
    out = tmp_path / "out"
    status, _, stderr = ccbench(
        "run", "--rate", "100Gbit", "--flows", "100", "--rwnd", "1000MB", "--duration", "60min", "--out", str(out)
    )
    assert status == 2 and not out.exists()
    assert stderr.startswith("error: scenario: too large to run here: about ")
    assert "packets" in stderr and "--allow-large" in stderr and stderr.count("\n") == 1


def test_a_sweep_point_beyond_the_machine_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CCBENCH_ALLOW_LARGE", raising=False)
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'duration = "60min"\n[link]\nrate = ["10Mbit", "100Gbit"]\nrtt = "40ms"\n'
        '[[flows]]\ncca = "cubic"\ncount = 100\nrwnd = "1000MB"\n'
    )
    store = tmp_path / "store"
    status, stdout, stderr = ccbench("sweep", str(plan), "--dry-run", "--store", str(store), "--quiet")
    assert status == 2 and stdout == "" and not store.exists()
    assert stderr.startswith("error: scenario: too large to run here: ") and "CCBENCH_ALLOW_LARGE=1" in stderr
    assert "(point 2 of 2: link.rate=100Gbit)" in stderr


@pytest.mark.parametrize(
    "value",
    ["[" * 1000 + "1" + "]" * 1000, "[" * 100 + "1" + "]" * 100, "{a = " * 1000 + "1" + "}" * 1000, "[" * 100_000],
)
def test_toml_nested_to_any_depth_is_one_line(tmp_path: Path, value: str) -> None:
    out = tmp_path / "out"
    path = tmp_path / "deep.toml"
    path.write_text(f'duration = "1s"\n[link]\nrtt = "10ms"\ntrace = {value}\n[[flows]]\ncca = "cubic"\n')
    for args in (
        ["run", str(path)],
        ["sweep", str(path), "--dry-run", "--quiet", "--store", str(out)],
        ["run", "--set", f"link.rtt={value}"],
    ):
        status, stdout, stderr = ccbench(*args, "--out", str(out)) if args[0] == "run" else ccbench(*args)
        assert refused_or_ran(status, stdout, stderr, out) is None
        assert "invalid TOML" in stderr, stderr


def test_a_50_mb_scenario_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    with path.open("w") as f:
        f.write('duration = "1s"\n[link]\nrate = "10Mbit"\nrtt = "10ms"\n')
        f.write("x = [" + "1, " * (50_000_000 // 3))  # never closed
    status, stdout, stderr = ccbench("run", str(path), "--out", str(tmp_path / "out"))
    assert refused_or_ran(status, stdout, stderr, tmp_path / "out") is None
    size = path.stat().st_size
    assert size > 50_000_000
    assert stderr == f"error: {path}: is {size:,} bytes; a scenario or sweep plan is at most 16 MiB of TOML\n"
    # Under the limit, a malformed file is TOML's error (the parser reads it whole).
    path.write_text('duration = "1s"\n' + "x = [" + "1, " * (4_000_000 // 3))
    status, stdout, stderr = ccbench("run", str(path))
    assert refused_or_ran(status, stdout, stderr, None) is None and "invalid TOML" in stderr, stderr
