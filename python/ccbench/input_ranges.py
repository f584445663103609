"""The table of every input's allowed range, written from the checks themselves.

The simulator's ranges come from ``ccbench_sim::config::input_ranges`` (the constants
``Scenario::validate`` checks against); the front end's own (flow counts, the
time-series floor, CPU presets, file formats, the resource guard) from the constants in
this package. ``docs/input-ranges.md`` is this module's output, and a test fails when
the committed file differs:

    python -m ccbench.input_ranges --write docs/input-ranges.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from . import _core

# TOML key -> the ``ccbench run`` flag that sets it (for every flow where it is per flow).
FLAGS = {
    "seed": "--seed",
    "duration": "--duration",
    "interval": "--interval",
    "link.rate": "--rate",
    "link.rtt": "--rtt",
    "link.buffer": "--buffer",
    "link.loss": "--loss",
    "link.trace, link.ack_trace": "--trace, --ack-trace",
    "link.aqm": "--aqm",
    "link.reverse.rate": "--reverse-rate",
    "link.reverse.trace": "--reverse-trace",
    "link.reverse.buffer": "--reverse-buffer",
    "link.reverse.loss": "--reverse-loss",
    "link.reverse.aqm": "--reverse-aqm",
    "flows[i].direction": "--direction",
    "flows[i].cca": "--cca",
    "flows[i].size": "--size",
    "flows[i].rwnd": "--rwnd",
    "flows[i].pacing_stride": "--pacing-stride",
    "flows[i].fixed_cwnd": "--fixed-cwnd",
    "flows[i].fixed_pacing_rate": "--fixed-pacing-rate",
    "flows[i].repeat": "--repeat",
    "tcp.tso_rtt_log": "--tso-rtt-log",
    "host.cpu_share": "--cpu-share",
    "host.cpu_slice": "--cpu-slice",
    "host.cpu_trace": "--cpu-trace",
}


# [link.reverse] goes through the core's checks of [link]'s values (its rate, buffer,
# loss and AQM ranges): its rows are those of [link], renamed, where a BDP is the uplink's.
_REVERSE_SHARES = {"link.rate", "link.buffer", "link.loss", "link.ecn_threshold", "link.aqm"}
_REVERSE_SHARED_TABLES = ("link.loss_model.", "link.aqm_params.")
_UPLINK_BDP = " (the uplink's: its rate x link.rtt)"


def _with_directions(core: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The core's rows with ``[link.reverse]``'s after the link's, and a flow's direction
    after the flows'."""
    reverse = [
        ("link.reverse", "rate or trace, not both; not with link.ack_trace (give its trace as link.reverse.trace)")
    ]
    for field, allowed in core:
        if field in _REVERSE_SHARES or field.startswith(_REVERSE_SHARED_TABLES):
            allowed = allowed.replace("link.loss", "link.reverse.loss")
            reverse.append((field.replace("link.", "link.reverse.", 1), allowed + _UPLINK_BDP * ("BDP" in allowed)))
        elif field == "link.trace, link.ack_trace":
            reverse.append(("link.reverse.trace", allowed))
    direction = ("flows[i].direction", "down or up; up needs a reverse bottleneck, link.reverse or link.ack_trace")
    last_link = max(i for i, (field, _) in enumerate(core) if field.startswith("link."))
    last_flow = max(i for i, (field, _) in enumerate(core) if field.startswith("flows"))
    return [*core[: last_link + 1], *reverse, *core[last_link + 1 : last_flow + 1], direction, *core[last_flow + 1 :]]


def _front_end_rows() -> list[tuple[str, str, str]]:
    """Ranges the TOML front end checks before the simulator sees the scenario."""
    from .scenario import CAPTURE_POINTS, MAX_FLOWS_PER_ENTRY, MIN_INTERVAL_NS
    from .scenario.host import presets
    from .units import format_duration

    return [
        ("interval", "--interval", f"at least {format_duration(MIN_INTERVAL_NS)} (the front end does not offer 0)"),
        ("flows[i].count", "--flows", f"1 to {MAX_FLOWS_PER_ENTRY} per [[flows]] entry"),
        ("flows[i].params", "", "finite numbers; names and ranges per algorithm"),
        ("host.cpu", "--cpu", ", ".join(presets())),
        ("host.cpu_deadline", "", "runtime (deadline = runtime, the default), slice (deadline = cpu_slice)"),
        ("capture.points", "--pcap", ", ".join(CAPTURE_POINTS)),
        ("capture.flows", "--pcap-flows", "flow indices from 0 to the number of flows - 1"),
    ]


