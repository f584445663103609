"""Flows going up on the kernel engine: the upload's sender in the receiver's namespace,
its data through the emulator's reverse bottleneck, where the download's ACKs queue
behind it.

Needs root and /dev/net/tun; skipped otherwise. Runs of a few seconds, and after every
test no namespace, device or process of a finished run remains.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from ccbench.engines import kernel as kernel_engine
from ccbench.kernel import host

from conftest import assert_nothing_left_behind, timing_check

REASON = host.tun_usable()
pytestmark = [pytest.mark.host, pytest.mark.skipif(REASON is not None, reason=f"kernel engine unavailable: {REASON}")]

PAYLOAD_SHARE = 1448 / 1500
UP_RATE = 5_000_000
DOWN_RATE = 20_000_000


@pytest.fixture(autouse=True)
def nothing_left_behind() -> Iterator[None]:
    yield
    assert_nothing_left_behind(3)


def download_and_upload(duration: str) -> dict[str, Any]:
    """A Cubic download (flow 0) and a Cubic upload (flow 1) on 20 Mbit/s down, 5 Mbit/s
    up, 40 ms, each direction's buffer one BDP of its own rate; the summary."""
    doc = {
        "duration": duration,
        "link": {"rate": "20Mbit", "rtt": "40ms", "buffer": "1bdp", "reverse": {"rate": "5Mbit", "buffer": "1bdp"}},
        "flows": [{"cca": "cubic"}, {"cca": "cubic", "direction": "up"}],
    }
    return kernel_engine.run(doc).summary


def test_an_upload_fills_the_uplink_and_the_downloads_acks_queue_behind_it() -> None:
    s = download_and_upload("5s")
    down, up = s["flows"]
    reverse = s["link"]["reverse"]
    # The upload's data crosses the 5 Mbit/s reverse bottleneck, and fills it.
    uplink = UP_RATE * PAYLOAD_SHARE
    timing_check(0.8 * uplink < up["goodput_bps"] <= 1.01 * uplink, "the upload's goodput", up["goodput_bps"])
    # Over 5 s with the upload's slow start: 0.917 to 0.967 in four runs on a quiet host,
    # 0.899 once beside the suite's other tests (the simulator: 0.945).
    timing_check(0.85 < reverse["utilization"] <= 1.01, "the uplink's utilization", reverse["utilization"])
    # Its drops are the reverse queue's (the summary lists the flows in the scenario's order).
    assert up["dropped"] == reverse["drops_overflow"] > 0
    # The download's ACKs wait behind the upload's data (up to 40 ms at 5 Mbit/s), and it
    # stays well below the 20 Mbit/s link (alone, with its ACKs only on the uplink, it
    # gets 18.9 Mbit/s in 5 s on both engines; with the upload 11.5 to 14.4 here, 12.2
    # on the simulator).
    assert reverse["queue_delay_ms"]["mean"] > 15, reverse["queue_delay_ms"]
    assert 2e6 < down["goodput_bps"] < 0.8 * DOWN_RATE * PAYLOAD_SHARE, down["goodput_bps"]
    assert down["rtt_samples"] > 500 and up["rtt_samples"] > 300


def test_uploads_negotiate_ecn_and_open_connections_from_their_receiver() -> None:
    # Two sized uploads: one negotiating ECN on the sender namespace's second address
    # (the reverse link marks above 5 packets), one of two downloads whose receiver
    # opens each connection (its sender listens in the receiver's namespace).
    reverse = {"rate": "5Mbit", "buffer": "1bdp", "ecn_threshold": "5pkt"}
    doc = {
        "duration": "6s",
        "link": {"rate": "20Mbit", "rtt": "40ms", "buffer": "1bdp", "reverse": reverse},
        "flows": [
            {"cca": "cubic", "size": "1MB", "ecn": "classic", "direction": "up"},
            {"cca": "cubic", "size": "200KB", "repeat": 2, "pause": "0.2s", "connect": "receiver", "direction": "up"},
        ],
    }
    s = kernel_engine.run(doc).summary
    ecn, opened = s["flows"]
    assert s["link"]["reverse"]["ecn_marks"] > 0 and s["link"]["ecn_marks"] == 0
    assert ecn["delivered_bytes"] == 1_000_000 and ecn["completion_s"] is not None
    assert [d["delivered_bytes"] for d in opened["downloads"]] == [200_000, 200_000]
    # Everything crossed the uplink: the run ends when the last upload is complete.
    assert s["duration_s"] < 6 and s["link"]["reverse"]["utilization"] > 0.5
