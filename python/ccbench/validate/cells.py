"""The cells of the validation grid: what users run, as scenarios both engines accept.

A cell is a scenario document without seed and duration, a family (the axis of the
grid it belongs to), the values that place it on the family's heatmap, and how its
goodput is judged: per flow relative to the kernel's, or, where loss or sharing makes a
flow's goodput small, as a share of the link's capacity.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

# How goodput is judged (see judge.py).
RELATIVE = "relative"  # |sim / kernel - 1| within the tolerance
OF_CAPACITY = "capacity"  # |sim - kernel| within the tolerance x the link's capacity

ALGORITHMS = ("bbr", "cubic")
LOSSES = ("0.1%", "1%", "5%", "10%", "15%", "20%", "25%", "30%")
MIX_BUFFERS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
SIZES = ("100KB", "1MB", "10MB")
# Mahimahi's LTE traces as shipped in the repository's traces/ folder.
TRACES = ("TMobile-LTE-short", "ATT-LTE-driving-2016")
TRACE_DIR = Path(__file__).resolve().parents[3] / "traces"
# The kernel's BPF selftests' congestion controls, kept in the repository as test inputs.
BPF_DIR = Path(__file__).resolve().parents[3] / "tests" / "bpf" / "linux"
SHARED_MIN_DURATION = "20s"


@dataclass(frozen=True)
class Cell:
    family: str
    name: str
    scenario_json: str  # the scenario document without seed and duration (JSON, so the cell is hashable)
    axes: tuple[tuple[str, str], ...]  # (axis, value) pairs that place it on its family's heatmap
    goodput: str = RELATIVE
    # The shortest run that judges the cell: flows that share a link need time to leave the
    # start-up transient behind (which of them exits slow start first decides the first
    # seconds, and that is the most timing-sensitive moment of a run on a real kernel).
    min_duration: Optional[str] = None
    missing: Optional[str] = None  # why the cell cannot run here (a trace file not found)
    against: str = "kernel"  # the engine whose real kernel judges the simulator

    @property
    def doc(self) -> dict[str, Any]:
        return json.loads(self.scenario_json)

    @property
    def ccas(self) -> set[str]:
        """The algorithms its TCP flows and arrivals run."""
        return {f["cca"] for f in [*self.doc["flows"], *self.doc.get("arrivals", [])] if "cca" in f}

    @property
    def exchangeable(self) -> bool:
        """Several flows, all alike (algorithm, path, start, size): which of them ends up
        ahead is chance on a real kernel, so they are compared by rank, not by index."""
        flows = [{k: v for k, v in f.items() if k != "count"} for f in self.doc["flows"]]
        n = sum(f.get("count", 1) for f in self.doc["flows"])
        return n > 1 and all(f == flows[0] for f in flows)

    @property
    def slug(self) -> str:
        return self.name.replace(" ", "-").replace("/", "-").replace("%", "pct")

    def run_length(self, duration: str) -> str:
        """The grid's ``duration``, or the cell's minimum if that is longer."""
        from ..units import parse_duration

        if self.min_duration is None or parse_duration(duration) >= parse_duration(self.min_duration):
            return duration
        return self.min_duration

    def scenario_doc(self, duration: str, seed: int, hz: Optional[int]) -> dict[str, Any]:
        doc = {"seed": seed, "duration": self.run_length(duration), **self.doc}
        if hz is not None:
            doc["tcp"] = {**doc.get("tcp", {}), "hz": hz}
        return doc

    def scenario(self, duration: str, seed: int, hz: Optional[int]) -> Any:
        from ..kernel.scenario import from_dict

        return from_dict(self.scenario_doc(duration, seed, hz))


def _cell(
    family: str,
    name: str,
    link: dict[str, Any],
    flows: list[dict[str, Any]],
    axes: dict[str, str],
    goodput: str = RELATIVE,
    min_duration: Optional[str] = None,
    missing: Optional[str] = None,
    tcp: Optional[dict[str, Any]] = None,
    against: str = "kernel",
    arrivals: Optional[list[dict[str, Any]]] = None,
) -> Cell:
    doc = {
        "link": link,
        "flows": flows,
        **({"tcp": tcp} if tcp else {}),
        **({"arrivals": arrivals} if arrivals else {}),
    }
    if min_duration is None and len(flows) + sum(f.get("count", 1) - 1 for f in flows) > 1:
        min_duration = SHARED_MIN_DURATION
    return Cell(
        family, name, json.dumps(doc, sort_keys=True), tuple(axes.items()), goodput, min_duration, missing, against
    )


def _bdp(x: float) -> str:
    return f"{x:g}bdp"


def base(
    rates: tuple[str, ...], rtts: tuple[str, ...], buffers: tuple[float, ...], ccas: tuple[str, ...] = ALGORITHMS
) -> list[Cell]:
    """One bulk flow: rate x RTT x buffer."""
    return [
        _cell(
            "base",
            f"{c} {r} {t} {_bdp(b)}",
            {"rate": r, "rtt": t, "buffer": _bdp(b)},
            [{"cca": c}],
            {"cca": c, "rate": r, "rtt": t, "buffer": _bdp(b)},
        )
        for c, r, t, b in itertools.product(ccas, rates, rtts, buffers)
    ]


def loss(losses: tuple[str, ...], ccas: tuple[str, ...] = ALGORITHMS, gilbert: bool = True) -> list[Cell]:
    """Random loss at 20 Mbit/s, 20 ms, 2 BDP; and bursty (Gilbert-Elliott) loss of about 1%."""
    link = {"rate": "20Mbit", "rtt": "20ms", "buffer": "2bdp"}
    cells = [
        _cell("loss", f"{c} loss {p}", {**link, "loss": p}, [{"cca": c}], {"cca": c, "loss": p}, OF_CAPACITY)
        for c, p in itertools.product(ccas, losses)
    ]
    if gilbert:
        # Bad runs of 4 packets on average, entered once in 400: about 1% loss in bursts.
        model = {"type": "gilbert-elliott", "p": "0.25%", "r": "25%"}
        cells += [
            _cell(
                "loss",
                f"{c} gilbert-elliott 1%",
                {**link, "loss_model": model},
                [{"cca": c}],
                {"cca": c, "loss": "GE 1%"},
                OF_CAPACITY,
            )
            for c in ccas
        ]
    return cells


def no_sack(losses: tuple[str, ...], ccas: tuple[str, ...] = ALGORITHMS) -> list[Cell]:
    """Random loss as in :func:`loss`, with SACK off on both ends (NewReno recovery)."""
    link = {"rate": "20Mbit", "rtt": "20ms", "buffer": "2bdp"}
    return [
        _cell(
            "loss",
            f"{c} loss {p} no-sack",
            {**link, "loss": p},
            [{"cca": c}],
            {"cca": c, "loss": f"{p} no SACK"},
            OF_CAPACITY,
            tcp={"sack": False},
        )
        for c, p in itertools.product(ccas, losses)
    ]


def mix(buffers: tuple[float, ...]) -> list[Cell]:
    """BBR and Cubic sharing 20 Mbit/s, 40 ms at each buffer depth."""
    return [
        _cell(
            "mix",
            f"bbr+cubic 20Mbit 40ms {_bdp(b)}",
            {"rate": "20Mbit", "rtt": "40ms", "buffer": _bdp(b)},
            [{"cca": "bbr"}, {"cca": "cubic"}],
            {"buffer": _bdp(b), "pair": "bbr+cubic"},
            OF_CAPACITY,
        )
        for b in buffers
    ]


def fairness(counts: tuple[int, ...], ccas: tuple[str, ...] = ALGORITHMS) -> list[Cell]:
    """N flows of one algorithm, 20 Mbit/s, 20 ms, 1 BDP: fairness and the standing queue."""
    return [
        _cell(
            "fairness",
            f"{n}x{c} 20Mbit 20ms 1bdp",
            {"rate": "20Mbit", "rtt": "20ms", "buffer": "1bdp"},
            [{"cca": c, "count": n}],
            {"cca": c, "flows": str(n)},
            OF_CAPACITY,
        )
        for c, n in itertools.product(ccas, counts)
    ]


def rtt_unfairness(ccas: tuple[str, ...] = ALGORITHMS) -> list[Cell]:
    """Two flows with base RTTs 10 and 50 ms (20 ms more access delay each way)."""
    return [
        _cell(
            "rtt-unfairness",
            f"{c} 10ms+50ms 20Mbit 1bdp",
            {"rate": "20Mbit", "rtt": "10ms", "buffer": "1bdp"},
            [{"cca": c}, {"cca": c, "access_delay": "20ms"}],
            {"cca": c, "rtts": "10/50ms"},
            OF_CAPACITY,
        )
        for c in ccas
    ]


def staggered(ccas: tuple[str, ...] = ALGORITHMS) -> list[Cell]:
    """Three flows joining at 0, 5 and 10 s of a run of at least 20 s."""
    return [
        _cell(
            "staggered",
            f"{c} starts 0/5/10s 20Mbit 20ms 1bdp",
            {"rate": "20Mbit", "rtt": "20ms", "buffer": "1bdp"},
            [{"cca": c}, {"cca": c, "start": "5s"}, {"cca": c, "start": "10s"}],
            {"cca": c, "starts": "0/5/10s"},
            OF_CAPACITY,
            min_duration="20s",
        )
        for c in ccas
    ]


def traces(names: tuple[str, ...], ccas: tuple[str, ...] = ALGORITHMS, trace_dir: Path = TRACE_DIR) -> list[Cell]:
    """Trace-driven links, 40 ms, 250 packets of buffer: the downlink and the uplink alone,
    and the downlink with the uplink carrying the ACKs."""
    cells = []
    for name, c in itertools.product(names, ccas):
        down, up = trace_dir / f"{name}.down", trace_dir / f"{name}.up"
        missing = None if down.exists() and up.exists() else f"trace files not found in {trace_dir}"
        common = {"rtt": "40ms", "buffer": "250pkt"}
        for label, link in (
            ("down", {"trace": str(down)}),
            ("up", {"trace": str(up)}),
            ("down+ack up", {"trace": str(down), "ack_trace": str(up)}),
        ):
            cells.append(
                _cell(
                    "trace",
                    f"{c} {name} {label}",
                    {**common, **link},
                    [{"cca": c}],
                    {"cca": c, "trace": f"{name} {label}"},
                    OF_CAPACITY,
                    missing=missing,
                )
            )
    return cells


def aqm(ccas: tuple[str, ...] = ALGORITHMS) -> list[Cell]:
    """CoDel and FQ-CoDel at 20 Mbit/s, 40 ms, one flow each; and FQ-CoDel under a BBR+Cubic mix."""
    link = {"rate": "20Mbit", "rtt": "40ms"}
    cells = [
        _cell("aqm", f"{c} {q} 20Mbit 40ms", {**link, "aqm": q}, [{"cca": c}], {"cca": c, "aqm": q})
        for q, c in itertools.product(("codel", "fq_codel"), ccas)
    ]
    cells.append(
        _cell(
            "aqm",
            "bbr+cubic fq_codel 20Mbit 40ms",
            {**link, "aqm": "fq_codel"},
            [{"cca": "bbr"}, {"cca": "cubic"}],
            {"cca": "bbr+cubic", "aqm": "fq_codel"},
            OF_CAPACITY,
        )
    )
    return cells


def ecn() -> list[Cell]:
    """Classic ECN with Cubic: marks from CoDel, and from a queue threshold."""
    link = {"rate": "20Mbit", "rtt": "40ms", "buffer": "2bdp"}
    codel = {"rate": "20Mbit", "rtt": "40ms", "aqm": "codel", "aqm_params": {"ecn": True}}
    return [
        _cell(
            "ecn",
            "cubic ecn codel 20Mbit 40ms",
            codel,
            [{"cca": "cubic", "ecn": "classic"}],
            {"cca": "cubic", "marking": "codel"},
        ),
        _cell(
            "ecn",
            "cubic ecn threshold 20pkt 20Mbit 40ms",
            {**link, "ecn_threshold": "20pkt"},
            [{"cca": "cubic", "ecn": "classic"}],
            {"cca": "cubic", "marking": "20pkt"},
        ),
    ]


def rwnd(ccas: tuple[str, ...] = ALGORITHMS) -> list[Cell]:
    """A receive window that binds (64 KB at 50 Mbit/s, 40 ms: a third of the BDP), and
    receive-buffer autotuning, also where the ACKs of its growing window decide HyStart
    (Cubic at 10 Mbit/s, 200 ms)."""
    link = {"rate": "50Mbit", "rtt": "40ms", "buffer": "1bdp"}
    cells = []
    for c in ccas:
        cells.append(
            _cell("rwnd", f"{c} rwnd 64KB 50Mbit 40ms", link, [{"cca": c, "rwnd": "64KB"}], {"cca": c, "rwnd": "64KB"})
        )
        cells.append(
            _cell(
                "rwnd",
                f"{c} rwnd auto 50Mbit 40ms",
                link,
                [{"cca": c, "rwnd_autotune": True}],
                {"cca": c, "rwnd": "auto"},
            )
        )
    if "cubic" in ccas:
        slow = {"rate": "10Mbit", "rtt": "200ms", "buffer": "2bdp"}
        cells.append(
            _cell(
                "rwnd",
                "cubic rwnd auto 10Mbit 200ms",
                slow,
                [{"cca": "cubic", "rwnd_autotune": True}],
                {"cca": "cubic", "rwnd": "auto"},
            )
        )
    return cells


def sndbuf(ccas: tuple[str, ...] = ALGORITHMS) -> list[Cell]:
    """A send buffer that binds: tcp_wmem's ceiling at 256 KB on a 100 Mbit/s, 100 ms
    path (a BDP of 1.25 MB), where autotuning stops long before cwnd does."""
    return _buffer_at_256k("wmem", ["4KiB", "16KiB", "256KiB"], {}, ccas)


def rmem(ccas: tuple[str, ...] = ALGORITHMS) -> list[Cell]:
    """A receive buffer that binds: tcp_rmem's ceiling at 256 KB for an autotuned
    receiver on a 100 Mbit/s, 100 ms path (a BDP of 1.25 MB), where the window stops
    at what the buffer advertises, long before rwnd (6 MiB) or cwnd."""
    return _buffer_at_256k("rmem", ["4KiB", "128KiB", "256KiB"], {"rwnd_autotune": True}, ccas)


def _buffer_at_256k(key: str, sizes: list[str], flow: dict[str, Any], ccas: tuple[str, ...]) -> list[Cell]:
    """One flow of each algorithm whose `tcp.<key>` caps a buffer at 256 KiB, on a
    100 Mbit/s, 100 ms path; the family is named after the buffer (sndbuf, rmem)."""
    family = {"wmem": "sndbuf", "rmem": "rmem"}[key]
    link = {"rate": "100Mbit", "rtt": "100ms", "buffer": "1bdp"}
    return [
        _cell(
            family,
            f"{c} {key} 256KB 100Mbit 100ms",
            link,
            [{"cca": c, **flow}],
            {"cca": c, key: "256KB"},
            tcp={key: sizes},
        )
        for c in ccas
    ]


def sized(sizes: tuple[str, ...], ccas: tuple[str, ...] = ALGORITHMS) -> list[Cell]:
    """One download of each size at 20 Mbit/s, 40 ms, 1 BDP: completion time (the run
    ends when it completes; 30 s at most)."""
    return [
        _cell(
            "sized",
            f"{c} {s} 20Mbit 40ms",
            {"rate": "20Mbit", "rtt": "40ms", "buffer": "1bdp"},
            [{"cca": c, "size": s}],
            {"cca": c, "size": s},
            min_duration="30s",
        )
        for c, s in itertools.product(ccas, sizes)
    ]


def repeated(ccas: tuple[str, ...] = ALGORITHMS) -> list[Cell]:
    """Five 1-MB downloads in a row, 200 ms apart."""
    return [
        _cell(
            "sized",
            f"{c} 5x1MB repeated 20Mbit 40ms",
            {"rate": "20Mbit", "rtt": "40ms", "buffer": "1bdp"},
            [{"cca": c, "size": "1MB", "repeat": 5, "pause": "200ms"}],
            {"cca": c, "size": "5x1MB"},
            min_duration="30s",
        )
        for c in ccas
    ]


def connect(ccas: tuple[str, ...] = ALGORITHMS) -> list[Cell]:
    """A hundred downloads in a row, 100 ms apart, each on a connection opened when it is
    due, with and without Fast Open: opened by the receiver, which sends a request the
    sender answers (a web download), for 20 KB; opened by the sender, which writes at
    once, for 20 KB (past the initial window either way) and, for Cubic, 1 KB (which
    fits in the SYN)."""
    link = {"rate": "20Mbit", "rtt": "40ms", "buffer": "1bdp"}
    transfers = (
        [(c, "20KB", "receiver") for c in ccas]
        + [(c, "20KB", "sender") for c in ccas]
        + [("cubic", "1KB", "sender")] * ("cubic" in ccas)
    )
    return [
        _cell(
            "connect",
            f"{c} 100x{size} {opener}-opened{' fastopen' if fastopen else ''} 20Mbit 40ms",
            link,
            [{"cca": c, "size": size, "repeat": 100, "pause": "100ms", "connect": opener, "fastopen": fastopen}],
            {"cca": c, "transfer": f"{size} {opener}{' TFO' if fastopen else ''}"},
            min_duration="30s",
        )
        for (c, size, opener), fastopen in itertools.product(transfers, (False, True))
    ]


def mtu(ccas: tuple[str, ...] = ALGORITHMS) -> list[Cell]:
    """A path MTU of 1400 bytes below hosts of 1500 (MSS 1448) at 20 Mbit/s, 40 ms, 1 BDP:
    with the ICMP, path-MTU discovery lowers the MSS at the first window (RFC 1191); as a
    black hole with tcp.mtu_probing = 1, nothing arrives until the retransmit timer has
    fired for about 3 s (`tcp_write_timeout` -> `tcp_mtu_probing`), then the MSS drops to
    tcp.base_mss and probing climbs back towards 1348 (RFC 4821)."""
    link = {"rate": "20Mbit", "rtt": "40ms", "buffer": "1bdp", "mtu": 1400}
    paths = (
        ("icmp", {}, {}, "1400 ICMP"),
        ("black-hole probing", {"mtu_black_hole": True}, {"mtu_probing": 1}, "1400 black hole, probing"),
    )
    return [
        _cell(
            "mtu",
            f"{c} mtu 1400 {label} 20Mbit 40ms",
            {**link, **hole},
            [{"cca": c}],
            {"cca": c, "path": axis},
            min_duration="20s",
            tcp=tcp or None,
        )
        for (label, hole, tcp, axis), c in itertools.product(paths, ccas)
    ]


def traffic(ccas: tuple[str, ...] = ALGORITHMS, loads: tuple[str, ...] = ("50%", "80%")) -> list[Cell]:
    """Traffic as networks carry it: a download beside a saturating upload on a 20/5
    Mbit/s home link, 40 ms, a BDP of buffer each way (the download's ACKs wait in the
    uplink's queue behind the upload); a BBR and a Cubic flow sharing 20 Mbit/s, 40 ms,
    1 BDP with 5 Mbit/s of constant-rate UDP; and Poisson web-search arrivals at each
    load of 100 Mbit/s, 20 ms, 1 BDP, one algorithm at a time (60 s: some 220 and 360
    connections), judged by median and p99 FCT."""
    home = {"rate": "20Mbit", "rtt": "40ms", "buffer": "1bdp", "reverse": {"rate": "5Mbit", "buffer": "1bdp"}}
    updown = [
        _cell(
            "traffic",
            f"{c} download + upload 20/5Mbit 40ms",
            home,
            [{"cca": c}, {"cca": c, "direction": "up"}],
            {"cca": c, "traffic": "download + upload"},
            min_duration="30s",
        )
        for c in ccas
    ]
    udp = _cell(
        "traffic",
        "bbr+cubic + 5Mbit UDP 20Mbit 40ms",
        {"rate": "20Mbit", "rtt": "40ms", "buffer": "1bdp"},
        [{"cca": "bbr"}, {"cca": "cubic"}, {"kind": "udp", "rate": "5Mbit"}],
        {"cca": "bbr+cubic", "traffic": "+ 5Mbit UDP"},
        OF_CAPACITY,
        min_duration="30s",
    )
    arrivals = [
        _cell(
            "traffic",
            f"{c} web-search arrivals {load} 100Mbit 20ms",
            {"rate": "100Mbit", "rtt": "20ms", "buffer": "1bdp"},
            [],
            {"cca": c, "traffic": f"web search {load}"},
            min_duration="60s",
            arrivals=[{"cca": c, "load": load, "sizes": "web-search"}],
        )
        for c, load in itertools.product(ccas, loads)
    ]
    return [*updown, udp, *arrivals]


# Linux's other congestion controls, each judged against its own module: the VM engine's
# guest kernel has every one of them, this host's kernel may not.
OTHER_ALGORITHMS = (
    "bic",
    "cdg",
    "dctcp",
    "highspeed",
    "htcp",
    "hybla",
    "illinois",
    "lp",
    "nv",
    "scalable",
    "vegas",
    "veno",
    "westwood",
    "yeah",
)
# Where each runs alone: a home link, a lossy fast one, a long (satellite-like) path.
ALONE = (
    {"rate": "20Mbit", "rtt": "40ms", "buffer": "1bdp"},
    {"rate": "100Mbit", "rtt": "10ms", "buffer": "0.5bdp", "loss": "1%"},
    {"rate": "10Mbit", "rtt": "200ms", "buffer": "2bdp"},
)
AGAINST_CUBIC = {"rate": "20Mbit", "rtt": "40ms", "buffer": "2bdp"}
# The references: a guest kernel with an unlimited vCPU (up to 100 Mbit/s, where a TCG
# guest is not the bottleneck), and this host's kernel where it has the module.
REFERENCES = ("vm", "kernel")


def _point(link: dict[str, Any]) -> str:
    loss = f" loss {link['loss']}" if "loss" in link else ""
    return f"{link['rate']} {link['rtt']} {link['buffer']}{loss}"


def algorithms(
    ccas: tuple[str, ...] = OTHER_ALGORITHMS,
    alone: tuple[dict[str, Any], ...] = ALONE,
    against_cubic: bool = True,
    references: tuple[str, ...] = REFERENCES,
) -> list[Cell]:
    """Each algorithm alone at each point of ``alone``, and beside one Cubic flow, judged
    against each reference engine."""
    cells = []
    for ref, c in itertools.product(references, ccas):
        for link in alone:
            name = f"{c} {_point(link)} ({ref})"
            axes = {"cca": c, "point": _point(link), "against": ref}
            goodput = OF_CAPACITY if "loss" in link else RELATIVE
            cells.append(_cell("algorithms", name, link, [{"cca": c}], axes, goodput, against=ref))
        if against_cubic:
            name = f"{c}+cubic {_point(AGAINST_CUBIC)} ({ref})"
            axes = {"cca": c, "point": "against cubic", "against": ref}
            flows = [{"cca": c}, {"cca": "cubic"}]
            cells.append(_cell("algorithms", name, AGAINST_CUBIC, flows, axes, OF_CAPACITY, against=ref))
    return cells


def bpf(bpf_dir: Path = BPF_DIR) -> list[Cell]:
    """The kernel's own BPF congestion controls (``bpf_cubic.c``, ``bpf_dctcp.c``) as
    objects on both engines: the same object in the simulator's interpreter and
    registered with the kernel. bpf_cubic alone, under loss, and beside the built-in
    Cubic; bpf_dctcp on a link that marks ECN above 20 packets."""
    import shutil

    cubic, dctcp = f"bpf:{bpf_dir / 'bpf_cubic.c'}", f"bpf:{bpf_dir / 'bpf_dctcp.c'}:dctcp"
    missing = None
    if not (bpf_dir / "bpf_cubic.c").is_file():
        missing = f"{bpf_dir} is not here (it is in the repository, not in an installed package)"
    elif shutil.which("clang") is None:
        missing = "compiling the objects needs clang (apt-get install clang llvm libbpf-dev bpftool)"
    link = {"rate": "20Mbit", "rtt": "20ms", "buffer": "2bdp"}

    def cell(
        name: str, link: dict[str, Any], flows: list[dict[str, Any]], axes: dict[str, str], goodput: str = RELATIVE
    ) -> Cell:
        return _cell("bpf", name, link, flows, axes, goodput, missing=missing)

    return [
        cell("bpf_cubic 20Mbit 20ms 2bdp", link, [{"cca": cubic}], {"object": "bpf_cubic", "point": "alone"}),
        cell(
            "bpf_cubic loss 1%",
            {**link, "loss": "1%"},
            [{"cca": cubic}],
            {"object": "bpf_cubic", "point": "loss 1%"},
            OF_CAPACITY,
        ),
        cell(
            "bpf_cubic+cubic 20Mbit 20ms 1bdp",
            {**link, "buffer": "1bdp"},
            [{"cca": cubic}, {"cca": "cubic"}],
            {"object": "bpf_cubic", "point": "beside cubic"},
            OF_CAPACITY,
        ),
        cell(
            "bpf_dctcp ecn 20pkt 20Mbit 20ms",
            {**link, "ecn_threshold": "20pkt"},
            [{"cca": dctcp}],
            {"object": "bpf_dctcp", "point": "ECN above 20 packets"},
        ),
    ]


def algorithm_grid(quick: bool) -> list[Cell]:
    """The ``algorithms`` family: quick, each alone at the first point against the VM."""
    if quick:
        return algorithms(alone=ALONE[:1], against_cubic=False, references=("vm",))
    return algorithms()


def quick_grid() -> list[Cell]:
    """A cell or two of every family: about four minutes on two cores (cells of flows
    that share the link run 20 s)."""
    return [
        *base(("20Mbit",), ("20ms",), (0.5, 2.0)),
        *loss(("1%", "10%"), gilbert=False),
        *no_sack(("1%",), ("cubic",)),
        *mix((1.0, 8.0)),
        *fairness((2,), ("cubic",)),
        *rtt_unfairness(("cubic",)),
        *traces(("TMobile-LTE-short",), ("cubic",))[:1],
        *aqm(("cubic",))[1:],
        *sized(("1MB",), ("cubic",)),
        *traffic(("cubic",))[:1],
    ]


def full_grid() -> list[Cell]:
    return [
        *base(("10Mbit", "100Mbit"), ("5ms", "40ms", "200ms"), (0.5, 2.0, 8.0)),
        *base(("500Mbit",), ("20ms",), (2.0,)),
        *loss(LOSSES),
        *no_sack(("1%", "5%")),
        *mix(MIX_BUFFERS),
        *fairness((2, 4)),
        *rtt_unfairness(),
        *staggered(),
        *traces(TRACES),
        *aqm(),
        *ecn(),
        *rwnd(),
        *sndbuf(),
        *rmem(),
        *sized(SIZES),
        *repeated(),
        *connect(),
        *mtu(),
        *traffic(),
        *bpf(),
    ]


FAMILIES = (
    "base",
    "loss",
    "mix",
    "fairness",
    "rtt-unfairness",
    "staggered",
    "trace",
    "aqm",
    "ecn",
    "rwnd",
    "sndbuf",
    "rmem",
    "sized",
    "connect",
    "mtu",
    "traffic",
    "bpf",
    "algorithms",
)
