"""Golden outputs of the simulator: every shipped scenario and a matrix of flag-built
ones, fingerprinted (summary bytes, time-series columns, the arrivals' connections,
capture files).

Refactors must leave these byte-identical; ``tests/test_golden.py`` compares a fresh
run of every case with ``tests/golden/expected.json``. After a change that is meant to
move results, regenerate (and say why in the commit):

    python tests/golden.py --update
    CCBENCH_UPDATE_GOLDEN=1 cargo test --release -p ccbench-sim --test golden

The first also writes each case's resolved core JSON to ``crates/ccbench-sim/tests/golden/``,
where the crate's ``golden`` test checks its own outputs (summary, series and event-trace
hash) independently of the Python front end; the second stores those.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
EXPECTED = Path(__file__).resolve().parent / "golden" / "expected.json"
CORE_DIR = ROOT / "crates" / "ccbench-sim" / "tests" / "golden"

SHORT = {"duration": "3s"}

# Flag-built cases: each names a mechanism that a refactor could disturb.
FLAG_CASES: dict[str, dict[str, Any]] = {
    "reno": {"cca": "reno", **SHORT},
    "cubic-loss": {"cca": "cubic", "loss": "1%", "buffer": "0.5bdp", **SHORT},
    "bbr-shallow": {"cca": "bbr", "buffer": "0.25bdp", "rate": "50Mbit", "rtt": "20ms", **SHORT},
    "bbr2-loss": {"cca": "bbr2", "loss": "2%", **SHORT},
    "bbr3-deep": {"cca": "bbr3", "buffer": "4bdp", **SHORT},
    "mix-bbr-cubic": {"cca": "bbr,cubic", "buffer": "2bdp", **SHORT},
    "four-bbr3": {"cca": "bbr3", "flows": 4, "rate": "20Mbit", **SHORT},
    "sized-reno-cubic": {"cca": "reno,cubic", "size": "2MB", **SHORT},
    "repeat-downloads": {"cca": "cubic", "size": "500KB", "repeat": 3, "pause": "100ms", **SHORT},
    "rwnd-auto": {"cca": "cubic", "rwnd": "auto", "rate": "20Mbit", **SHORT},
    "rwnd-fixed": {"cca": "bbr", "rwnd": "200KB", **SHORT},
    "pacing-off": {"cca": "bbr", "pacing": False, **SHORT},
    "paced-cubic": {"cca": "cubic", "pacing": True, **SHORT},
    "codel": {"cca": "cubic,bbr", "aqm": "codel", "rate": "20Mbit", **SHORT},
    "fq-codel": {"cca": "cubic,bbr3", "aqm": "fq_codel", "rate": "20Mbit", **SHORT},
    "lte-trace": {"cca": "bbr", "trace": "traces/TMobile-LTE-short.down", **SHORT},
    "cpu-phone": {"cca": "bbr,cubic", "flows": 3, "cpu": "phone-lowend", "rate": "1Gbit", "rtt": "1ms", **SHORT},
    "cpu-slices": {"cca": "bbr", "cpu_share": "25%", "cpu_slice": "10ms", **SHORT},
    "cpu-slices-deficit": {
        "cca": "bbr3",
        "cpu_share": "50%",
        "cpu_slice": "10ms",
        "bbr_inflight_deficit": True,
        **SHORT,
    },
    "stride": {"cca": "bbr", "cpu": "phone-lowend", "pacing_stride": 10, "rate": "500Mbit", "rtt": "2ms", **SHORT},
    "fixed-cwnd": {"cca": "cubic", "fixed_cwnd": 40, **SHORT},
    "fixed-pacing": {"cca": "cubic", "fixed_pacing_rate": "20Mbit", **SHORT},
    "freeze-cc": {"cca": "bbr", "freeze_cc": True, **SHORT},
    "tso-rtt-log-0": {"cca": "bbr", "tso_rtt_log": 0, "rate": "1Gbit", "rtt": "5ms", **SHORT},
    "seed-7": {"cca": "cubic", "loss": "0.5%", "seed": 7, **SHORT},
    "capture": {"cca": "cubic,bbr", "size": "1MB", "pcap": "sender,bottleneck-in,bottleneck-out,receiver", **SHORT},
}


def cases() -> dict[str, Any]:
    """Every case: a shipped scenario file (its path) or a flag dict."""
    out: dict[str, Any] = {f"scenario-{p.stem}": p for p in sorted((ROOT / "scenarios").glob("*.toml"))}
    out.update(FLAG_CASES)
    return out


def _scenario(spec: Any) -> Any:
    from ccbench.scenario import Scenario, read_toml

    if isinstance(spec, Path):
        return Scenario.from_flags(base=read_toml(str(spec)))
    flags = dict(spec)
    if "trace" in flags:
        flags["trace"] = str(ROOT / flags["trace"])
    return Scenario.from_flags(**flags)


def _frame_digest(frame: pd.DataFrame) -> str:
    h = hashlib.sha256()
    for name in frame.columns:
        col = frame[name].to_numpy()
        h.update(f"{name}:{col.dtype}:{len(col)};".encode())
        if col.dtype == object:  # text: the values, not the pointers
            h.update("\0".join(map(str, col)).encode())
        else:
            h.update(np.ascontiguousarray(col).tobytes())
    return h.hexdigest()


def fingerprint(spec: Any) -> dict[str, str]:
    """Digests of one case's outputs, run through the simulator engine."""
    from ccbench.engines.sim import run
    from ccbench.result import summary_bytes

    sc = _scenario(spec)
    with tempfile.TemporaryDirectory() as tmp:
        result = run(sc, capture_to=tmp)
        out = {
            "summary": hashlib.sha256(summary_bytes(result.summary)).hexdigest(),
            "flows": _frame_digest(result.flows),
            "link": _frame_digest(result.link),
            "states": _frame_digest(result.states),
        }
        if len(result.connections):  # only runs with arrivals have any
            out["connections"] = _frame_digest(result.connections)
        for pcap in sorted(Path(tmp).glob("*.pcap")):
            out[pcap.name] = hashlib.sha256(pcap.read_bytes()).hexdigest()
    return out


def core_json(spec: Any) -> str:
    """The resolved scenario as the simulator crate takes it."""
    return _scenario(spec).to_json()


def update() -> None:
    expected = {name: fingerprint(spec) for name, spec in cases().items()}
    EXPECTED.parent.mkdir(parents=True, exist_ok=True)
    EXPECTED.write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    CORE_DIR.mkdir(parents=True, exist_ok=True)
    for old in CORE_DIR.glob("*.json"):
        if old.name != "expected.json":  # the crate's own fingerprints (CCBENCH_UPDATE_GOLDEN=1)
            old.unlink()
    for name, spec in cases().items():
        text = core_json(spec)
        # The crate's test runs without capture files, and a trace's opportunities are
        # inlined (megabytes): those cases are checked from Python only.
        if name == "capture" or len(text) > 100_000:
            continue
        (CORE_DIR / f"{name}.json").write_text(text + "\n")
    print(f"wrote {EXPECTED} ({len(expected)} cases) and {CORE_DIR}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/golden.py --update")
    update()
