"""An internal fault (a simulator panic, a bug in the front end) is one line and exit
status 1; ``ccbench --debug`` shows the traceback instead."""

from __future__ import annotations

import pytest

from ccbench import _core
from ccbench.cli import main
from ccbench.errors import InternalError


def _panicking_run(*_args: object, **_kwargs: object) -> None:
    raise InternalError("simulator", "attempt to divide by zero at crates/ccbench-sim/src/tcp/rtt.rs:67")


def test_a_simulator_panic_is_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_core, "run", _panicking_run)
    with pytest.raises(SystemExit) as e:
        main(["run", "--duration", "1s"])
    assert e.value.code == 1
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("error: simulator: internal fault: attempt to divide by zero at ")
    assert "Traceback" not in captured.err and captured.out == ""


def test_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_core, "run", _panicking_run)
    try:
        with pytest.raises(InternalError):
            main(["--debug", "run", "--duration", "1s"])
    finally:
        _core.set_debug(False)


def test_any_other_fault_is_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(_core, "run", broken)
    with pytest.raises(SystemExit) as e:
        main(["run", "--duration", "1s"])
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert (
        err == "error: internal: ZeroDivisionError: division by zero; please report it "
        "(ccbench --debug ... shows the traceback)\n"
    )


@pytest.mark.parametrize(
    ("module", "error", "field"), [("kernel.host", "KernelRunError", "kernel"), ("vm.qemu", "VmError", "vm")]
)
def test_a_real_stacks_failure_is_one_line_under_its_name_even_with_debug(
    module: str, error: str, field: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib

    failure = getattr(importlib.import_module(f"ccbench.{module}"), error)

    def failing(*_args: object, **_kwargs: object) -> None:
        raise failure("the agent did not start")

    monkeypatch.setattr(_core, "run", failing)
    try:
        with pytest.raises(SystemExit) as e:
            main(["--debug", "run", "--duration", "1s"])
    finally:
        _core.set_debug(False)
    assert e.value.code == 1
    assert capsys.readouterr().err == f"error: {field}: the agent did not start\n"


def test_the_binding_raises_internal_error_not_a_panic() -> None:
    # Validation refuses what would panic; a scenario the core cannot parse is a
    # ScenarioError, never a PanicException.
    from ccbench.errors import ScenarioError

    with pytest.raises(ScenarioError):
        _core.run('{"seed": 1}')
