"""Reading a run directory (what ``ccbench run --out`` and ``Result.save`` write)."""

from __future__ import annotations

import json
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import pandas as pd

from ..errors import ScenarioError
from ..result import CONNECTIONS_FILE, STATES_FILE

REQUIRED = ("summary.json", "flows.parquet", "link.parquet")


class PlotError(ScenarioError):
    """A run directory that cannot be plotted, or a bad plot option. Like
    ScenarioError it carries ``field`` and ``message``; the CLI prints it as one
    ``error: <field>: <message>`` line and exits with status 2."""


@dataclass
class RunData:
    """A finished run read back from disk."""

    directory: Path
    summary: dict[str, Any]
    flows: pd.DataFrame
    link: pd.DataFrame
    scenario: dict[str, Any] = field(default_factory=dict)  # scenario.toml, when present
    packets: Optional[pd.DataFrame] = None  # packets.parquet of an analysed capture
    states: Optional[pd.DataFrame] = None  # states.parquet: the algorithms' state-machine moves
    connections: Optional[pd.DataFrame] = None  # connections.parquet: the arrivals' connections

    @property
    def flow_count(self) -> int:
        return len(self.summary.get("flows", []))

    @property
    def interval_s(self) -> float:
        """The sampling interval, from the time stamps (or the scenario when there is
        only one sample)."""
        given = (self.summary.get("capture") or {}).get("interval_s")
        if isinstance(given, (int, float)) and given > 0:
            return float(given)
        times = np.unique(self.link["time_s"].to_numpy(dtype=float)) if len(self.link) else np.array([])
        if len(times) >= 2:
            return round(float(np.median(np.diff(times))), 9)
        if len(times) == 1:
            return float(times[0])
        return 0.1

    @property
    def mss(self) -> int:
        tcp = self.scenario.get("tcp", {})
        if isinstance(tcp.get("mss"), int):
            return int(tcp["mss"])
        f = self.flows
        if {"inflight", "inflight_bytes"} <= set(f.columns):
            ok = f["inflight"] > 0
            if ok.any():
                return int(round(float((f.loc[ok, "inflight_bytes"] / f.loc[ok, "inflight"]).median())))
        return 1448

    @property
    def header_bytes(self) -> int:
        h = self.summary.get("header_bytes")
        return int(h) if isinstance(h, (int, float)) else 52

    def flow_frame(self, flow: int) -> pd.DataFrame:
        """One flow's rows in time order, with the samples before the flow started and
        after it completed set to NaN (the series carries zeros or frozen values there)."""
        f = self.flows[self.flows["flow"] == flow].sort_values("time_s").reset_index(drop=True)
        info = self.summary["flows"][flow]
        start = float(info.get("start_s") or 0.0)
        t = f["time_s"].to_numpy(dtype=float)
        outside = t <= start + 1e-9 if start > 0 else np.zeros(len(f), dtype=bool)
        if info.get("completion_s") is not None:
            # Keep the sample whose interval holds the completion instant.
            outside |= t >= start + float(info["completion_s"]) + self.interval_s - 1e-9
        if outside.any():
            cols = [c for c in f.columns if c not in ("time_s", "flow")]
            f[cols] = f[cols].astype(float)
            f.loc[outside, cols] = np.nan
        return f

    def flow_moves(self, flow: int) -> Optional[pd.DataFrame]:
        """One flow's state-machine moves in time order (states.parquet), or None when the
        run has none (a kernel run, or an algorithm without state machines)."""
        if self.states is None or not len(self.states):
            return None
        moves = self.states[self.states["flow"] == flow]
        return moves.sort_values("time_s", kind="stable").reset_index(drop=True) if len(moves) else None

    def check_flow(self, flow: int) -> None:
        n = self.flow_count
        if n == 0:
            raise PlotError("--flow", f"the run in '{self.directory}' has no flows")
        if not 0 <= flow < n:
            valid = "0" if n == 1 else f"0..{n - 1}"
            raise PlotError(
                "--flow", f"flow {flow} out of range; this run has {n} flow{'s' if n != 1 else ''}: {valid}"
            )


