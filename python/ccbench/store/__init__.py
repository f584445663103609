"""The results store: every complete run of a sweep (or of ``Store.add``), one DuckDB
row each, with its time series in a directory per run.

>>> from ccbench.store import open_store
>>> store = open_store("ccbench-results")           # doctest: +SKIP
>>> [r.point for r in store.records(sweep="buffers")]  # doctest: +SKIP
"""

from __future__ import annotations

from .errors import StoreError
from .records import RunRecord, point_key, run_id_for
from .store import DEFAULT_STORE, Membership, Store, open_store

__all__ = [
    "DEFAULT_STORE",
    "Membership",
    "RunRecord",
    "Store",
    "StoreError",
    "open_store",
    "point_key",
    "run_id_for",
]
