"""docs/input-ranges.md is generated from the checks; it must not fall behind them."""

from __future__ import annotations

from pathlib import Path

from ccbench.input_ranges import render

DOC = Path(__file__).resolve().parent.parent / "docs" / "input-ranges.md"


def test_the_committed_table_is_the_generated_one() -> None:
    assert DOC.read_text() == render(), (
        "docs/input-ranges.md is stale; regenerate it with "
        "'python -m ccbench.input_ranges --write docs/input-ranges.md'"
    )


def test_every_core_field_is_in_the_table() -> None:
    from ccbench import _core

    text = DOC.read_text()
    for field, _ in _core.input_ranges():
        assert f"`{field}`" in text or field == "interval", field
