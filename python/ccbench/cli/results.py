"""``ccbench results``: the runs in the results store, listed or exported as CSV."""

from __future__ import annotations

import sys
from typing import Any, Optional

import click

from .. import engines
from ..errors import ScenarioError


@click.command()
@click.option("--store", "store_dir", metavar="DIR", help="Results store (default ./ccbench-results).")
@click.option("--sweep", "sweep_name", metavar="NAME", help="Only the runs of this sweep.")
@click.option(
    "--where",
    "wheres",
    multiple=True,
    metavar="KEY=VALUE",
    help="Only runs whose scenario has this value, e.g. link.rate=50Mbit (repeatable).",
)
@click.option("--cca", metavar="NAME", help="Only runs with a flow of this algorithm.")
@click.option("--engine", type=click.Choice(engines.names()), help="Only runs of this engine.")
@click.option("--code-version", metavar="VERSION", help="Only runs of this code version ('current': this build).")
@click.option("--csv", "csv_path", metavar="FILE", help="Write one row per flow to FILE ('-': stdout).")
@click.option("--limit", type=int, default=50, show_default=True, metavar="N", help="Rows to list (0: all).")
def results(
    store_dir: Optional[str],
    sweep_name: Optional[str],
    wheres: tuple[str, ...],
    cca: Optional[str],
    engine: Optional[str],
    code_version: Optional[str],
    csv_path: Optional[str],
    limit: int,
) -> None:
    """List the runs in the results store, or export them as CSV (one row per flow)."""
    from ..store import open_store
    from ..store.query import Where, flow_rows, select

    where = [Where.parse(w) for w in wheres]
    if limit < 0:
        raise ScenarioError("--limit", f"must be 0 (all) or more, got {limit}")
    store = open_store(store_dir, create=False)
    if sweep_name is not None and sweep_name not in store.sweeps():
        known = ", ".join(store.sweeps()) or "none"
        raise ScenarioError("--sweep", f"no sweep named {sweep_name!r} in {store.root}; sweeps: {known}")
    if code_version == "current":
        code_version = engines.get(engine or engines.DEFAULT).code_version()
    records = select(store.records(sweep_name, code_version=code_version), where=where, cca=cca, engine=engine)
    if csv_path is not None:
        frame = flow_rows(records)
        if csv_path == "-":
            frame.to_csv(sys.stdout, index=False)
        else:
            try:
                frame.to_csv(csv_path, index=False)
            except OSError as e:
                raise ScenarioError("--csv", f"cannot write {csv_path!r}: {e.strerror or e}") from None
            click.echo(f"wrote {csv_path}: {len(frame)} row(s), the flows of {len(records)} run(s)", err=True)
        return
    _print_runs(records, limit, store)


def _print_runs(records: list[Any], limit: int, store: Any) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from .. import directions, traffic
    from ..store.query import point_keys

    swept = point_keys(records)
    shown = records if limit == 0 else records[:limit]
    # The uplink's columns only when a run listed has one.
    uplinks = any(directions.uplink(r.summary) is not None for r in shown)
    # The UDP flows' and the arrivals' columns only when a run listed has them.
    udp = any(traffic.udp_flows(r.summary) for r in shown)
    arrivals = any(traffic.groups(r.summary) for r in shown)
    numeric = ("rep", "util %", "drops", "up util %", "up drops", "Jain", "UDP loss %", "FCT p99 ms", "slowdown p99")
    t = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False, show_edge=False)
    for col in ("run", "sweep", *swept, "rep", "seed", "engine", "flows", "goodput Mbit/s", "util %", "drops"):
        t.add_column(col, no_wrap=True, justify="right" if col in numeric else "left")
    for col in ("up util %", "up drops") if uplinks else ():
        t.add_column(col, no_wrap=True, justify="right")
    t.add_column("Jain", no_wrap=True, justify="right")
    for col in ("UDP loss %",) if udp else ():
        t.add_column(col, no_wrap=True, justify="right")
    for col in ("FCT p99 ms", "slowdown p99") if arrivals else ():
        t.add_column(col, no_wrap=True, justify="right")
    for r in shown:
        flows = r.summary.get("flows", [])
        goodput = "/".join(f"{f['goodput_bps'] / 1e6:.2f}" for f in flows if f.get("goodput_bps") is not None)
        jain = r.summary.get("jain_index") if flows else None  # no TCP flows to be fair between
        ways = dict(directions.links(r.summary))
        t.add_row(
            r.run_id[:10],
            r.sweep or "–",
            *(str(r.point.get(k, "–")) for k in swept),
            str(r.repetition),
            str(r.seed),
            r.engine,
            _algorithms(flows, traffic.groups(r.summary)),
            goodput,
            *_link_cells(ways[directions.DOWN]),
            *(_link_cells(ways.get(directions.UP)) if uplinks else ()),
            "–" if jain is None else f"{jain:.3f}",
            *(_udp_cells(r.summary) if udp else ()),
            *(_arrival_cells(r.summary) if arrivals else ()),
        )
    # Piped output is not cut to a terminal's width.
    console = Console() if sys.stdout.isatty() else Console(width=1000)
    if shown:
        console.print(t)
    more = f"; listing the first {len(shown)} (--limit 0 lists all)" if len(shown) < len(records) else ""
    sweeps = ", ".join(store.sweeps()) or "none"
    console.print(f"{len(records)} run(s){more}. Store {store.root}; sweeps: {sweeps}", highlight=False)


def _algorithms(flows: list[Any], groups: list[Any]) -> str:
    """The flows' algorithms, then the arrivals' (``cubic,bbr,cubic (arrivals)``)."""
    from .. import directions

    def up(entry: Any) -> str:
        return " (up)" if directions.direction(entry) == directions.UP else ""

    shown = [f"{f.get('cca')}{up(f)}" for f in flows]
    shown += [f"{g.get('cca')} (arrivals{', up' if up(g) else ''})" for g in groups]
    return ",".join(shown)


def _udp_cells(summary: Any) -> tuple[str]:
    """Each UDP flow's loss in percent, /-separated; a dash for a run without."""
    from .. import traffic

    losses = [u.get("loss") for u in traffic.udp_flows(summary)]
    return ("/".join(f"{100 * x:.2f}" for x in losses if isinstance(x, (int, float))) or "–",)


def _arrival_cells(summary: Any) -> tuple[str, str]:
    """The arrivals' p99 FCT and slowdown, each group's, /-separated."""
    from .. import traffic

    def cell(name: str) -> str:
        values = [traffic.figure(g, name) for g in traffic.groups(summary)]
        return "/".join("–" if x != x else f"{x:.2f}" for x in values) or "–"

    return cell("fct_p99_ms"), cell("slowdown_p99")


def _link_cells(link: Any) -> tuple[str, str]:
    """A bottleneck's utilisation (%) and drops; dashes for a run without it."""
    link = link or {}
    util = link.get("utilization")
    return ("–" if util is None else f"{100 * util:.1f}", str(link.get("drops", "–")))