def load_run(directory: Union[str, "os.PathLike[str]"]) -> RunData:
    """Read summary.json, flows.parquet, link.parquet (and scenario.toml, packets.parquet
    and states.parquet when present).

    Raises PlotError naming what is missing or unreadable."""
    d = Path(directory)
    if not d.exists():
        raise PlotError("RUN_DIR", f"no such directory '{d}'")
    if not d.is_dir():
        raise PlotError("RUN_DIR", f"'{d}' is not a directory")
    missing = [name for name in REQUIRED if not (d / name).is_file()]
    if missing:
        raise PlotError("RUN_DIR", f"'{d}' has no {', '.join(missing)}; expected the output of 'ccbench run --out DIR'")
    try:
        summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise PlotError("summary.json", f"cannot read '{d / 'summary.json'}': {e}") from None
    if (
        not isinstance(summary, dict)
        or not isinstance(summary.get("flows"), list)
        or not isinstance(summary.get("link"), dict)
    ):
        raise PlotError("summary.json", f"'{d / 'summary.json'}' is not a ccbench summary (no 'flows' and 'link')")
    frames = {}
    for name in ("flows.parquet", "link.parquet"):
        try:
            frames[name] = pd.read_parquet(d / name)
        except Exception as e:  # pyarrow raises several types for damaged files
            raise PlotError(
                name, f"cannot read '{d / name}': {str(e).splitlines()[0] if str(e) else type(e).__name__}"
            ) from None
    for name, cols in (("flows.parquet", ("time_s", "flow")), ("link.parquet", ("time_s",))):
        absent = [c for c in cols if c not in frames[name].columns]
        if absent:
            raise PlotError(name, f"'{d / name}' has no column {', '.join(absent)}")
    scenario: dict[str, Any] = {}
    if (d / "scenario.toml").is_file():
        try:
            scenario = tomllib.loads((d / "scenario.toml").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            scenario = {}  # only used for the title and the MSS
    packets, states, connections = (
        _optional_table(d, name) for name in ("packets.parquet", STATES_FILE, CONNECTIONS_FILE)
    )
    return RunData(d, summary, frames["flows.parquet"], frames["link.parquet"], scenario, packets, states, connections)


def _optional_table(d: Path, name: str) -> Optional[pd.DataFrame]:
    """A table a run directory holds only when the run had any rows of it."""
    if not (d / name).is_file():
        return None
    try:
        return pd.read_parquet(d / name)
    except Exception as e:  # pyarrow raises several types for damaged files
        raise PlotError(
            name, f"cannot read '{d / name}': {str(e).splitlines()[0] if str(e) else type(e).__name__}"
        ) from None


# -- human-readable numbers for titles and legends ------------------------------------


def fmt_rate(bps: Optional[float]) -> str:
    if bps is None or not math.isfinite(bps):
        return "?"
    for unit, scale in (("Tbit/s", 1e12), ("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.4g} {unit}"
    return f"{bps:.4g} bit/s"


def fmt_ms(ms: Optional[float]) -> str:
    if ms is None or not math.isfinite(ms):
        return "?"
    return f"{ms:.4g} ms"


def fmt_bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n:.0f} B"


def fmt_buffer(link: dict[str, Any]) -> str:
    bdp = link.get("bdp_bytes") or 0
    if link.get("buffer_packets") is not None:
        return f"{link['buffer_packets']} pkt"
    b = link.get("buffer_bytes")
    if b is None:
        return "?"
    if bdp:
        return f"{fmt_bytes(b)} ({b / bdp:.3g} BDP)"
    return fmt_bytes(b)


def fmt_loss(scenario: dict[str, Any]) -> Optional[str]:
    loss = scenario.get("link", {}).get("loss")
    if loss in (None, "0%", 0, 0.0, "0"):
        return None
    return f"loss {loss}"
