"""The simulator's side of ``ccbench conformance``: the driver on small scripts written
for these tests, the command line, the whole Linux TCP suite against the kernel's
recorded verdicts (when both are present), and a planted fault that named scripts catch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccbench.cli import main
from ccbench.conformance import command
from ccbench.conformance.sim import run_script
from ccbench.conformance.verdict import Verdict
from conftest import CLOSE_SCRIPTS, FASTOPEN_SCRIPTS, MTU_SCRIPTS

SUITE = Path("/work/shared/packetdrill/tcp")
RECORDED = Path(__file__).parent / "conformance" / "linux-verdicts.json"
GUEST_RECORDED = Path(__file__).parent / "conformance" / "linux-guest-verdicts.json"
needs_suite = pytest.mark.skipif(not SUITE.is_dir(), reason=f"the packetdrill TCP scripts are not at {SUITE}")

# A passive open with a 100 ms handshake: the peer's MSS is 1000, SACK is on, window
# 500 << 7 bytes.
OPEN = """\
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
  +.1 < S 0:0(0) win 20000 <mss 1000,sackOK,nop,nop,nop,wscale 7>
   +0 > S. 0:0(0) ack 1 <mss 1460,nop,nop,sackOK,nop,wscale 8>
  +.1 < . 1:1(0) ack 1 win 500
   +0 accept(3, ..., ...) = 4
"""


def verdict(tmp_path: Path, body: str, **kw) -> Verdict:
    f = tmp_path / "t.pkt"
    f.write_text(OPEN + body)
    return run_script(f, "t.pkt", **kw)


def test_an_initial_window_aggregates_to_the_expected_segment_and_slow_start_grows_cwnd(tmp_path):
    v = verdict(
        tmp_path,
        """\
   +0 write(4, ..., 12000) = 12000
   +0 > P. 1:10001(10000) ack 1
   +0 %{ assert tcpi_snd_cwnd == 10 and tcpi_unacked == 10, tcpi_snd_cwnd }%
  +.1 < . 1:1(0) ack 3001 win 500
   +0 > . 10001:12001(2000) ack 1
   +0 %{ assert tcpi_snd_cwnd == 13, tcpi_snd_cwnd }%
""",
    )
    assert v.outcome == "pass", v


def test_a_wrong_cwnd_assertion_fails_with_its_line_and_the_value(tmp_path):
    v = verdict(
        tmp_path,
        """\
   +0 write(4, ..., 10000) = 10000
  +.1 < . 1:1(0) ack 2001 win 500
   +0 %{ assert tcpi_snd_cwnd == 11, tcpi_snd_cwnd }%
""",
    )
    assert v.outcome == "fail"
    assert (v.mismatch.line, v.mismatch.expected, v.mismatch.actual) == (
        10,
        "tcpi_snd_cwnd == 11",
        "tcpi_snd_cwnd = 12",
    )
    assert v.mismatch.time_us == 300_000 and not v.mismatch.timing_only


def test_an_unexpected_segment_fails_naming_what_was_sent(tmp_path):
    v = verdict(tmp_path, "   +0 write(4, ..., 3000) = 3000\n   +0 > P. 1:1001(1000) ack 1\n")
    assert v.outcome == "fail" and v.mismatch.line == 9
    assert v.mismatch.actual.startswith(". 1:2001(2000) ack 1 at 0.200000 s")


def test_the_right_segment_at_the_wrong_time_is_a_timing_failure(tmp_path):
    v = verdict(tmp_path, "   +0 write(4, ..., 2000) = 2000\n +.05 > P. 1:2001(2000) ack 1\n")
    assert v.outcome == "fail" and v.mismatch.timing_only and v.mismatch.time_us == 250_000


def test_close_on_an_idle_connection_sends_the_fin_and_acknowledges_the_peers(tmp_path):
    body = """\
   +0 write(4, ..., 2000) = 2000
   +0 > P. 1:2001(2000) ack 1
  +.1 < . 1:1(0) ack 2001 win 500
  +.1 close(4) = 0
   +0 > F. 2001:2001(0) ack 1
  +.1 < F. 1:1(0) ack 2002 win 500
   +0 > . 2002:2002(0) ack 2
"""
    assert verdict(tmp_path, body).outcome == "pass"
    wrong = verdict(tmp_path, body.replace("> F. 2001:2001(0)", "> F. 2002:2002(0)"))
    assert wrong.outcome == "fail" and wrong.mismatch.line == 12
    assert wrong.mismatch.actual.startswith("F. 2001:2001(0) ack 1 at 0.400000 s")


def test_without_sack_three_duplicate_acks_retransmit_the_head(tmp_path):
    f = tmp_path / "t.pkt"
    f.write_text(
        OPEN.replace("sackOK,", "")
        + """\
   +0 write(4, ..., 4000) = 4000
   +0 > P. 1:4001(4000) ack 1
  +.1 < . 1:1(0) ack 1 win 500
   +0 < . 1:1(0) ack 1 win 500
   +0 < . 1:1(0) ack 1 win 500
   +0 > . 1:1001(1000) ack 1
   +0 %{ assert tcpi_ca_state == 3 and tcpi_sacked == 3 and tcpi_snd_ssthresh == 7, tcpi_ca_state }%
