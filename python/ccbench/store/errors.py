"""Problems with a results store, reported like every other bad input."""

from __future__ import annotations

from ..errors import ScenarioError


class StoreError(ScenarioError):
    """The store cannot be used: missing, locked, or of another schema. ``field`` is the
    store's path (or ``--store``)."""
