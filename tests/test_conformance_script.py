"""The packetdrill script parser: every script of the Linux TCP suite parses (when the
suite is present beside the project), values land where they belong, and the %{ }%
evaluator accepts only arithmetic, comparisons and names."""

from __future__ import annotations

from pathlib import Path

import pytest

from ccbench.conformance.script import (
    DEFAULT_TOLERANCE_US,
    EvalError,
    ScriptError,
    evaluate,
    find_scripts,
    parse,
    parse_file,
)

SUITE = Path("/work/shared/packetdrill/tcp")
needs_suite = pytest.mark.skipif(not SUITE.is_dir(), reason=f"the packetdrill TCP scripts are not at {SUITE}")

SMALL = """\
// A test of the parser.
--tolerance_usecs=7000

`sysctl -q net.ipv4.tcp_ecn=1
sysctl -q net.ipv4.tcp_congestion_control=reno`

    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_SNDBUF, [50000], 4) = 0
  +.1 < S 0:0(0) win 65535 <mss 1000,sackOK,TS val 10 ecr 0,nop,wscale 7>
   +0 > S. 0:0(0) ack 1 <...>
 +.05 < [ect0] E. 1:1(0) ack 2001 win 300 <sack 3001:4001 5001:6001,nop,nop>
+.1~+.12 > P. 2001:3001(1000) ack 1
    * > . 6001:7001(1000) ack 1
   +0 sendmsg(4, {msg_name(...)=...,
                  msg_iov(1)=[{..., 40}], msg_flags=0}, MSG_MORE) = 40
   +0...0.010 connect(3, ..., ...) = -1 EINPROGRESS (Operation now in progress)
   +0 %{
X = 0x7fffffff
assert tcpi_snd_cwnd == 10, tcpi_snd_cwnd  # a comment
assert 1 <= tcpi_lost <= 3 and tcpi_ca_state == TCP_CA_Recovery, 'lost'; print(tcpi_lost)
}%
"""


def test_a_small_script_parses_into_events_with_their_lines_and_times():
    s = parse(SMALL, "t.pkt")
    assert s.tolerance_us == 7000
    assert s.init is not None and s.init.sysctls == {"net.ipv4.tcp_ecn": "1", "net.ipv4.tcp_congestion_control": "reno"}
    lines = [e.line for e in s.events]
    assert lines == [7, 8, 9, 10, 11, 12, 13, 14, 16, 17]
    syn = s.events[2].body
    assert syn.direction == "<" and syn.flags == "S" and syn.win == 65535
    assert syn.option("mss").value == 1000 and syn.option("wscale").value == 7
    assert (syn.option("TS").ts_val, syn.option("TS").ts_ecr) == (10, 0)
    assert s.events[3].body.options == "..."
    ack = s.events[4].body
    assert ack.ecn == "ect0" and ack.flags == "E." and ack.ack == 2001
    assert ack.sack_blocks() == ((3001, 4001), (5001, 6001))
    assert s.events[4].time.kind == "relative" and s.events[4].time.start_us == 50_000
    rng = s.events[5].time
    assert (rng.kind, rng.start_us, rng.end_us) == ("relative_range", 100_000, 120_000)
    assert s.events[6].time.kind == "any"
    msg = s.events[7].body
    assert msg.name == "sendmsg" and msg.args[-1] == "MSG_MORE" and msg.result == "40"
    conn = s.events[8].body
    assert conn.end_us == 10_000 and conn.result == "-1" and conn.errno == "EINPROGRESS"
    code = s.events[9].body
    kinds = [k for k, _ in code.statements]
    assert kinds == ["assign", "assert", "assert", "print"]
    assert code.statements[1][1].line == 19
    assert code.names == {"tcpi_snd_cwnd", "tcpi_lost", "tcpi_ca_state"}


def test_default_tolerance_is_packetdrills():
    assert parse("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n").tolerance_us == DEFAULT_TOLERANCE_US == 4000


def test_an_unreadable_line_names_its_line_number():
    with pytest.raises(ScriptError) as e:
        parse("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n\n+0 > what is this\n", "bad.pkt")
    assert e.value.line == 3