def _traffic_rows() -> list[tuple[str, str, str]]:
    """UDP flows and arrivals (docs/traffic.md), after the TCP flows' rows."""
    from .scenario import MAX_FLOWS_PER_ENTRY
    from .scenario.arrivals import BUILTIN_SIZES

    return [
        ("flows[i].kind", "", "tcp (the default) or udp; a UDP flow takes only the keys of docs/traffic.md"),
        ("flows[i].count (kind = udp)", "", f"1 to {MAX_FLOWS_PER_ENTRY} per [[flows]] entry"),
        ("flows[i].rate (kind = udp)", "--udp", "positive bit/s of IP packets (payload + 28 bytes); as link.rate"),
        (
            "flows[i].size (kind = udp)",
            "--udp-size",
            "1 to 65507 bytes of payload (an IPv4 packet's less UDP's header); with link.mtu, size + 28 within it",
        ),
        ("flows[i].on, .off (kind = udp)", "--udp-on, --udp-off", "at least 1 ms each, both or neither"),
        ("flows[i].on_off (kind = udp)", "--udp-on-off", "fixed, exponential (needs on and off)"),
        ("flows[i].start, .stop (kind = udp)", "", "start before the end of the run; stop after start"),
        (
            "flows[i].rate_schedule, .rate_file (kind = udp)",
            "",
            "one of them; steps after 0 s at increasing times, each rate 0 (silent) or as link.rate",
        ),
        ("flows[i].direction (kind = udp)", "--udp-direction", "down or up; up needs a reverse bottleneck"),
        ("arrivals[k].cca, .params", "--arrivals", "as flows[i].cca and flows[i].params"),
        (
            "arrivals[k].rate, .load, .times",
            "--arrival-rate, --arrival-load, --arrival-times",
            "exactly one: rate above 0 and at most 10,000,000 connections a second; load above 0 and at most 1 "
            "(of its direction's link); times from a file, never going backwards",
        ),
        (
            "arrivals[k].sizes",
            "--arrival-sizes",
            f"{', '.join(BUILTIN_SIZES)}, a positive size, or a CDF file",
        ),
        ("arrivals[k].start, .stop", "", "start before the end of the run; stop after start"),
        ("arrivals[k].direction", "--arrival-direction", "down or up; up needs a reverse bottleneck"),
        ("arrivals[k].connect", "", "sender, receiver"),
        ("arrivals", "", "not with link.mtu (their connections do not model the path MTU)"),
    ]


def _file_rows() -> list[tuple[str, str, str]]:
    from .capture import MAX_SERIES_ROWS, MIN_INTERVAL_S
    from .capture.reader import LINK_NAMES
    from .toml_input import MAX_BYTES, MAX_DEPTH
    from .traces import MAX_TIMESTAMP_MS

    links = ", ".join(sorted(set(LINK_NAMES.values())))
    return [
        (
            "scenario / sweep plan",
            "ccbench run, ccbench sweep, --set",
            f"UTF-8 TOML, at most {MAX_BYTES // 2**20} MiB, arrays and tables nested at most {MAX_DEPTH} deep",
        ),
        (
            "Mahimahi trace",
            "--trace, --ack-trace, --reverse-trace, link.trace",
            f"one integer per line, milliseconds, never decreasing; the last from 1 to {MAX_TIMESTAMP_MS}",
        ),
        (
            "CPU trace",
            "--cpu-trace, host.cpu_trace",
            "one '<on> <off>' pair of durations per line ('#' comments); some on time; one pass from 1 us "
            "to the longest duration",
        ),
        (
            "UDP rate file",
            "flows[i].rate_file",
            "'seconds rate' per line ('#' comments), times increasing, rates 0 (silent) or positive",
        ),
        (
            "size CDF",
            "--arrival-sizes, arrivals[k].sizes",
            "'bytes probability' per line ('#' comments); not empty, sizes positive, both never decreasing, "
            "the last probability 1",
        ),
        (
            "arrival times",
            "--arrival-times, arrivals[k].times",
            "one time per line, seconds or a duration ('#' comments); not empty, never going backwards",
        ),
        ("pcap / pcapng", "ccbench analyze", f"link types: {links}; TCP over IPv4 or IPv6"),
        (
            "analyze --interval",
            "ccbench analyze",
            f"at least {MIN_INTERVAL_S * 1e3:g} ms, and at most "
            f"{MAX_SERIES_ROWS:.0e} time-series rows over the capture",
        ),
        ("iperf3 report", "ccbench import-iperf3", "the JSON of 'iperf3 -J' (also --reverse, -P N) of a TCP test"),
    ]


