"""How a command ends. Every bad input the same way: one line ``error: <field>: <what is
allowed>`` on stderr, exit status 2, nothing written; an internal fault in one line too,
unless ``--debug`` asks for the traceback."""

from __future__ import annotations

import os
import sys
from typing import NoReturn, Optional, Sequence

import click

from .. import _core
from ..errors import InternalError, ScenarioError

EXIT_INTERNAL = 1
EXIT_RUN_FAILED = 1  # the kernel or the VM failed under a run
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130

# The real stacks' failures, one line each under these fields: (module, class, field).
# Their modules are imported only by the commands that use them, not at start-up.
STACK_ERRORS = (("ccbench.kernel.host", "KernelRunError", "kernel"), ("ccbench.vm.qemu", "VmError", "vm"))

_debug = False


def set_debug(on: bool) -> None:
    global _debug
    _debug = bool(on)
    _core.set_debug(_debug)


def fail(field: str, message: str, status: int = EXIT_BAD_INPUT, at_once: bool = False) -> NoReturn:
    # One line, whatever line breaks the message carries (a file's text may hold any).
    line = " ".join(f"error: {field}: {message}".splitlines())
    print(line, file=sys.stderr)
    if at_once:
        # Ctrl-C in the command itself: every `finally` on the way here has run; the
        # interpreter's exit handlers (joining a process pool whose workers were just
        # terminated) once hung past 30 s after this line was printed.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)


def usage_error(e: click.UsageError, group: click.Group) -> tuple[str, str]:
    """(field, message) for click's own parse errors."""
    if isinstance(e, click.NoSuchOption):
        hint = f" (did you mean {', '.join(e.possibilities)}?)" if e.possibilities else ""
        return e.option_name, f"no such option{hint}; see 'ccbench run --help'"
    if isinstance(e, click.BadOptionUsage):
        if "requires an argument" in e.message:
            return e.option_name, "requires a value; see 'ccbench run --help'"
        return e.option_name, e.message.rstrip(".")
    param = getattr(e, "param", None)
    if param is not None:
        opts = getattr(param, "opts", None)
        field = opts[0] if opts else (param.human_readable_name or "argument")
        return field, e.message.rstrip(".")
    if e.message.startswith("No such command"):
        return "command", f"{e.message.rstrip('.')}; allowed: {', '.join(sorted(group.commands))}"
    return "usage", e.message.rstrip(".") + "; see 'ccbench --help'"


def run(group: click.Group, argv: Optional[Sequence[str]]) -> int:
    """Run the command line ``argv`` (default: this process's) and return its exit
    status; every failure ends in :func:`fail`."""
    args = list(sys.argv[1:] if argv is None else argv) or ["--help"]
    try:
        rv = group.main(args=args, prog_name="ccbench", standalone_mode=False)
    except ScenarioError as e:
        fail(e.field, e.message)
    except click.UsageError as e:
        fail(*usage_error(e, group))
    except (click.Abort, KeyboardInterrupt):
        fail("interrupted", "stopped before the run finished", EXIT_INTERRUPTED, at_once=argv is None)
    except click.exceptions.Exit as e:
        return e.exit_code
    except InternalError as e:
        if _debug:
            raise
        fail(
            e.where,
            f"internal fault: {e.message}; please report it (ccbench --debug ... shows the backtrace)",
            EXIT_INTERNAL,
        )
    except Exception as e:  # a real stack's failure, or an internal fault: one line unless debugging
        if (field := _stack_failure(e)) is not None:
            fail(field, str(e), EXIT_RUN_FAILED)
        if _debug:
            raise
        fail(
            "internal",
            f"{type(e).__name__}: {e}; please report it (ccbench --debug ... shows the traceback)",
            EXIT_INTERNAL,
        )
    return rv if isinstance(rv, int) else 0


def _stack_failure(e: Exception) -> Optional[str]:
    """The field of a kernel or VM engine failure; an error whose module was never
    imported cannot have been raised."""
    for module, name, field in STACK_ERRORS:
        where = sys.modules.get(module)
        if where is not None and isinstance(e, getattr(where, name)):
            return field
    return None
