"""What a run produces, and how it is written to disk."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence, Union

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from .scenario import Scenario

FILES = ("summary.json", "flows.parquet", "link.parquet", "scenario.toml")


def table_frame(table: Mapping[str, Sequence[Union[int, float]]]) -> pd.DataFrame:
    """A column table from the core as a DataFrame: integer columns become uint32
    (the core's counters and ids), everything else float64."""
    columns: dict[str, np.ndarray] = {}
    for name, values in table.items():
        if len(values) and all(isinstance(v, int) for v in values):
            columns[name] = np.asarray(values, dtype=np.uint32)
        else:
            columns[name] = np.asarray(values, dtype=np.float64)
    return pd.DataFrame(columns)


def summary_bytes(summary: Mapping[str, Any]) -> bytes:
    """The summary as written to summary.json: indented, sorted keys, one final newline."""
    text = json.dumps(summary, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")


def save_tables(directory: Union[str, os.PathLike[str]], summary: Mapping[str, Any], flows: pd.DataFrame,
                link: pd.DataFrame) -> list[Path]:
    """Write summary.json, flows.parquet and link.parquet, the files every run directory
    holds, into ``directory`` (created if needed). Returns the paths written."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in FILES[:3]]
    paths[0].write_bytes(summary_bytes(summary))
    flows.to_parquet(paths[1], index=False)
    link.to_parquet(paths[2], index=False)
    return paths


@dataclass
class Result:
    """A finished run: the summary (see the README's "Summary schema"), per-flow and
    bottleneck time series, and the scenario that produced them."""

    summary: dict[str, Any]
    flows: pd.DataFrame
    link: pd.DataFrame
    scenario: "Scenario"

    def save(self, directory: Union[str, os.PathLike[str]]) -> list[Path]:
        """Write summary.json, flows.parquet, link.parquet and scenario.toml into
        ``directory`` (created if needed). Returns the paths written."""
        paths = save_tables(directory, self.summary, self.flows, self.link)
        paths.append(Path(directory) / FILES[3])
        paths[3].write_text(self.scenario.effective_toml(), encoding="utf-8")
        return paths