def _resource_rows() -> list[tuple[str, str, str]]:
    from .resources import ALLOW_ENV, MAX_WALL_SECONDS, MEMORY_SHARE

    override = f"--allow-large, {ALLOW_ENV}=1"
    return [
        ("estimated memory", override, f"at most {MEMORY_SHARE:.0%} of the machine's physical memory"),
        ("estimated wall time", override, f"at most {MAX_WALL_SECONDS // 60} min on one core"),
    ]


def _table(rows: Sequence[tuple[str, str, str]], head: tuple[str, str, str]) -> list[str]:
    def cell(s: str) -> str:
        return s.replace("|", "\\|")

    out = [f"| {head[0]} | {head[1]} | {head[2]} |", "|---|---|---|"]
    out += [f"| `{cell(a)}` | {cell(b) and '`' + cell(b) + '`'} | {cell(c)} |" for a, b, c in rows]
    return out


def render() -> str:
    """docs/input-ranges.md."""
    core = [(field, FLAGS.get(field, ""), allowed) for field, allowed in _with_directions(_core.input_ranges())]
    front = {row[0]: row for row in _front_end_rows()}
    rows = [front.pop(r[0], r) for r in core] + list(front.values())
    last_flow = max(i for i, row in enumerate(rows) if row[0].startswith("flows["))
    rows[last_flow + 1 : last_flow + 1] = _traffic_rows()
    lines = [
        "# Input ranges",
        "",
        "<!-- Generated by `python -m ccbench.input_ranges --write docs/input-ranges.md`; do not edit. -->",
        "",
        "Every value ccbench accepts, and why each range ends where it does. Anything outside is refused",
        "with one line, `error: <field>: <what is allowed>`, exit status 2, before anything is written.",
        "Sizes, rates and durations take units (`64KB`, `10Mbit`, `40ms`); a flag sets the key for every",
        "flow where the key is per flow.",
        "",
        "## Scenario keys and `ccbench run` flags",
        "",
        *_table(rows, ("key", "flag", "allowed")),
        "",
        "## Files",
        "",
        *_table(_file_rows(), ("input", "where", "allowed")),
        "",
        "## Size of a run",
        "",
        "Before a run starts, the simulator estimates its data packets (the bottleneck's rate, each",
        "sender's NIC and receive window per round trip), its time-series rows and memory, and its",
        "wall time. A run (`ccbench run`, or any point of a sweep) beyond this machine is refused with",
        "the estimate:",
        "",
        *_table(_resource_rows(), ("estimate", "override", "allowed")),
        "",
        "## How the ranges are kept",
        "",
        "Generated input at every edge goes through the suite: `tests/test_input_fuzz.py` (scenario",
        "files, `run` flags, sweep plans, Mahimahi and CPU traces, pcap files, iperf3 reports) and",
        "`crates/ccbench-sim/tests/input_fuzz.rs` (JSON-shaped scenarios straight into the simulator).",
        "Each case runs with sound results or is refused as above; none may panic. A longer search,",
        "about 10,000 cases each:",
        "",
        "```",
        "CCBENCH_FUZZ_EXAMPLES=1500 .venv/bin/python -m pytest -q tests/test_input_fuzz.py",
        "PROPTEST_CASES=10000 cargo test --release -p ccbench-sim --test input_fuzz",
        "```",
        "",
        "An internal fault (a bug, not the input) ends in one `error:` line and exit status 1;",
        "`ccbench --debug ...` prints its traceback and the simulator's backtrace instead.",
        "",
    ]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ccbench.input_ranges", description=__doc__.splitlines()[0])
    parser.add_argument("--write", metavar="PATH", help="write the table here instead of printing it")
    args = parser.parse_args(argv)
    text = render()
    if args.write:
        Path(args.write).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