def test_the_evaluator_computes_comparisons_and_arithmetic():
    names = {"tcpi_snd_cwnd": 18, "TCP_CA_Open": 0, "tcpi_ca_state": 0}
    assert evaluate("tcpi_snd_cwnd == 18", names) is True
    assert evaluate("16 <= tcpi_snd_cwnd <= 17", names) is False
    assert evaluate("tcpi_snd_cwnd * 2 - 1 == 35 and not tcpi_ca_state != TCP_CA_Open", names) is True
    assert evaluate("tcpi_snd_cwnd >> 1 | 1", names) == 9


@pytest.mark.parametrize(
    "expr",
    [
        "__import__('os').system('true')",
        "tcpi_snd_cwnd.bit_length()",
        "[x for x in ()]",
        "(lambda: 1)()",
        "tcpi_snd_cwnd if 1 else 2",
    ],
)
def test_the_evaluator_rejects_anything_but_its_whitelist(expr):
    with pytest.raises(EvalError):
        evaluate(expr, {"tcpi_snd_cwnd": 1})


def test_a_missing_name_is_reported_by_name():
    with pytest.raises(KeyError, match="tcpi_busy_time"):
        evaluate("tcpi_busy_time > 0", {})


def test_the_defaults_include_is_read_relative_to_the_script(tmp_path):
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "defaults.sh").write_text("sysctl -q net.ipv4.tcp_sack=1\nsysctl -q net.ipv4.tcp_ecn=0\n")
    (tmp_path / "x").mkdir()
    script = tmp_path / "x" / "s.pkt"
    script.write_text(
        "`../common/defaults.sh\nsysctl -q net.ipv4.tcp_ecn=2`\n0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n"
    )
    s = parse_file(script)
    assert s.init.sysctls == {"net.ipv4.tcp_sack": "1", "net.ipv4.tcp_ecn": "2"}


@needs_suite
def test_every_script_of_the_suite_parses():
    scripts = find_scripts([SUITE])
    assert len(scripts) == 47
    for f, _ in scripts:
        s = parse_file(f)
        assert s.events, f


@needs_suite
def test_spot_checks_on_the_suite():
    prr = parse_file(SUITE / "fast_recovery/prr-ss-10pkt-lost-1.pkt")
    assert prr.init.sysctls["net.ipv4.tcp_congestion_control"] == "cubic"
    assert prr.init.sysctls["net.ipv4.tcp_early_retrans"] == "4"
    sacks = [e for e in prr.events if e.kind == "packet" and e.body.sack_blocks()]
    assert (sacks[0].line, sacks[0].body.sack_blocks()) == (26, ((1001, 2001),))
    assert sacks[0].time.start_us == 110_000
    code = next(e for e in prr.events if e.kind == "code")
    assert (
        code.line == 31
        and code.body.statements[0][1].line == 32
        and [a.expr for _, a in code.body.statements]
        == ["tcpi_ca_state == TCP_CA_Recovery", "tcpi_snd_cwnd == 7", "tcpi_snd_ssthresh == 7"]
    )
    bulk = parse_file(SUITE / "cubic/cubic-bulk-166k.pkt")
    assert bulk.tolerance_us == 20000
    assert "tc qdisc replace dev tun0 root fq" in bulk.init.other
    assert bulk.init.sysctls["net.ipv4.tcp_early_retrans"] == "0"
    v6 = parse_file(SUITE / "mtu_probe/basic-v6.pkt")
    assert v6.options["ip_version"] == "ipv6" and "strict_segments" in v6.options


def test_fast_open_options_keep_their_cookie():
    s = parse(
        "0 > S 0:0(0) <mss 1460,nop,nop,sackOK,nop,wscale 10,FO,nop,nop>\n"
        "+.1 < S. 0:0(0) ack 1 win 20000 <mss 1000,FO 0102ABCD05060708,nop,nop>\n",
        "t.pkt",
    )
    request, reply = (e.body for e in s.events)
    assert request.option("FO").cookie == "" and reply.option("FO").cookie == "0102abcd05060708"
    with pytest.raises(ScriptError, match="hex digits"):
        parse("0 < S 0:0(0) win 20000 <FO 123>\n", "t.pkt")
