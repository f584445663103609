"""The files of one run, as bytes: made where the run happened (a worker process or a
Dask worker on another host) and written into the store by the coordinating process."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any, Mapping, Optional

import pandas as pd

from ..result import CONNECTIONS_FILE, STATES_FILE, summary_bytes

if TYPE_CHECKING:
    from ..result import Result
    from ..scenario import Scenario


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def run_files(
    summary: Mapping[str, Any],
    scenario: "Scenario",
    flows: pd.DataFrame,
    link: pd.DataFrame,
    states: Optional[pd.DataFrame] = None,
    connections: Optional[pd.DataFrame] = None,
) -> dict[str, bytes]:
    """What ``Result.save`` writes, so that ``ccbench plot`` reads a stored run too."""
    files = {
        "summary.json": summary_bytes(summary),
        "scenario.toml": scenario.effective_toml().encode("utf-8"),
        "flows.parquet": parquet_bytes(flows),
        "link.parquet": parquet_bytes(link),
    }
    for name, table in ((STATES_FILE, states), (CONNECTIONS_FILE, connections)):
        if table is not None and len(table):
            files[name] = parquet_bytes(table)
    return files


def result_files(result: "Result") -> dict[str, bytes]:
    return run_files(result.summary, result.scenario, result.flows, result.link, result.states, result.connections)
