"""What a run produces, and how it is written to disk.

pandas and numpy are imported only when a table is first used as a DataFrame (or
written): a run that only prints its summary starts and ends without them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence, Union

if TYPE_CHECKING:
    import pandas as pd

    from .scenario import Scenario

FILES = ("summary.json", "flows.parquet", "link.parquet", "scenario.toml")
# The algorithms' state-machine moves (BBR's mode and PROBE_BW phase) as they happened:
# written when a run has any (the simulator's BBR flows).
STATES_FILE = "states.parquet"
# One row per connection of the arrivals (docs/traffic.md): written when a run has any.
CONNECTIONS_FILE = "connections.parquet"
CONNECTION_COLUMNS = ("group", "arrival_s", "size_bytes", "fct_ms", "ideal_fct_ms", "retransmits")

CoreTable = Mapping[str, Sequence[Union[int, float, str]]]


class ColumnTable:
    """A column table from the core, kept as the core's lists until a DataFrame is
    asked for (:meth:`frame`)."""

    __slots__ = ("columns",)

    def __init__(self, columns: CoreTable) -> None:
        self.columns = columns

    def frame(self) -> "pd.DataFrame":
        """The table as a DataFrame: integer columns become uint32 (the core's counters
        and ids), text columns stay text, everything else float64."""
        import numpy as np
        import pandas as pd

        columns: dict[str, Any] = {}
        for name, values in self.columns.items():
            if len(values) and all(isinstance(v, int) for v in values):
                columns[name] = np.asarray(values, dtype=np.uint32)
            elif len(values) and isinstance(values[0], str):
                columns[name] = pd.Series(values, dtype=object)
            else:
                columns[name] = np.asarray(values, dtype=np.float64)
        return pd.DataFrame(columns)


def table_frame(table: CoreTable) -> ColumnTable:
    """A column table from the core, to become a DataFrame when first used (see
    :class:`ColumnTable`)."""
    return ColumnTable(table)


def summary_bytes(summary: Mapping[str, Any]) -> bytes:
    """The summary as written to summary.json: indented, sorted keys, one final newline."""
    text = json.dumps(summary, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")


def save_tables(
    directory: Union[str, os.PathLike[str]],
    summary: Mapping[str, Any],
    flows: "pd.DataFrame",
    link: "pd.DataFrame",
    states: Optional["pd.DataFrame"] = None,
    connections: Optional["pd.DataFrame"] = None,
) -> list[Path]:
    """Write summary.json, flows.parquet and link.parquet, the files every run directory
    holds, into ``directory`` (created if needed), and states.parquet and
    connections.parquet when ``states`` and ``connections`` have rows. Returns the paths
    written."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in FILES[:3]]
    paths[0].write_bytes(summary_bytes(summary))
    flows.to_parquet(paths[1], index=False)
    link.to_parquet(paths[2], index=False)
    for name, table in ((STATES_FILE, states), (CONNECTIONS_FILE, connections)):
        if table is not None and len(table):
            paths.append(out / name)
            table.to_parquet(paths[-1], index=False)
    return paths


def _as_frame(table: Union["pd.DataFrame", ColumnTable]) -> "pd.DataFrame":
    return table.frame() if isinstance(table, ColumnTable) else table


class Result:
    """A finished run: the summary (see docs/output.md, "Summary schema"), per-flow and
    bottleneck time series, the algorithms' state-machine moves, the arrivals'
    connections, and the scenario that produced them.

    ``flows``, ``link``, ``states`` and ``connections`` are DataFrames; the engines hand
    them over as :class:`ColumnTable` and each becomes a DataFrame the first time it is
    read.
    """

    __slots__ = ("summary", "scenario", "_flows", "_link", "_states", "_connections")

    def __init__(
        self,
        summary: dict[str, Any],
        flows: Union["pd.DataFrame", ColumnTable],
        link: Union["pd.DataFrame", ColumnTable],
        scenario: "Scenario",
        states: Union["pd.DataFrame", ColumnTable, None] = None,
        connections: Union["pd.DataFrame", ColumnTable, None] = None,
    ) -> None:
        self.summary = summary
        self.scenario = scenario
        self._flows = flows
        self._link = link
        self._states = (
            states if states is not None else ColumnTable({"time_s": [], "flow": [], "machine": [], "state": []})
        )
        self._connections = (
            connections if connections is not None else ColumnTable({name: [] for name in CONNECTION_COLUMNS})
        )

    @property
    def flows(self) -> "pd.DataFrame":
        """Per-flow time series, one row per flow and interval."""
        self._flows = _as_frame(self._flows)
        return self._flows

    @flows.setter
    def flows(self, value: "pd.DataFrame") -> None:
        self._flows = value

    @property
    def link(self) -> "pd.DataFrame":
        """Bottleneck time series, one row per interval."""
        self._link = _as_frame(self._link)
        return self._link

    @link.setter
    def link(self, value: "pd.DataFrame") -> None:
        self._link = value

    @property
    def states(self) -> "pd.DataFrame":
        """The moves of the algorithms' state machines, one row each: ``time_s``, ``flow``,
        ``machine`` (``mode``; ``phase``, BBRv2/v3's PROBE_BW phase) and the ``state``
        entered. Empty where an engine cannot see them (the kernel's)."""
        self._states = _as_frame(self._states)
        return self._states

    @property
    def connections(self) -> "pd.DataFrame":
        """The arrivals' connections, one row each: ``group`` (its ``[[arrivals]]``
        entry), ``arrival_s``, ``size_bytes``, ``fct_ms``, ``ideal_fct_ms`` (the same
        transfer alone on the empty path) and ``retransmits``; FCTs are NaN for a
        connection unfinished at the end. Empty without arrivals."""
        self._connections = _as_frame(self._connections)
        return self._connections

    def save(self, directory: Union[str, os.PathLike[str]]) -> list[Path]:
        """Write summary.json, flows.parquet, link.parquet, scenario.toml and (when the
        run has any) states.parquet and connections.parquet into ``directory`` (created
        if needed). Returns the paths written."""
        paths = save_tables(directory, self.summary, self.flows, self.link, self.states, self.connections)
        paths.append(Path(directory) / FILES[3])
        paths[-1].write_text(self.scenario.effective_toml(), encoding="utf-8")
        return paths
