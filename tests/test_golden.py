"""Every golden case gives the outputs stored in tests/golden/expected.json, byte for
byte (see tests/golden.py for the cases and how to regenerate them)."""

from __future__ import annotations

import json

import pytest

import golden

EXPECTED = json.loads(golden.EXPECTED.read_text())


def test_every_case_has_a_stored_fingerprint() -> None:
    assert sorted(EXPECTED) == sorted(golden.cases())


@pytest.mark.parametrize("name", sorted(golden.cases()))
def test_outputs_are_unchanged(name: str) -> None:
    assert golden.fingerprint(golden.cases()[name]) == EXPECTED[name]