"""
    )
    assert run_script(f, "t.pkt").outcome == "pass", run_script(f, "t.pkt")


def test_busy_and_window_limited_time_as_the_kernels_chronographs_count_them(tmp_path):
    # Busy from the first write until everything is acknowledged (0.1 s), then again
    # from the second write, which a zero window holds back (0.1 s, both counted).
    v = verdict(
        tmp_path,
        """\
   +0 write(4, ..., 1000) = 1000
   +0 > P. 1:1001(1000) ack 1
  +.1 < . 1:1(0) ack 1001 win 0
   +0 write(4, ..., 1000) = 1000
  +.1 %{ assert 98000 <= tcpi_rwnd_limited <= 102000, tcpi_rwnd_limited }%
   +0 %{ assert 198000 <= tcpi_busy_time <= 202000, tcpi_busy_time }%
   +0 < . 1:1(0) ack 1001 win 500
   +0 > P. 1001:2001(1000) ack 1
  +.1 < . 1:1(0) ack 2001 win 500
   +0 %{ assert 98000 <= tcpi_rwnd_limited <= 102000 and 298000 <= tcpi_busy_time <= 302000, tcpi_busy_time }%
""",
    )
    assert v.outcome == "pass", v


def test_the_scripts_own_tolerance_and_the_override(tmp_path):
    body = "   +0 write(4, ..., 2000) = 2000\n +.005 > P. 1:2001(2000) ack 1\n"
    assert verdict(tmp_path, body).outcome == "fail"
    assert verdict(tmp_path, body, tolerance_us=6000).outcome == "pass"
    assert verdict(tmp_path, "--tolerance_usecs=6000\n" + body).outcome == "pass"


def test_three_sacks_start_fast_recovery_with_prr(tmp_path):
    v = verdict(
        tmp_path,
        """\
   +0 write(4, ..., 10000) = 10000
   +0 > P. 1:10001(10000) ack 1
  +.1 < . 1:1(0) ack 1 win 500 <sack 1001:2001,nop,nop>
 +.01 < . 1:1(0) ack 1 win 500 <sack 1001:3001,nop,nop>
 +.01 < . 1:1(0) ack 1 win 500 <sack 1001:4001,nop,nop>
   +0 > . 1:1001(1000) ack 1
   +0 %{
assert tcpi_ca_state == TCP_CA_Recovery, tcpi_ca_state
assert tcpi_snd_cwnd == 7 and tcpi_snd_ssthresh == 7, tcpi_snd_cwnd
assert tcpi_sacked == 3 and tcpi_lost == 1 and tcpi_retrans == 1, tcpi_sacked
}%
""",
    )
    assert v.outcome == "pass", v


def test_the_peers_data_is_acknowledged_at_once_and_unread_data_makes_close_reset(tmp_path):
    # `tcp_event_data_recv` (quick ACKs at first, `icsk_ack.lrcvtime`) and `tcp_close`
    # (unread data: `tcp_send_active_reset`).
    body = """\
   +1 %{ assert 990 <= tcpi_last_data_recv <= 1010, tcpi_last_data_recv }%
   +0 < P. 1:1001(1000) ack 1 win 500
   +0 > . 1:1(0) ack 1001
 +.01 %{ assert tcpi_last_data_recv <= 10, tcpi_last_data_recv }%
   +0 write(4, ..., 1000) = 1000
   +0 > P. 1:1001(1000) ack 1001
 +.01 < . 1001:1001(0) ack 1001 win 500
   +0 close(4) = 0
   +0 > R. 1001:1001(0) ack 1001
