"""[tcp] settings that are net.ipv4 sysctls act alike on the simulator and the real
kernel (which the kernel engine sets them in): the pacing ratios, checked through the
pacing rate each engine reports against cwnd / SRTT (`tcp_update_pacing_rate`)."""

from __future__ import annotations

from typing import Any

import pytest

import ccbench
from ccbench.kernel import host

from conftest import assert_nothing_left_behind

NO_KERNEL = host.tun_usable()
ENGINES = [
    "sim",
    pytest.param(
        "kernel",
        marks=[
            pytest.mark.host,
            pytest.mark.skipif(NO_KERNEL is not None, reason=f"kernel engine unavailable: {NO_KERNEL}"),
        ],
    ),
]


def paced_cubic(**tcp: Any) -> dict[str, Any]:
    return {
        "duration": "3s",
        "interval": "100ms",
        "link": {"rate": "20Mbit", "rtt": "40ms", "buffer": "1bdp"},
        "tcp": tcp,
        "flows": [{"cca": "cubic", "pacing": True}],
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_the_pacing_ratio_of_congestion_avoidance_sets_the_pacing_rate(engine: str) -> None:
    for ratio in (120, 240):
        r = ccbench.run(paced_cubic(pacing_ca_ratio=ratio), engine=engine)
        f = r.flows
        avoiding = f[(f.time_s >= 1.0) & (f.cwnd >= f.ssthresh / 2)]
        assert len(avoiding) >= 15
        # Payload rate = ratio x cwnd x MSS / SRTT (at the SRTT of the sample).
        share = avoiding.pacing_rate_bps / (avoiding.cwnd * 1448 * 8 / (avoiding.srtt_ms / 1e3))
        assert share.median() == pytest.approx(ratio / 100, rel=0.01), (engine, ratio)
    if engine == "kernel":
        assert_nothing_left_behind(3)


def test_a_ratio_out_of_range_is_refused_with_its_range() -> None:
    with pytest.raises(ccbench.ScenarioError) as e:
        ccbench.Scenario.from_dict(paced_cubic(pacing_ss_ratio=0))
    assert e.value.field == "tcp.pacing_ss_ratio" and "from 1 to 1000" in e.value.message
