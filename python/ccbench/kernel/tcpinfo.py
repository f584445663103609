"""``struct tcp_info`` (``TCP_INFO``) and the algorithms' ``TCP_CC_INFO`` structures (BBR's
``tcp_bbr_info``, Vegas's ``tcpvegas_info``, DCTCP's ``tcp_dctcp_info``).

Standard library only: the traffic agent imports this module inside the network
namespaces without the rest of the package. Fields follow ``include/uapi/linux/tcp.h``
in order; the kernel returns as much of the structure as it knows, so fields newer than
the running kernel are simply absent from the result.
"""

from __future__ import annotations

import socket
import struct
from typing import Any, Callable, Optional

TCP_INFO = getattr(socket, "TCP_INFO", 11)
TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
TCP_CC_INFO = 26
TCP_WINDOW_CLAMP = getattr(socket, "TCP_WINDOW_CLAMP", 10)
SO_MAX_PACING_RATE = 47

# tcp_info in declaration order: (name, struct code). Two bytes of bitfields are kept
# raw and split below.
_FIELDS: tuple[tuple[str, str], ...] = (
    ("state", "B"),
    ("ca_state", "B"),
    ("retransmits", "B"),
    ("probes", "B"),
    ("backoff", "B"),
    ("options", "B"),
    ("_wscale", "B"),
    ("_flags", "B"),
    ("rto", "I"),
    ("ato", "I"),
    ("snd_mss", "I"),
    ("rcv_mss", "I"),
    ("unacked", "I"),
    ("sacked", "I"),
    ("lost", "I"),
    ("retrans", "I"),
    ("fackets", "I"),
    ("last_data_sent", "I"),
    ("last_ack_sent", "I"),
    ("last_data_recv", "I"),
    ("last_ack_recv", "I"),
    ("pmtu", "I"),
    ("rcv_ssthresh", "I"),
    ("rtt", "I"),
    ("rttvar", "I"),
    ("snd_ssthresh", "I"),
    ("snd_cwnd", "I"),
    ("advmss", "I"),
    ("reordering", "I"),
    ("rcv_rtt", "I"),
    ("rcv_space", "I"),
    ("total_retrans", "I"),
    ("pacing_rate", "Q"),
    ("max_pacing_rate", "Q"),
    ("bytes_acked", "Q"),
    ("bytes_received", "Q"),
    ("segs_out", "I"),
    ("segs_in", "I"),
    ("notsent_bytes", "I"),
    ("min_rtt", "I"),
    ("data_segs_in", "I"),
    ("data_segs_out", "I"),
    ("delivery_rate", "Q"),
    ("busy_time", "Q"),
    ("rwnd_limited", "Q"),
    ("sndbuf_limited", "Q"),
    ("delivered", "I"),
    ("delivered_ce", "I"),
    ("bytes_sent", "Q"),
    ("bytes_retrans", "Q"),
    ("dsack_dups", "I"),
    ("reord_seen", "I"),
    ("rcv_ooopack", "I"),
    ("snd_wnd", "I"),
    ("rcv_wnd", "I"),
    ("rehash", "I"),
    ("total_rto", "H"),
    ("total_rto_recoveries", "H"),
    ("total_rto_time", "I"),
)

# Byte offset where each field ends, with the C (native) alignment.
_ENDS: list[int] = [struct.calcsize("@" + "".join(code for _, code in _FIELDS[: i + 1])) for i in range(len(_FIELDS))]
TCP_INFO_MAX = _ENDS[-1]

TCP_INFINITE_SSTHRESH = 0x7FFFFFFF
CA_STATES = ("open", "disorder", "cwr", "recovery", "loss")


def parse_tcp_info(raw: bytes) -> dict[str, int]:
    """The fields that fit in ``raw`` (as returned by getsockopt), by name."""
    n = 0
    while n < len(_FIELDS) and _ENDS[n] <= len(raw):
        n += 1
    fmt = "@" + "".join(code for _, code in _FIELDS[:n])
    values = struct.unpack_from(fmt, raw)
    info = {name: v for (name, _), v in zip(_FIELDS[:n], values)}
    if "_wscale" in info:
        w = info.pop("_wscale")
        info["snd_wscale"], info["rcv_wscale"] = w & 0x0F, w >> 4
    if "_flags" in info:
        f = info.pop("_flags")
        info["delivery_rate_app_limited"] = f & 1
    return info


def tcp_info(sock: socket.socket) -> dict[str, int]:
    return parse_tcp_info(sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, TCP_INFO_MAX))


def parse_bbr_info(raw: bytes) -> Optional[dict[str, float]]:
    """``struct tcp_bbr_info``: bandwidth estimate (bytes/s), min RTT (µs), gains (x256)."""
    if len(raw) < 20:
        return None
    bw_lo, bw_hi, min_rtt_us, pacing_gain, cwnd_gain = struct.unpack_from("@5I", raw)
    return {
        "bw_bytes_per_s": float(bw_lo | bw_hi << 32),
        "min_rtt_us": float(min_rtt_us),
        "pacing_gain": pacing_gain / 256.0,
        "cwnd_gain": cwnd_gain / 256.0,
    }


def parse_vegas_info(raw: bytes) -> Optional[dict[str, int]]:
    """``struct tcpvegas_info`` (Vegas's and Illinois's): Vegas reports its base RTT as
    ``rtt``, in µs."""
    if len(raw) < 16:
        return None
    enabled, rttcnt, rtt_us, minrtt_us = struct.unpack_from("@4I", raw)
    return {"enabled": enabled, "rttcnt": rttcnt, "rtt_us": rtt_us, "minrtt_us": minrtt_us}


def parse_dctcp_info(raw: bytes) -> Optional[dict[str, int]]:
    """``struct tcp_dctcp_info``: α in 1/1024, and the bytes ACKed with ECE and in all in
    the current window."""
    if len(raw) < 16:
        return None
    enabled, ce_state, alpha, ab_ecn, ab_tot = struct.unpack_from("@2H3I", raw)
    return {"enabled": enabled, "ce_state": ce_state, "alpha": alpha, "ab_ecn": ab_ecn, "ab_tot": ab_tot}


# The TCP_CC_INFO structures read, by the kind a flow's plan names (``cc_info_kind``).
CC_INFO_PARSERS: dict[str, Callable[[bytes], Optional[dict[str, Any]]]] = {
    "bbr": parse_bbr_info,
    "vegas": parse_vegas_info,
    "dctcp": parse_dctcp_info,
}
CC_INFO_MAX = 20


def cc_info_kind(cca: str) -> Optional[str]:
    """The ``TCP_CC_INFO`` structure an algorithm's ``get_info`` fills (bbr*, Vegas, DCTCP;
    the others report none a flow's figures use)."""
    if cca.startswith("bbr"):
        return "bbr"
    return cca if cca in ("vegas", "dctcp") else None


def congestion_control(sock: socket.socket) -> Optional[str]:
    """The algorithm the socket runs (``TCP_CONGESTION`` read back; names are at most 15
    bytes), None if the kernel does not say."""
    try:
        return sock.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16).split(b"\0")[0].decode()
    except (OSError, UnicodeDecodeError):
        return None


def cc_info(sock: socket.socket, kind: str) -> Optional[dict[str, Any]]:
    try:
        return CC_INFO_PARSERS[kind](sock.getsockopt(socket.IPPROTO_TCP, TCP_CC_INFO, CC_INFO_MAX))
    except OSError:
        return None