"""
    v = verdict(tmp_path, body)
    assert v.outcome == "pass", v
    # A FIN instead of the RST is a mismatch.
    v = verdict(tmp_path, body.replace("> R.", "> F."))
    assert v.outcome == "fail" and v.mismatch.actual.startswith("R. 1001:1001(0) ack 1001"), v


def test_small_writes_follow_nagle_cork_and_msg_more_as_linux_does(tmp_path):
    # `tcp_nagle_test` with Minshall's check, `tcp_mss_split_point`, TCP_CORK and MSG_MORE.
    v = verdict(
        tmp_path,
        """\
   +0 write(4, ..., 1500) = 1500
   +0 > P. 1:1501(1500) ack 1
   +0 write(4, ..., 300) = 300
 +.01 write(4, ..., 200) = 200
 +.09 < . 1:1(0) ack 1501 win 500
   +0 > P. 1501:2001(500) ack 1
 +.1 < . 1:1(0) ack 2001 win 500
   +0 setsockopt(4, SOL_TCP, TCP_CORK, [1], 4) = 0
   +0 write(4, ..., 2100) = 2100
   +0 > . 2001:4001(2000) ack 1
 +.01 setsockopt(4, SOL_TCP, TCP_CORK, [0], 4) = 0
   +0 > P. 4001:4101(100) ack 1
 +.1 < . 1:1(0) ack 4101 win 500
   +0 setsockopt(4, SOL_TCP, TCP_NODELAY, [1], 4) = 0
   +0 sendmsg(4, {msg_name(...)=..., msg_iov(2)=[{..., 30}, {..., 20}], msg_flags=0}, MSG_MORE) = 50
 +.01 send(4, ..., 50, 0) = 50
   +0 > P. 4101:4201(100) ack 1
""",
    )
    assert v.outcome == "pass", v
    # Nagle off from the start: the 300-byte write would have gone at once.
    v = verdict(
        tmp_path,
        """\
   +0 write(4, ..., 1500) = 1500
   +0 > P. 1:1501(1500) ack 1
   +0 write(4, ..., 300) = 300
   +0 > P. 1501:1801(300) ack 1
""",
    )
    assert v.outcome == "fail" and v.mismatch.line == 11, v


def test_data_after_our_own_is_acknowledged_at_once_and_read(tmp_path):
    # No data had come when ours left, so no pingpong mode: the quick ACK still goes.
    v = verdict(
        tmp_path,
        """\
   +0 write(4, ..., 500) = 500
   +0 > P. 1:501(500) ack 1
 +.1 < . 1:1(0) ack 501 win 500
   +0 < P. 1:101(100) ack 501 win 500
   +0 > . 501:501(0) ack 101
   +0 read(4, ..., 1000) = 100
   +0 close(4) = 0
   +0 > F. 501:501(0) ack 101
""",
    )
    assert v.outcome == "pass", v


def test_a_qdisc_that_refuses_everything_keeps_the_retransmission_from_counting(tmp_path):
    # `tc qdisc replace dev tun0 root pfifo limit 0` after the connection is up: RACK's
    # retransmission is refused (`tcp_transmit_skb` fails), and the ACK of the peer's
    # data too; an ACK with data is not a duplicate.
    v = verdict(
        tmp_path,
        """\
   +0 write(4, ..., 4000) = 4000
   +0 > P. 1:4001(4000) ack 1
   +0 `tc qdisc replace dev tun0 root pfifo limit 0`
  +.1 < . 1:1(0) ack 1 win 500 <sack 3001:4001,nop,nop>
 +.05 %{ assert tcpi_ca_state == TCP_CA_Recovery and tcpi_lost == 3 and tcpi_retrans == 0, tcpi_retrans }%
 +.01 < . 1:101(100) ack 1 win 500 <sack 3001:4001,nop,nop>
   +0 %{ assert tcpi_total_retrans == 0 and tcpi_sacked == 1, tcpi_sacked }%
""",
    )
    assert v.outcome == "pass", v


def test_without_gso_each_segment_leaves_alone(tmp_path):
    f = tmp_path / "t.pkt"
    f.write_text(
        "`ethtool -K tun0 tso off gso off`\n"
        + OPEN
        + """\
   +0 write(4, ..., 2500) = 2500
   +0 > . 1:1001(1000) ack 1
   +0 > . 1001:2001(1000) ack 1
   +0 > P. 2001:2501(500) ack 1
"""
    )
    v = run_script(f, "t.pkt", tolerance_us=None)
    assert v.outcome == "pass", v


def test_an_ack_of_unsent_data_is_dropped_and_challenged_at_most_twice_a_second(tmp_path):
    # `tcp_ack` -> `tcp_send_challenge_ack`, limited by `tcp_invalid_ratelimit` (500 ms).
    v = verdict(
        tmp_path,
        """\
   +0 < F. 1:1(0) ack 9999 win 500
   +0 > . 1:1(0) ack 1
 +.1 < . 1:1(0) ack 9999 win 500
 +.5 < . 1:1(0) ack 9999 win 500
   +0 > . 1:1(0) ack 1
   +0 < P. 1:1001(1000) ack 1 win 500
   +0 > . 1:1(0) ack 1001
