"""Reading TCP packets from a capture file.

Containers (pcap in micro- or nanosecond resolution, pcapng) are read with dpkt, a small,
maintained pure-Python library that needs no external program and reads a file as a
stream; the link layers (Ethernet with VLAN tags, Linux cooked SLL and SLL2, raw IP,
BSD loopback) and the IPv4, IPv6 and TCP headers are decoded here, because only a few
header fields are needed and captures are usually truncated after the headers.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterator, Optional, Union

import dpkt

from ..errors import ScenarioError

# Link types (LINKTYPE_* as stored in files).
LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
DLT_RAW = (12, 14)  # DLT_RAW on most systems and on OpenBSD, as some writers store it
LINK_NAMES = {
    LINKTYPE_NULL: "null",
    LINKTYPE_ETHERNET: "ethernet",
    LINKTYPE_RAW: "raw",
    LINKTYPE_LOOP: "loop",
    LINKTYPE_LINUX_SLL: "linux-sll",
    LINKTYPE_IPV4: "ipv4",
    LINKTYPE_IPV6: "ipv6",
    LINKTYPE_LINUX_SLL2: "linux-sll2",
    12: "raw",
    14: "raw",
}

ETH_IPV4, ETH_IPV6, ETH_VLAN, ETH_QINQ = 0x0800, 0x86DD, 0x8100, 0x88A8
PROTO_TCP = 6
IPV6_EXTENSIONS = (0, 43, 60)  # hop-by-hop, routing, destination options

FIN, SYN, RST, PSH, ACK, ECE, CWR = 0x01, 0x02, 0x04, 0x08, 0x10, 0x40, 0x80


@dataclass(slots=True)
class TcpPacket:
    """The header fields of one captured TCP packet."""

    t: float
    src: str
    dst: str
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int
    win: int
    payload: int  # TCP payload bytes, from the IP lengths (also when not captured)
    wire: int  # IP packet length
    header: int  # IP + TCP header bytes
    ecn: int  # IP ECN field
    mss: Optional[int] = None
    wscale: Optional[int] = None
    sack_perm: bool = False
    tsval: Optional[int] = None
    tsecr: Optional[int] = None
    sacks: tuple[tuple[int, int], ...] = ()


@dataclass
class CaptureFile:
    path: Path
    format: str
    linktype: int
    packets: list[TcpPacket] = field(default_factory=list)
    records: int = 0
    other: int = 0  # records that were not TCP over IP (or could not be decoded)


def _ip_of(link: int, buf: bytes) -> Optional[bytes]:
    """The IP packet inside a link-layer frame, or None."""
    if link == LINKTYPE_ETHERNET:
        off, etype = 14, struct.unpack_from("!H", buf, 12)[0] if len(buf) >= 14 else -1
        while etype in (ETH_VLAN, ETH_QINQ) and len(buf) >= off + 4:
            etype = struct.unpack_from("!H", buf, off + 2)[0]
            off += 4
        return buf[off:] if etype in (ETH_IPV4, ETH_IPV6) else None
    if link == LINKTYPE_LINUX_SLL:
        return buf[16:] if len(buf) >= 16 and struct.unpack_from("!H", buf, 14)[0] in (ETH_IPV4, ETH_IPV6) else None
    if link == LINKTYPE_LINUX_SLL2:
        return buf[20:] if len(buf) >= 20 and struct.unpack_from("!H", buf, 0)[0] in (ETH_IPV4, ETH_IPV6) else None
    if link in (LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6, *DLT_RAW):
        return buf
    if link in (LINKTYPE_NULL, LINKTYPE_LOOP):
        return buf[4:]  # the address family; the IP version nibble tells the rest
    return None


def _options(opts: bytes, p: TcpPacket) -> None:
    i, n = 0, len(opts)
    sacks = []
    while i < n:
        kind = opts[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= n:
            break
        length = opts[i + 1]
        if length < 2 or i + length > n:
            break
        body = opts[i + 2 : i + length]
        if kind == 2 and length == 4:
            p.mss = struct.unpack("!H", body)[0]
        elif kind == 3 and length == 3:
            p.wscale = min(body[0], 14)
        elif kind == 4:
            p.sack_perm = True
        elif kind == 5:
            sacks = [struct.unpack_from("!II", body, k) for k in range(0, len(body) - 7, 8)]
        elif kind == 8 and length == 10:
            p.tsval, p.tsecr = struct.unpack("!II", body)
        i += length
    p.sacks = tuple(sacks)


def _tcp(t: float, ip: bytes) -> Optional[TcpPacket]:
    """Decode an IPv4 or IPv6 packet carrying TCP (first fragments only)."""
    if len(ip) < 20:
        return None
    version = ip[0] >> 4
    if version == 4:
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack_from("!H", ip, 2)[0]
        if ip[9] != PROTO_TCP or struct.unpack_from("!H", ip, 6)[0] & 0x1FFF or ihl < 20:
            return None
        src, dst = ".".join(map(str, ip[12:16])), ".".join(map(str, ip[16:20]))
        ecn, off, wire = ip[1] & 3, ihl, total
    elif version == 6:
        if len(ip) < 40:
            return None
        ecn = (struct.unpack_from("!I", ip, 0)[0] >> 20) & 3
        nxt, off = ip[6], 40
        wire = 40 + struct.unpack_from("!H", ip, 4)[0]
        while nxt in IPV6_EXTENSIONS and len(ip) >= off + 8:
            nxt, off = ip[off], off + 8 + ip[off + 1] * 8
        if nxt != PROTO_TCP:
            return None
        src = _ipv6(ip[8:24])
        dst = _ipv6(ip[24:40])
    else:
        return None
    if len(ip) < off + 20:
        return None
    sport, dport, seq, ack, doff, flags, win = struct.unpack_from("!HHIIBBH", ip, off)
    thl = (doff >> 4) * 4
    if thl < 20:
        return None
    p = TcpPacket(t, src, dst, sport, dport, seq, ack, flags, win, max(0, wire - off - thl), wire, off + thl, ecn)
    if thl > 20:
        _options(ip[off + 20 : off + thl], p)
    return p


def _ipv6(b: bytes) -> str:
    import ipaddress

    return str(ipaddress.IPv6Address(b))


def _records(f: BinaryIO) -> tuple[str, int, Iterator[tuple[float, bytes]]]:
    magic = f.read(4)
    f.seek(0)
    try:
        if magic == b"\x0a\x0d\x0d\x0a":
            r = dpkt.pcapng.Reader(f)
            return "pcapng", r.datalink(), iter(r)
        r = dpkt.pcap.Reader(f)
        return "pcap", r.datalink(), iter(r)
    except (ValueError, dpkt.dpkt.UnpackError, dpkt.dpkt.NeedData, struct.error) as e:
        raise ScenarioError("CAPTURE", f"'{f.name}' is not a pcap or pcapng file ({e})") from None


def read_capture(path: Union[str, Path]) -> CaptureFile:
    """Every TCP packet of a capture file, in file order."""
    p = Path(path)
    if not p.is_file():
        raise ScenarioError("CAPTURE", f"no such capture file '{p}'")
    with open(p, "rb") as f:
        fmt, link, records = _records(f)
        if link not in LINK_NAMES:
            raise ScenarioError(
                "CAPTURE",
                f"'{p}': link type {link} is not supported; supported: Ethernet, "
                "Linux cooked (SLL, SLL2), raw IP, loopback",
            )
        cap = CaptureFile(p, fmt, link)
        try:
            for ts, buf in records:
                cap.records += 1
                ip = _ip_of(link, buf)
                pkt = None
                if ip is not None:
                    try:
                        pkt = _tcp(float(ts), ip)
                    except struct.error:
                        pkt = None
                if pkt is None:
                    cap.other += 1
                else:
                    cap.packets.append(pkt)
        except (dpkt.dpkt.NeedData, dpkt.dpkt.UnpackError, struct.error, ValueError):
            pass  # a file cut short (a capture still being written): keep what was read
    return cap
