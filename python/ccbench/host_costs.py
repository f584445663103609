"""The sender-host costs file that ``ccbench calibrate-host`` writes: a ``[host.cost]``
table and ``host.tx_completion``, which ``--cpu-costs FILE`` lays over a scenario."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Union

from .errors import ScenarioError

FIELD = "--cpu-costs"


def read(path: Union[str, Path]) -> dict[str, Any]:
    """What the file says of the sender host: its ``cost`` table and, if given,
    ``tx_completion`` (the ``[host]`` keys, in TOML form)."""
    from .scenario import read_toml

    host = read_toml(path).get("host", {})
    costs = host.get("cost") if isinstance(host, dict) else None
    if not isinstance(costs, dict) or not costs:
        raise ScenarioError(FIELD, f"{path}: no [host.cost] table (write one with 'ccbench calibrate-host')")
    return {k: v for k, v in host.items() if k in ("cost", "tx_completion")}


# What measured costs go over when the scenario names no preset: a calibration measures a
# host, so none of an assumed preset's costs (the vm preset's, implied by a reserved share)
# may fill what it left out.
BASE_PRESET = "server"


def laid_over(doc: dict[str, Any], measured: dict[str, Any]) -> dict[str, Any]:
    """The scenario document ``doc`` (TOML form) with the ``measured`` host entries over
    its own: the file's costs replace the scenario's cost by cost, over the preset the
    scenario names (else ``BASE_PRESET``)."""
    doc = dict(doc)
    host = dict(doc.get("host") or {})
    host.setdefault("cpu", BASE_PRESET)
    host.update({k: v for k, v in measured.items() if k != "cost"})
    host["cost"] = {**host.get("cost", {}), **measured["cost"]}
    doc["host"] = host
    return doc
