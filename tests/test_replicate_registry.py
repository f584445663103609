"""The replicate command's registry of studies and the shared comparison table."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from rich.console import Console

from ccbench.errors import ScenarioError
from ccbench.replicate import get, studies, study
from ccbench.replicate.compare import Finding, print_comparison, save_comparison

from conftest import run_cli


def test_cao2019_is_registered_with_a_summary():
    known = studies()
    assert "cao2019" in known
    assert known["cao2019"].summary.startswith("Cao et al.")
    assert get("cao2019").run is known["cao2019"].run


def test_a_new_study_registers_with_the_decorator():
    @study("example-study", summary="an example")
    def run(quick, out, workers, store, console):  # pragma: no cover - never run
        raise AssertionError

    try:
        assert get("example-study").summary == "an example"
        with pytest.raises(ValueError, match="registered twice"):
            study("example-study", summary="again")(lambda *a: None)
    finally:
        from ccbench import replicate

        replicate._STUDIES.pop("example-study")


def test_unknown_study_lists_the_available_ones():
    with pytest.raises(ScenarioError) as e:
        get("nope")
    assert e.value.field == "NAME" and "available: " in e.value.message and "cao2019" in e.value.message
    done = run_cli("replicate", "nope")
    assert done.returncode == 2
    assert done.stderr.startswith("error: NAME: unknown study 'nope'; available: ")
    assert done.stderr.count("\n") == 1 and done.stdout == ""


def test_replicate_without_a_name_lists_the_studies():
    done = run_cli("replicate")
    assert done.returncode == 0
    assert done.stdout.startswith("cao2019 ")


def test_comparison_is_printed_and_saved_as_csv_and_markdown(tmp_path: Path):
    rows = [Finding("a point", "the study's figure", "ccbench's | figure", "a note"), Finding("another", "x", "y")]
    buffer = io.StringIO()
    print_comparison(rows, Console(file=buffer, width=160), "Title")
    text = buffer.getvalue()
    assert "Title" in text and "point / finding" in text and "ccbench's | figure" in text
    paths = save_comparison(rows, tmp_path)
    assert [p.name for p in paths] == ["comparison.csv", "comparison.md"]
    read = list(csv.DictReader(io.StringIO(paths[0].read_text())))
    assert read[0] == {
        "point": "a point",
        "study": "the study's figure",
        "ccbench": "ccbench's | figure",
        "note": "a note",
    }
    md = paths[1].read_text().splitlines()
    assert md[0] == "| point / finding | study | ccbench | note |"
    assert md[2] == "| a point | the study's figure | ccbench's \\| figure | a note |"


def test_a_study_runs_only_on_the_engines_it_registered():
    assert set(get("elmenhorst2026").runs) == {"sim", "vm"} and set(get("cao2019").runs) == {"sim"}
    with pytest.raises(ScenarioError) as e:
        get("cao2019").on("vm")
    assert e.value.field == "--engine" and e.value.message == "study 'cao2019' runs on sim, not 'vm'"
    done = run_cli("replicate", "vargas2022", "--engine", "kernel")
    assert done.returncode == 2 and done.stderr == "error: --engine: study 'vargas2022' runs on sim, not 'kernel'\n"
    assert "(also --engine vm)" in run_cli("replicate").stdout
