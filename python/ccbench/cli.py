"""The ``ccbench`` command.

Every bad input ends the same way: one line ``error: <field>: <what is allowed>`` on
stderr, exit status 2, nothing written.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, NoReturn, Optional, Sequence, TypeVar

import click

from . import _core
from .errors import ScenarioError

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
T = TypeVar("T")


def _version_message() -> str:
    from . import __version__

    return f"ccbench {__version__} (simulator {_core.version()})"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(_version_message())
        ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
def cli() -> None:
    """ccbench: a TCP congestion-control laboratory."""


@cli.command()
@click.argument("scenario", required=False, metavar="[SCENARIO.toml]")
@click.option("--cca", metavar="NAME[,NAME...]", help="Algorithm(s); one flow of each (default cubic).")
@click.option("--flows", type=int, metavar="N", help="N flows of each algorithm (default 1).")
@click.option("--rate", metavar="RATE", help="Bottleneck rate, e.g. 100Mbit, 1Gbit (default 100Mbit).")
@click.option("--rtt", metavar="TIME", help="Base RTT of the bottleneck path, e.g. 40ms (default 40ms).")
@click.option("--buffer", metavar="SIZE", help="Bottleneck buffer: 1bdp, 256KB, 100pkt (default 1bdp).")
@click.option("--loss", metavar="LOSS", help="Random loss at the bottleneck: 0.5% or 0.005 (default 0).")
@click.option("--duration", metavar="TIME", help="Simulated time, e.g. 30s (default 10s).")
@click.option("--seed", type=int, metavar="N", help="Random seed (default 1).")
@click.option("--interval", metavar="TIME", help="Time-series interval, at least 1ms (default 100ms).")
@click.option("--size", metavar="SIZE", help="Bytes per flow, e.g. 20MB (default: bulk until the end).")
@click.option("--pacing", type=click.Choice(["on", "off"]), help="Force pacing on or off (default: per algorithm).")
@click.option("--out", metavar="DIR", help="Write summary.json, flows.parquet, link.parquet, scenario.toml here.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary JSON instead of tables.")
def run(scenario: Optional[str], out: Optional[str], as_json: bool, **flags: Any) -> None:
    """Run a scenario file, or a scenario built from flags.

    Flags given with a scenario file override its values; --cca then replaces its flows.
    """
    from .engines.sim import run as run_engine
    from .result import FILES, summary_bytes
    from .scenario import Scenario, read_toml

    if flags["pacing"] is not None:
        flags["pacing"] = flags["pacing"] == "on"
    base = read_toml(scenario) if scenario is not None else None
    sc = Scenario.from_flags(base=base, **flags)
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ScenarioError("--out", f"{out!r} exists and is not a directory")

    result = _with_status(lambda: run_engine(sc), quiet=as_json)

    if as_json:
        sys.stdout.buffer.write(summary_bytes(result.summary))
        sys.stdout.flush()
    else:
        from .report import render

        render(result.summary)
    if out is not None:
        try:
            result.save(out)
        except OSError as e:
            raise ScenarioError("--out", f"cannot write to {out!r}: {e.strerror or e}") from None
        # With --json, stdout carries only the JSON.
        for line in (
            f"wrote {out}: {', '.join(FILES)}",
            f"  flows.parquet columns: {', '.join(map(str, result.flows.columns)) or '(none)'}",
            f"  link.parquet columns: {', '.join(map(str, result.link.columns)) or '(none)'}",
        ):
            click.echo(line, err=as_json)


def _with_status(work: Callable[[], T], quiet: bool) -> T:
    """Show a spinner on an interactive stderr while the simulator runs."""
    if quiet or not sys.stderr.isatty():
        return work()
    from rich.console import Console

    with Console(stderr=True).status("simulating…"):
        return work()


def _fail(field: str, message: str, status: int = EXIT_BAD_INPUT) -> NoReturn:
    line = f"error: {field}: {message}".replace("\n", " ")
    print(line, file=sys.stderr)
    sys.exit(status)


def _usage_error(e: click.UsageError) -> tuple[str, str]:
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
        return "command", f"{e.message.rstrip('.')}; allowed: {', '.join(sorted(cli.commands))}"
    return "usage", e.message.rstrip(".") + "; see 'ccbench --help'"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Console entry point."""
    args = list(sys.argv[1:] if argv is None else argv) or ["--help"]
    try:
        rv = cli.main(args=args, prog_name="ccbench", standalone_mode=False)
    except ScenarioError as e:
        _fail(e.field, e.message)
    except click.UsageError as e:
        _fail(*_usage_error(e))
    except (click.Abort, KeyboardInterrupt):
        _fail("interrupted", "stopped before the run finished", EXIT_INTERRUPTED)
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
