"""The algorithms' state-machine moves, logged as they happen (states.parquet,
``Result.states``), and the timeline drawn from them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import ccbench
from ccbench.plots import flow_figure, load_run
from ccbench.plots.states import Segment, moved_segments


def scenario(cca: str, interval: str = "100ms", duration: str = "2s") -> dict[str, object]:
    return {
        "seed": 1,
        "duration": duration,
        "interval": interval,
        "link": {"rate": "50Mbit", "rtt": "40ms", "buffer": "1bdp"},
        "flows": [{"cca": cca}],
    }


def test_bbr_moves_are_named_and_timed(tmp_path: Path) -> None:
    result = ccbench.run(scenario("bbr3"))
    moves = result.states
    assert list(moves.columns) == ["time_s", "flow", "machine", "state"]
    assert moves["time_s"].is_monotonic_increasing
    modes = moves[moves["machine"] == "mode"]
    assert list(modes["state"][:3]) == ["STARTUP", "DRAIN", "PROBE_BW"]
    assert modes["time_s"].iloc[0] == 0.0
    # DRAIN takes about a round: less than one 100-ms interval, so samples may miss it.
    drain = modes["time_s"].iloc[2] - modes["time_s"].iloc[1]
    assert 0 < drain < 0.1
    assert set(moves[moves["machine"] == "phase"]["state"]) <= {"UP", "DOWN", "CRUISE", "REFILL"}
    written = result.save(tmp_path)
    assert tmp_path / "states.parquet" in written
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "states.parquet"), moves, check_dtype=False)


def test_algorithms_without_state_machines_write_no_states(tmp_path: Path) -> None:
    result = ccbench.run(scenario("cubic"))
    assert len(result.states) == 0
    result.save(tmp_path)
    assert not (tmp_path / "states.parquet").exists()


def test_timeline_shows_a_drain_shorter_than_the_interval(tmp_path: Path) -> None:
    ccbench.run(scenario("bbr", interval="200ms")).save(tmp_path)
    run = load_run(tmp_path)
    _, rows = flow_figure(run, 0)
    mode = next(r for r in rows if r.name == "mode")
    drains = [s for s in mode.segments if s.label == "DRAIN"]
    assert len(drains) == 1 and drains[0].end - drains[0].start < 0.2
    assert mode.segments[0] == Segment(0.0, drains[0].start, "STARTUP")


def test_moved_segments_hold_each_state_until_the_next_move() -> None:
    moves = pd.DataFrame(
        {
            "time_s": [0.0, 0.5, 0.55, 0.55, 0.55, 1.0, 2.0, 2.2, 2.2, 2.2],
            "machine": ["mode", "mode", "mode", "phase", "phase", "phase", "mode", "mode", "phase", "phase"],
            "state": [
                "STARTUP",
                "DRAIN",
                "PROBE_BW",
                "DOWN",
                "CRUISE",
                "REFILL",
                "PROBE_RTT",
                "PROBE_BW",
                "DOWN",
                "CRUISE",
            ],
        }
    )
    modes, phases = moved_segments(moves, 3.0)
    assert modes == (
        Segment(0.0, 0.5, "STARTUP"),
        Segment(0.5, 0.55, "DRAIN"),
        Segment(0.55, 2.0, "PROBE_BW"),
        Segment(2.0, 2.2, "PROBE_RTT"),
        Segment(2.2, 3.0, "PROBE_BW"),
    )
    # DOWN held for no time is left out; no phase while in PROBE_RTT.
    assert phases == (Segment(0.55, 1.0, "CRUISE"), Segment(1.0, 2.0, "REFILL"), Segment(2.2, 3.0, "CRUISE"))
