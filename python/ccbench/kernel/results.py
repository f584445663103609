"""A kernel run's reports turned into the simulator's summary schema and time series.

Sources: the receiver agent (goodput, completion), the sender agent (``TCP_INFO`` and
BBR's ``TCP_CC_INFO``), each listing every flow in the scenario's order whichever way it
goes, and the emulator (the link's totals, already as ``Measured`` takes them, ACK link
or reverse link included; its samples under the simulator's column names; per-flow
throughput and drops at the bottleneck the flow's data crosses, and RTT samples). What the kernel does not
expose is ``None`` in the summary and NaN in the series: the cumulative count of
lost-marked segments (``lost``; ``TCP_INFO`` has only the current ``lost_out``) and the
number of simulator events (``events``). ``params`` are the kernel module's parameters
as /sys shows them, which apply to every flow of that algorithm on the machine; for a
BPF algorithm (``cca = "bpf:PATH"``) the object's globals the flow set, and its ``bpf``
says what ran: the object's digest and the name it was registered under. UDP flows and
the connections of arrivals are measured as ``traffic_results`` says.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

from .. import _core
from .host import HostFacts, module_params
from .plan import FlowPlan, Plan
from .session import RawRun
from .tcpinfo import TCP_INFINITE_SSTHRESH, cc_info_kind
from .traffic_results import connections_measured, connections_table, traffic_notes, udp_extras, udp_measured

NAN = float("nan")
# What each TCP_CC_INFO structure gives, under the simulator's names for the same state
# (``internals()`` of cc/bbr, cc/vegas.rs, cc/dctcp.rs), so that both engines' series compare.
CC_COLUMNS: dict[str, dict[str, Callable[[dict[str, Any]], float]]] = {
    "bbr": {
        "cc_bw_bps": lambda i: i["bw_bytes_per_s"] * 8.0,
        "cc_min_rtt_ms": lambda i: i["min_rtt_us"] / 1e3,
        "cc_pacing_gain": lambda i: i["pacing_gain"],
        "cc_cwnd_gain": lambda i: i["cwnd_gain"],
    },
    "vegas": {
        "cc_doing_vegas_now": lambda i: float(i["enabled"]),
        "cc_cnt_rtt": lambda i: float(i["rttcnt"]),
        "cc_base_rtt_us": lambda i: float(i["rtt_us"]),
        "cc_min_rtt_us": lambda i: float(i["minrtt_us"]),
    },
    # Without ECN negotiated DCTCP runs as dctcp-reno, whose structure says enabled = 0.
    "dctcp": {"cc_dctcp_alpha": lambda i: i["alpha"] / 1024.0 if i["enabled"] else NAN},
}


def _undos(tcp_ext: dict[str, int], flows: int) -> dict[str, Optional[int]]:
    """Undone reductions and spurious timeouts: the kernel counts them per namespace
    (TcpExt), not per socket, so they belong to a flow only when it is the run's only
    one; otherwise None."""
    if flows != 1 or not tcp_ext:
        return {"undos": None, "spurious_rtos": None}
    undos = sum(tcp_ext.get(k, 0) for k in ("TCPFullUndo", "TCPPartialUndo", "TCPDSACKUndo", "TCPLossUndo"))
    return {"undos": undos, "spurious_rtos": tcp_ext.get("TCPSpuriousRTOs", 0)}


def _flow_row(info: Optional[dict[str, Any]]) -> dict[str, float]:
    """Time-series columns from one TCP_INFO sample (none without one: the table writes NaN)."""
    if not info:
        return {}
    inflight = info["unacked"] - info["sacked"] - info["lost"] + info["retrans"]
    min_rtt = info.get("min_rtt", 0xFFFFFFFF)
    return {
        "cwnd": float(info["snd_cwnd"]),
        "ssthresh": NAN if info["snd_ssthresh"] >= TCP_INFINITE_SSTHRESH else float(info["snd_ssthresh"]),
        "inflight": float(inflight),
        "inflight_bytes": float(inflight * info["snd_mss"]),
        # tcpi_snd_wnd (Linux 5.4+): the peer's window as the sender sees it.
        "rwnd_bytes": float(info["snd_wnd"]) if "snd_wnd" in info else NAN,
        "pacing_rate_bps": float(info["pacing_rate"]) * 8.0,
        "delivery_rate_bps": float(info.get("delivery_rate", 0)) * 8.0,
        "srtt_ms": info["rtt"] / 1e3,
        "min_rtt_ms": NAN if min_rtt == 0xFFFFFFFF else min_rtt / 1e3,
        "retransmits": float(info["total_retrans"]),
        "ca_state": float(info["ca_state"]),
    }


def _downloads(
    received: list[dict[str, Any]], sent: list[dict[str, Any]], emu_flow: dict[str, Any], size_bytes: Optional[int]
) -> list[dict[str, Any]]:
    """A repeating flow's downloads as measured: bytes and completion from the receiver,
    start and counters from each connection's last TCP_INFO, RTT from the emulator's
    samples of that connection (by the sender's port). ``dupacks`` is not in TCP_INFO."""
    rtt_by_port = {c["port"]: c for c in emu_flow.get("connections", [])}
    out = []
    for k, conn in enumerate(sent):
        got = received[k] if k < len(received) else {"bytes": 0, "completed_ns": None}
        rtt = rtt_by_port.get(conn["port"], {"rtt_samples": 0})  # no samples: the summary writes zeros
        out.append(
            {
                # Where the receiver opens the connections, it knows when it asked.
                "start_ns": got.get("start_ns", conn["start_ns"]),
                "completed_ns": got["completed_ns"],
                "delivered_bytes": min(got["bytes"], size_bytes or got["bytes"]),
                **{k: rtt[k] for k in ("rtt_ms", "rtt_samples") if k in rtt},
                "retransmits": conn["final"]["total_retrans"],
                "dupacks": None,
                "rto_count": conn["final"].get("total_rto"),
            }
        )
    return out


def _cc_row(info: Optional[dict[str, Any]]) -> dict[str, float]:
    """The columns of the ``TCP_CC_INFO`` structure a sample carries (NaN where the
    kernel gave none)."""
    row: dict[str, float] = {}
    for kind, columns in CC_COLUMNS.items():
        if info is not None and kind in info:
            got = info[kind]
            row.update({name: NAN if got is None else value(got) for name, value in columns.items()})
    return row


def _flow_measured(
    f: FlowPlan, i: int, raw: RawRun, undos: dict[str, Optional[int]], path_mtu: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Flow ``i`` as ``Measured`` takes it, and the kernel-only figures the summary adds."""
    rcv, snd, e = raw.receiver, raw.sender, raw.emulator["flows"][i]
    delivered = rcv["bytes"][i] if f.size_bytes is None else min(rcv["bytes"][i], f.size_bytes)
    info = snd["final"][i]
    downloads = None
    if f.repeat > 1:
        downloads = _downloads(rcv["downloads"][i], snd["downloads"][i], e, f.size_bytes)
        delivered = sum(d["delivered_bytes"] for d in downloads)
        # The flow's totals are its connections' (as the simulator adds its closed ones).
        info = dict(
            info,
            **{
                k: sum(c["final"].get(k) or 0 for c in snd["downloads"][i])
                for k in ("total_retrans", "bytes_sent", "total_rto", "rwnd_limited", "sndbuf_limited")
            },
        )
    measured = {
        "params": module_params(f.cca) if raw.bpf is None or f.index not in raw.bpf.flows else bpf_params(f, raw),
        "paced": f.paced,
        "completed_ns": rcv["completed_ns"][i],
        "delivered_bytes": delivered,
        "bottleneck_bytes": e["bottleneck_bytes"],
        "sent_bytes": info.get("bytes_sent"),
        "retransmits": info["total_retrans"],
        "lost": None,
        "dropped": e["dropped"],
        "rto_count": info.get("total_rto"),
        **undos,
        "rtt_ms": e["rtt_ms"],
        "rtt_samples": e["rtt_samples"],
        "final_cwnd": info["snd_cwnd"],
        # Time limited by the receive window (TCP_INFO, as the simulator reports it).
        "rwnd_limited_ms": info.get("rwnd_limited", 0) / 1e3,
        # and by the send buffer.
        "sndbuf_limited_ms": info.get("sndbuf_limited", 0) / 1e3,
        "downloads": downloads,
    }
    # Kernel-only diagnostics: the emulator's RTT samples.
    extra = {"rtt_samples": e["rtt_samples"]}
    if path_mtu:
        # The path MTU's drops and ICMPs, and the sender's MSS and path MTU at the end
        # (tcpi_snd_mss, tcpi_pmtu).
        extra.update(
            mtu_dropped=e.get("mtu_dropped"),
            icmp_sent=e.get("icmp_sent"),
            final_snd_mss=info.get("snd_mss"),
            final_pmtu=info.get("pmtu"),
        )
    if raw.bpf is not None:
        # What ran, for every flow of a run with a BPF algorithm (None for the others).
        reported = (snd.get("cca") or [None] * (i + 1))[i]
        extra["bpf"] = raw.bpf.record(f.index, reported) if f.index in raw.bpf.flows else None
    return measured, extra


def bpf_params(f: FlowPlan, raw: RawRun) -> dict[str, object]:
    """The globals a BPF algorithm's flow ran with: those it set in its copy."""
    assert raw.bpf is not None
    copy, _ = raw.bpf.flows[f.index]
    return dict(raw.bpf.copies[copy].params)


def assemble(
    plan: Plan, raw: RawRun, host: HostFacts, engine: str
) -> tuple[dict[str, Any], dict[str, list[Any]], dict[str, list[Any]], dict[str, list[Any]]]:
    """(summary, flows table, link table, connections table) in the simulator's schema:
    the connections of arrivals one row each, as the simulator's; the summary built
    from what the agents and the emulator measured by the simulator's own code
    (``_core.summarize``), with the kernel's own facts added; ``engine`` names the
    engine that ran it. The emulator's link totals are ``Measured``'s as they are."""
    sc = plan.scenario
    end_ns = _end_ns(plan, raw)
    undos = _undos(raw.sender.get("tcp_ext") or {}, len(plan.flows))
    path_mtu = sc.link.mtu_bytes is not None
    per_flow = [_flow_measured(f, i, raw, undos, path_mtu) for i, f in enumerate(plan.flows)]
    flows, extras = [m for m, _ in per_flow], [x for _, x in per_flow]
    measured = {"engine": engine, "end_ns": end_ns, "flows": flows, "link": raw.emulator["link"]}
    core = plan.core or sc.to_core()
    if plan.traffic:
        measured["udp"] = udp_measured(plan.traffic, raw.sender, raw.receiver, raw.emulator)
        measured["connections"] = connections_measured(core, plan.traffic, raw.sender, raw.receiver, end_ns)
    summary: dict[str, Any] = json.loads(_core.summarize(json.dumps(core), json.dumps(measured)))
    for row, extra in zip(summary["flows"], extras):
        row.update(extra)
    if plan.traffic.udp:
        for row, extra in zip(summary["udp"], udp_extras(raw.sender, raw.receiver, raw.emulator)):
            row.update(extra)
    summary.update(
        {
            "scenario_hash": sc.scenario_hash,
            "kernel": host.kernel,
            "kernel_hz": host.kernel_hz,
            "available_congestion_control": host.available_congestion_control,
            "notes": plan.notes
            + raw.notes
            + (raw.bpf.notes if raw.bpf else [])
            + _fallback_notes(plan, raw)
            + traffic_notes(plan.traffic, raw.sender, raw.receiver),
            "emulator": raw.emulator["check"],
        }
    )
    duration_s = end_ns / 1e9
    connections = connections_table(measured.get("connections", []))
    return summary, _flows_table(plan, raw, duration_s), _link_table(raw, duration_s), connections


def _end_ns(plan: Plan, raw: RawRun) -> int:
    """When the run ended: its duration, or when the last of its sized flows completed
    if every flow is sized (arrivals come until the end, as in the simulator)."""
    completed = raw.receiver["completed_ns"]
    sized = all(f.size_bytes is not None for f in plan.flows) and all(c is not None for c in completed)
    if plan.flows and sized and not plan.traffic.arrivals:
        return min(plan.duration_ns, max(completed))
    return plan.duration_ns


def _fallback_notes(plan: Plan, raw: RawRun) -> list[str]:
    """A DCTCP flow whose connection did not negotiate ECN ran as Reno (``dctcp_init``
    falls back to ``dctcp_reno``): Linux accepts an ECT SYN's ECN only where the listener's
    algorithm needs ECN too (``tcp_ecn_create_request``): the receiver's listener runs
    DCTCP where its kernel has it (session.py, ``_receiver_cca``)."""
    final = raw.sender.get("final") or []
    fell_back = [
        i
        for i, f in enumerate(plan.flows)
        if f.cca == "dctcp" and i < len(final) and (final[i].get("dctcp") or {}).get("enabled") == 0
    ]
    if not fell_back:
        return []
    return [
        f"flows {', '.join(map(str, fell_back))}: DCTCP ran as Reno without ECN (dctcp-reno): the receiver's "
        "kernel answers an ECN-capable SYN only when its own algorithm needs ECN, and its listener could not "
        "run DCTCP (a kernel without the module); the simulator's DCTCP receiver does"
    ]


def _flows_table(plan: Plan, raw: RawRun, duration_s: float) -> dict[str, list[Any]]:
    """One row per flow per sample. Each source ends with a closing sample at the end of
    the run; the regular samples before it are matched by index."""
    rcv, snd, series = raw.receiver["samples"], raw.sender["samples"], raw.emulator["series"]
    n_emu = len(series["link"]["time_s"])
    regular = max(0, min(len(rcv), len(snd), n_emu) - 1)
    picks = [(k, k, k) for k in range(regular)]
    if rcv and snd and n_emu:
        picks.append((len(rcv) - 1, len(snd) - 1, n_emu - 1))
    kinds = {cc_info_kind(f.cca) for f in plan.flows}
    columns = _core.series_columns()["flows"] + [c for k in CC_COLUMNS if k in kinds for c in CC_COLUMNS[k]]
    table: dict[str, list[Any]] = {c: [] for c in columns}

    prev_t, prev_bytes = 0, [0] * len(plan.flows)
    for row, (kr, ks, ke) in enumerate(picks):
        nominal_ns, actual_ns, counts = rcv[kr]
        time_s = duration_s if row == len(picks) - 1 and row >= regular else nominal_ns / 1e9
        dt = max(actual_ns - prev_t, 1) / 1e9
        infos = snd[ks][2]
        for i in range(len(plan.flows)):
            values: dict[str, Any] = {
                "time_s": time_s,
                "flow": i,
                "goodput_bps": (counts[i] - prev_bytes[i]) * 8.0 / dt,
                "throughput_bps": float(series["flow_throughput_bps"][i][ke]),
                **_flow_row(infos[i]),
            }
            values.update(_cc_row(infos[i]))
            # What the kernel does not expose (`lost`, all of TCP_INFO before a sample) is NaN.
            for name, column in table.items():
                column.append(values.get(name, NAN))
        prev_t, prev_bytes = actual_ns, counts
    return table


def _link_table(raw: RawRun, duration_s: float) -> dict[str, list[Any]]:
    """The emulator's samples before the end of the run, and its closing sample. (When
    sized flows end a run early, the emulator closes its window a moment later, when told
    to quit; that last sample is labelled with the run's end.)"""
    s = raw.emulator["series"]["link"]
    # With a reverse bottleneck, its columns (``up_*``) follow, as the simulator writes them.
    columns = _core.series_columns()["link"] + [c for c in s if c.startswith("up_")]
    n = len(s["time_s"])
    keep = [k for k in range(n - 1) if s["time_s"][k] < duration_s - 1e-9] + ([n - 1] if n else [])
    # JSON carries the emulator's NaN (utilization of an interval with no capacity: a
    # trace's outage) as null.
    table = {c: [NAN if s[c][k] is None else float(s[c][k]) for k in keep] for c in columns}
    if keep:
        table["time_s"][-1] = duration_s
    return table