""",
    )
    assert v.outcome == "pass", v


def test_a_silent_sender_fails_after_packetdrills_wait(tmp_path):
    v = verdict(tmp_path, "   +0 > P. 1:1001(1000) ack 1\n")
    assert v.outcome == "fail" and v.mismatch.actual == "nothing sent by 2.200000 s"


@pytest.mark.parametrize(("body", "reason"), [
    ("   +0 setsockopt(4, SOL_TCP, TCP_MAXSEG, [50], 4) = 0\n", "line 8: TCP_MAXSEG [50]"),
    ("  +.1 < icmp unreachable port_unreachable [1:1001(1000)]\n", "line 8: inbound ICMP unreachable port_unreachable"),
    ("   +0 `ip route change 192.0.2.1 dev tun0 quickack 1`\n", "route attribute 'quickack' is not modelled"),
    ("  +.1 < P. 1001:2001(1000) ack 1 win 500\n", "line 8: inbound data out of order"),
    ("  +.1 < P. 1:1001(1000) ack 1 win 500\n   +0 write(4, ..., 1000) = 1000\n"
     "  +.1 < P. 1001:2001(1000) ack 1001 win 500\n", "line 10: inbound data after an exchange"),
    ("  +.1 < F. 1:1001(1000) ack 1 win 500\n", "line 8: a FIN with data"),
    ("  +.1 < P. 1:1001(1000) ack 1 win 500\n  +.1 < F. 1001:1001(0) ack 1 win 500\n",
     "line 9: a FIN after the peer's data (its ACK waits for the delayed-ACK timer"),
    ("  +.1 < R. 2:2(0) ack 1 win 500\n", "line 8: a RST not at rcv_nxt"),
    ("   +0 shutdown(4, SHUT_RD) = 0\n", "line 8: shutdown(SHUT_RD) (only SHUT_WR is modelled)"),
    ("   +0 setsockopt(4, SOL_SOCKET, SO_LINGER, {onoff=1, linger=5}, 8) = 0\n",
     "line 8: SO_LINGER of 5 s (a close() that waits is not modelled)"),
    ("  +.1 < P. 1:1001(1000) ack 1 win 500\n  +.1 < P. 2001:3001(1000) ack 1 win 500\n",
     "line 9: inbound data out of order"),
    ("   +0 `sysctl -q net.ipv4.tcp_tso_win_divisor=10`\n", "a shell command after the connection is established"),
    ("   +0 write(4, ..., 1500) = 1000\n", "line 8: write() returning 1000 of 1500 bytes"),
    ("   +0 send(4, ..., 100, MSG_DONTWAIT) = 100\n", "line 8: send flags MSG_DONTWAIT"),
    ("   +0 read(4, ..., -5) = 0\n", "line 8: read of length -5"),
    ("   +0 write(4, ..., 4294967296) = 4294967296\n", "line 8: write of 4294967296 bytes: Linux copies at most"),
])  # fmt: skip
def test_what_the_simulator_cannot_do_is_unsupported_with_the_reason(tmp_path, body, reason):
    v = verdict(tmp_path, body)
    assert v.outcome == "unsupported" and reason in v.reason, v


def test_a_shut_window_is_probed_below_snd_una_with_backoff_until_it_opens(tmp_path):
    # SRTT 100 ms, so RTO and the first probe interval 300 ms; the timer wheel at HZ 250
    # runs a timer up to 8 jiffies (32 ms) after its expiry.
    v = verdict(
        tmp_path,
        """\
   +0 write(4, ..., 10000) = 10000
   +0 > P. 1:10001(10000) ack 1
  +.1 < . 1:1(0) ack 10001 win 0
   +0 write(4, ..., 5000) = 5000
+.3~+.332 > . 10000:10000(0) ack 1
   +0 %{ assert tcpi_probes == 1 and tcpi_backoff == 1 and tcpi_snd_cwnd == 20, tcpi_probes }%
+.6~+.632 > . 10000:10000(0) ack 1
  +.1 < . 1:1(0) ack 10001 win 500
   +0 > P. 10001:15001(5000) ack 1
   +0 %{ assert tcpi_probes == 0 and tcpi_backoff == 0, tcpi_backoff }%
""",
    )
    assert v.outcome == "pass", v


def test_so_sndbuf_is_doubled_and_capped_as_linux_sets_it(tmp_path):
    for asked, reads in [(10000, 20000), (10**9, 425984), (100, 4608)]:
        body = (
            f"   +0 setsockopt(4, SOL_SOCKET, SO_SNDBUF, [{asked}], 4) = 0\n"
            f"   +0 getsockopt(4, SOL_SOCKET, SO_SNDBUF, [{reads}], [4]) = 0\n"
        )
        assert verdict(tmp_path, body).outcome == "pass", (asked, reads)
    v = verdict(
        tmp_path, "   +0 setsockopt(4, SOL_SOCKET, SO_SNDBUF, [10000], 4) = 0\n   +0 write(4, ..., 30000) = 30000\n"
    )
    # One skb takes the whole write: Linux fills an skb up to the size goal (half the
    # peer's 64000-byte window) before it checks the buffer for room.
    assert v.outcome == "pass", v
    # Unset, the buffer autotunes as the connection opens: 2 x 10 segments x 2304 bytes.
    v = verdict(tmp_path, "   +0 getsockopt(4, SOL_SOCKET, SO_SNDBUF, [46080], [4]) = 0\n")
    assert v.outcome == "pass", v


def test_ip_tos_and_path_mtu_discovery_change_nothing_the_model_has(tmp_path):
    v = verdict(
        tmp_path,
        """\
   +0 setsockopt(4, SOL_IP, IP_MTU_DISCOVER, [IP_PMTUDISC_DONT], 1) = 0
   +0 setsockopt(4, SOL_IP, IP_TOS, [4], 1) = 0
   +0 write(4, ..., 2000) = 2000
   +0 > P. 1:2001(2000) ack 1
""",
    )
    assert v.outcome == "pass", v


def test_getsockopt_tcp_maxseg_reads_the_negotiated_mss(tmp_path):
    assert verdict(tmp_path, "   +0 getsockopt(4, SOL_TCP, TCP_MAXSEG, [1000], [4]) = 0\n").outcome == "pass"
    v = verdict(tmp_path, "   +0 getsockopt(4, SOL_TCP, TCP_MAXSEG, [1460], [4]) = 0\n")
    assert v.outcome == "fail" and v.mismatch.actual == "TCP_MAXSEG = 1000"


def test_tcp_maxseg_set_before_the_handshake_clamps_the_mss(tmp_path):
    f = tmp_path / "t.pkt"
    f.write_text(
        OPEN.replace(
            "   +0 listen(3, 1) = 0\n",
            """\
   +0 listen(3, 1) = 0
   +0 setsockopt(3, SOL_TCP, TCP_MAXSEG, [800], 4) = 0
   +0 getsockopt(3, SOL_TCP, TCP_MAXSEG, [800], [4]) = 0
""",
        )
        # The SYN-ACK offers the user's MSS (tcp_mss_clamp of the route's advmss).
        .replace("<mss 1460,", "<mss 800,")
        + """\
   +0 %{ assert tcpi_snd_mss == 800 and tcpi_advmss == 800, tcpi_snd_mss }%
   +0 write(4, ..., 4000) = 4000
   +0 > P. 1:4001(4000) ack 1
"""
    )
    assert run_script(f, "t.pkt").outcome == "pass"


def test_a_setting_the_simulator_has_no_knob_for_is_unsupported(tmp_path):
    f = tmp_path / "t.pkt"
    f.write_text("`sysctl -q net.ipv4.tcp_reordering=10`\n" + OPEN)
    v = run_script(f, "t.pkt")
    assert v.outcome == "unsupported" and v.reason == "sysctl net.ipv4.tcp_reordering=10 (the simulator models 3)"


def test_the_command_prints_a_line_per_script_and_a_count(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "ok.pkt").write_text(OPEN + "   +0 write(4, ..., 2000) = 2000\n   +0 > P. 1:2001(2000) ack 1\n")
    (tmp_path / "a" / "no.pkt").write_text(OPEN + "   +0 setsockopt(4, SOL_TCP, TCP_QUICKACK, [1], 4) = 0\n")
    assert main(["conformance", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "unsupported a/no.pkt: line 8: setsockopt TCP_QUICKACK"
    assert out[1] == "pass        a/ok.pkt"
    assert out[2] == "2 scripts on simulator: 1 pass, 0 fail, 1 unsupported"
    assert main(["conformance", "--json", str(tmp_path / "a" / "ok.pkt")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["stack"] == "simulator" and Verdict.from_dict(data["scripts"][0]).outcome == "pass"


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ([], "PATH"),
        (["/nonexistent/x.pkt"], "PATH"),
        (["EMPTY"], "PATH"),
        (["--tolerance-usecs", "-1", "X"], "--tolerance-usecs"),
    ],
)
def test_bad_input_is_one_error_line_and_status_2(tmp_path, capsys, args, field):
    (tmp_path / "empty").mkdir()
    args = [str(tmp_path / "empty") if a == "EMPTY" else a for a in args]
    with pytest.raises(SystemExit) as e:
        main(["conformance", *args])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {field}:")


# Where the simulator is known to part from the kernel, and why; the test fails if one
# of these starts agreeing (take it off the list) or another starts differing. None now:
# prr-ss-ack-below-snd_una-cubic agrees since reordering is detected
# (`tcp_check_sack_reordering`) and an ACK below snd_una has its SACKs processed.
KNOWN_DIFFERENCES: set[str] = set()


@needs_suite
def test_the_suite_on_the_simulator_reproduces_the_kernels_recorded_verdicts():
    if not RECORDED.is_file():
        pytest.skip(f"no recorded kernel verdicts at {RECORDED}")
    recorded = command.load_expected(str(RECORDED))
    scripts = command.collect([str(SUITE)])
    got = command.run_simulator(scripts, None, lambda v: None)
    differ = {v.script: d for v in got if (d := command.disagreement(v, recorded.get(v.script)))}
    assert set(differ) == KNOWN_DIFFERENCES, differ


@needs_suite
def test_the_fq_scripts_on_the_simulator_reproduce_the_vm_guests_verdicts():
    # This host's kernel has no fq; the scripts that install it were run on a Linux 7.2
    # guest (docs/conformance.md). Both fail cubic-bulk-166k-idle-restart at line 51 and
    # cubic-bulk-166k at line 53 with cwnd 36, and both pass slow-start-fq-ack-per-2pkt.
    recorded = command.load_expected(str(GUEST_RECORDED))
    got = command.run_simulator(command.collect([str(SUITE / name) for name in recorded]), None, lambda v: None)
    assert {v.script: v.outcome for v in got} == {
        "cubic/cubic-bulk-166k-idle-restart.pkt": "fail",
        "cubic/cubic-bulk-166k.pkt": "fail",
        "slow_start/slow-start-fq-ack-per-2pkt.pkt": "pass",
    }
    assert not [(v.script, d) for v in got if (d := command.disagreement(v, recorded[v.script]))]


def test_tso_deferral_waits_only_for_an_ack_due_within_a_millisecond():
    # Our script, which Linux 6.18 passes (tests/test_conformance_kernel.py): with the
    # older rule (defer once the oldest skb is srtt/2 old) the last segment would wait.
    own = Path(__file__).parent / "conformance" / "scripts" / "tso-defer-ack-due.pkt"
    assert run_script(own, own.name).outcome == "pass"


def test_a_write_beyond_the_send_buffer_blocks_until_acks_make_room(tmp_path):
    # Our script, which Linux 6.18 passes (tests/test_conformance_kernel.py): 10000-byte
    # skbs (half the peer's window) charged 832 bytes each, woken at a third free.
    own = Path(__file__).parent / "conformance" / "scripts" / "sndbuf-blocking-write.pkt"
    assert run_script(own, own.name).outcome == "pass"
    # The same write expected back before the ACK that lets its last bytes in fails.
    early = own.read_text().replace("+0...0.3 write", "+0...0.2 write")
    (tmp_path / "early.pkt").write_text(early)
    v = run_script(tmp_path / "early.pkt", "early.pkt")
    assert v.outcome == "fail" and v.mismatch.actual == "write() returned at 0.500000 s", v


def test_options_that_change_only_the_environment_are_taken_and_mtu_sets_the_mss(tmp_path):
    # --mtu=1200: advmss 1160, offered in the SYN-ACK and capping the segments; --speed
    # and --tolerance_percent change nothing the stack does. Linux 6.18 passes it
    # (tests/test_conformance_kernel.py); offering 1460 fails at the SYN-ACK, as there.
    own = Path(__file__).parent / "conformance" / "scripts" / "environment-options.pkt"
    assert run_script(own, own.name).outcome == "pass"
    fault = tmp_path / "fault.pkt"
    fault.write_text(own.read_text().replace("<mss 1160,", "<mss 1460,"))
    v = run_script(fault, fault.name)
    assert v.outcome == "fail" and v.mismatch.line == 18 and v.mismatch.actual == "S. with <mss 1160>", v
    odd = tmp_path / "odd.pkt"
    odd.write_text(own.read_text().replace("--speed=1000", "--non_fatal=packet"))
    assert run_script(odd, odd.name).reason == "command-line option --non_fatal=packet"
    # What the simulator cannot take is unsupported, never an internal error: a
    # tolerance that is not a finite number, an MTU whose MSS is past tcp.mss's range.
    inf = tmp_path / "inf.pkt"
    inf.write_text(own.read_text().replace("--tolerance_percent=25", "--tolerance_percent=inf"))
    assert run_script(inf, inf.name).reason == "command-line option --tolerance_percent=inf"
    big = tmp_path / "big.pkt"
    big.write_text(own.read_text().replace("--mtu=1200", "--mtu=20000").replace("<mss 1400,", "<mss 16000,"))
    assert run_script(big, big.name).reason.startswith("an MSS of 16000 bytes (the simulator takes tcp.mss from 64")


@pytest.mark.parametrize(
    "script", ["data-before-accept.pkt", "read-nothing-waiting.pkt", "msg-eor.pkt", "nonblocking-short-write.pkt"]
)
def test_our_passive_open_read_and_eor_scripts_pass_as_on_linux(script):
    # Linux 6.18 passes all three (tests/test_conformance_kernel.py): data that came
    # before accept() waits to be read; a read that finds nothing fails with EAGAIN on a
    # non-blocking socket and waits for the peer's data on a blocking one; MSG_EOR keeps
    # the next write out of its skb; a non-blocking write past the buffer returns 20000
    # of 30000 bytes, tcp_push_one having sent pieces of its one skb while it copied.
    own = Path(__file__).parent / "conformance" / "scripts" / script
    assert run_script(own, own.name).outcome == "pass"


@pytest.mark.parametrize("script", CLOSE_SCRIPTS + FASTOPEN_SCRIPTS + MTU_SCRIPTS)
def test_our_close_fastopen_and_path_mtu_scripts_pass_as_on_linux(script):
    # Linux 6.18 passes all of them (tests/test_conformance_kernel.py). Close: the FIN
    # behind data or on it, the passive, simultaneous and half close, TIME_WAIT, the RSTs
    # of close() with unread data or a zero linger time, of data after close() and of the
    # listener's close(), the peer's RST, and close() before an active open completes.
    # Fast Open: the cookie request (after TCP_FASTOPEN_CONNECT, or in a blocking
    # sendto(MSG_FASTOPEN) that returns when the handshake is done), the SYN with the
    # cookie and 960 bytes (the cached MSS 1000 less 40), its data sent again after a
    # SYN-ACK that does not take it, and the server that takes a SYN's data without a
    # cookie and lets accept() return before the third ACK. Path MTU: an ICMP
    # "fragmentation needed" in and out of the window, TCP_MAXSEG on an open connection
    # (ignored, even by the ICMP's tcp_sync_mss), black-hole detection with
    # tcp_mtu_probing=1, and probing with tcp_mtu_probing=2.
    own = Path(__file__).parent / "conformance" / "scripts" / script
    assert run_script(own, own.name).outcome == "pass"


@pytest.mark.parametrize(
    ("script", "old", "new", "actual"),
    [
        # The FIN rides on the data the window held back: not a segment of its own.
        ("close-fin-on-unsent-data.pkt", "   +0 > FP. 2001:3501(1500) ack 1\n",
         "   +0 > P. 2001:3501(1500) ack 1\n   +0 > F. 3501:3501(0) ack 1\n", "F. 2001:3501(1500) ack 1"),
        # The FIN leaves at close(), not with the ACK of the data.
        ("close-fin-behind-data.pkt", "   +0 > F. 3001:3001(0) ack 1\n  +.1 <",
         "  +.1 < . 1:1(0) ack 3001 win 20000\n   +0 > F. 3001:3001(0) ack 1\n  +0 <", "F. 3001:3001(0) ack 1"),
        # The first call after the RST fails with ECONNRESET, not EPIPE.
        ("rst-then-write.pkt", "-1 ECONNRESET (Connection reset by peer)", "-1 EPIPE (Broken pipe)",
         "write() = -1 ECONNRESET"),
        # The SYN-ACK after close() gets a RST without ACK.
        ("close-before-established.pkt", "> R 1:1(0)", "> R. 1:1(0) ack 1", "R 1:1(0)"),
        # In FIN_WAIT1 the peer's FIN is acknowledged at once, not 50 ms later.
        ("close-simultaneous.pkt", "   +0 > . 2:2(0) ack 2", "  +.05 > . 2:2(0) ack 2", ". 2:2(0) ack 2"),
        # The SYN carries what the MSS kept with the cookie leaves, not a whole MSS.
        ("fastopen-cookie.pkt", "   +0 write(4, ..., 3000) = 960\n   +0 > S 0:960(960)",
         "   +0 write(4, ..., 3000) = 1000\n   +0 > S 0:1000(1000)", "write() = 960"),
        # Without a cookie, the SYN asks for one.
        ("fastopen-cookie-request.pkt", "wscale 10,FO,nop,nop>", "wscale 10>", "S 0:0(0) with FO"),
        # A blocking sendto(MSG_FASTOPEN) returns when the handshake is done.
        ("fastopen-sendto-blocking.pkt", "+0...0.1 sendto", "+0...0.05 sendto", "write() returned at 0.100000 s"),
        # The server's SYN-ACK acknowledges the SYN's data.
        ("fastopen-server.pkt", "> S. 0:0(0) ack 501", "> S. 0:0(0) ack 1", "S. 0:0(0) ack 501"),
    ],
)  # fmt: skip
def test_a_planted_fault_in_a_close_or_fastopen_script_fails_where_linux_does(tmp_path, script, old, new, actual):
    # Each fault checked on Linux 6.18 too: it fails there at the same line.
    text = (Path(__file__).parent / "conformance" / "scripts" / script).read_text()
    assert old in text
    f = tmp_path / script
    f.write_text(text.replace(old, new, 1))
    v = run_script(f, script)
    assert v.outcome == "fail" and v.mismatch is not None, v
    assert v.mismatch.actual.startswith(actual), v.mismatch


def test_without_msg_eor_the_second_write_fills_the_first_skb(tmp_path):
    own = Path(__file__).parent / "conformance" / "scripts" / "msg-eor.pkt"
    plain = tmp_path / "no-eor.pkt"
    plain.write_text(own.read_text().replace("1500, MSG_EOR)", "1500, 0)"))
    # Linux 6.18 fails the same line: one skb of 3000 bytes, not two of 1500.
    v = run_script(plain, plain.name)
    assert v.outcome == "fail" and v.mismatch.line == 21 and "1:3001(3000)" in v.mismatch.actual, v


def test_a_read_that_finds_nothing_fails_or_waits_as_linux_says(tmp_path):
    eagain = "   +0 fcntl(4, F_SETFL, O_RDWR|O_NONBLOCK) = 0\n   +0 read(4, ..., 1000) = 0\n"
    v = verdict(tmp_path, eagain)
    assert v.outcome == "fail" and v.mismatch.actual == "read() = -1 EAGAIN", v
    # Linux 6.18 said the same of that line: "returned -1 (errno 11: Resource temporarily
    # unavailable)". A blocking read with no data ever coming never returns.
    v = verdict(tmp_path, "   +0 read(4, ..., 1000) = 1000\n")
    assert v.outcome == "fail" and v.mismatch.actual == "read() still waiting for data at the end", v
    early = "   +0...0.05 read(4, ..., 1000) = 300\n  +.1 < P. 1:301(300) ack 1 win 500\n"
    v = verdict(tmp_path, early)
    assert v.outcome == "fail" and v.mismatch.actual == "read() returned at 0.300000 s", v


def test_a_sack_edge_inside_a_segment_tags_only_the_whole_segments_it_covers():
    # Our script, which Linux 6.18 passes too (tests/test_conformance_kernel.py).
    own = Path(__file__).parent / "conformance" / "scripts" / "sack-edge-inside-segment.pkt"
    assert run_script(own, own.name).outcome == "pass"


@needs_suite
@pytest.mark.parametrize(("script", "params", "line"), [
    # Cubic's beta one below 717/1024: ssthresh after a loss at cwnd 10 is 6, not 7, and
    # recovery sends on a different schedule.
    ("fast_recovery/prr-ss-10pkt-lost-1.pkt", {"beta": 716}, 42),
    ("fast_recovery/prr-ss-30pkt-lost1_4.pkt", {"beta": 716}, 42),
    # Without HyStart, slow start runs past the delay signal.
    ("cubic/cubic-hystart-delay-rtt-jumps-upward.pkt", {"hystart": 0}, 79),
])  # fmt: skip
def test_a_planted_fault_fails_the_scripts_that_guard_it(script, params, line):
    assert run_script(SUITE / script, script).outcome == "pass"
    v = run_script(SUITE / script, script, cc_params=params)
    assert v.outcome == "fail" and v.mismatch.line == line, v


@needs_suite
def test_a_script_given_alone_is_named_as_in_its_directory_and_packetdrill_needs_kernel() -> None:
    from conftest import run_cli

    script = SUITE / "slow_start" / "slow-start-ack-per-1pkt.pkt"
    res = run_cli("conformance", str(script))
    assert res.returncode == 0 and res.stdout.startswith("pass        slow_start/slow-start-ack-per-1pkt.pkt")
    res = run_cli("conformance", "--packetdrill", "/bin/true", str(script))
    assert res.returncode == 2 and res.stderr.strip() == "error: --packetdrill: only with --kernel or --vm"


@pytest.mark.parametrize(
    "body, outcome, says",
    [
        ("   +0 %{ assert tcpi_snd_cwnd == 1 / 0 }%\n", "fail", "division by zero"),
        ("   +0 %{ assert 1 << 10000000000 == 0 }%\n", "fail", "shift count"),
        ("   +0 write(4, ..., 99999999999999999999999) = 1\n", "unsupported", "copies at most"),
        ("   +0 write(4, ..., 99999999999999999999999) = 99999999999999999999999\n", "unsupported", "write of"),
    ],
)
def test_a_script_that_asks_the_impossible_gets_a_verdict_not_a_crash(tmp_path, body, outcome, says):
    v = verdict(tmp_path, body)
    assert v.outcome == outcome and says in (v.reason or v.mismatch.actual), v
