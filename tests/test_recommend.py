"""ccbench recommend: focused simulations at one point, a choice and its reasons."""

from __future__ import annotations

import pandas as pd
import pytest

from ccbench.advise.recommend import choose, neighbour_buffers, recommend

from conftest import run_cli


def test_neighbour_buffers_keep_the_users_unit():
    assert neighbour_buffers("64KB") == ["32KB", "64KB", "128KB"]
    assert neighbour_buffers("0.5bdp") == ["0.25bdp", "0.5bdp", "1bdp"]
    assert neighbour_buffers("1pkt") == ["1pkt", "2pkt"]


def test_shallow_lossy_point_recommends_bbr_with_reasons():
    rec = recommend("20Mbit", "20ms", "0.2bdp", loss="0.5%", duration="3s", seeds=2, ccas=["cubic", "bbr"])
    assert rec.choice == "bbr"
    assert rec.buffer_bdp == pytest.approx(0.2)
    assert rec.reasons[0].startswith("buffer is 0.2 BDP: BBR's goodput is ")
    here = rec.at("0.2bdp")
    assert list(here.index) == ["cubic", "bbr"] and (here["n"] == 2).all()
    assert here.loc["bbr", "goodput_mbps_mean"] > here.loc["cubic", "goodput_mbps_mean"]
    assert rec.buffers() == ["0.1bdp", "0.2bdp", "0.4bdp"] and len(rec.sensitivity) == 2


def test_goodput_ties_go_to_the_lower_rtt():
    here = pd.DataFrame(
        {
            "goodput_mbps_mean": [10.0, 9.9],
            "goodput_mbps_hi": [10.1, 10.0],
            "rtt_mean_ms_mean": [50.0, 20.0],
            "retrans_rate_mean": [0.0, 0.0],
        },
        index=["cubic", "bbr"],
    )
    assert choose(here, "goodput") == "bbr"
    assert choose(here.assign(goodput_mbps_mean=[10.0, 8.0], goodput_mbps_hi=[10.1, 8.1]), "goodput") == "cubic"
    assert choose(here, "delay") == "bbr"


def test_recommend_command_prints_table_and_choice():
    # benches/recommend.py times this command.
    done = run_cli(
        "recommend",
        "--rate",
        "50Mbit",
        "--rtt",
        "30ms",
        "--buffer",
        "64KB",
        "--loss",
        "0.1%",
        "--duration",
        "4s",
        "--seeds",
        "3",
        "--reno",
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "buffer 64KB (0.34 BDP)" in out
    for name in ("Cubic", "BBR", "BBRv3", "Reno"):
        assert f"  {name}" in out
    assert "Recommendation (goodput): use " in out
    assert "buffer is 0.34 BDP:" in out and "Sensitivity to the buffer:" in out


def test_recommend_rejects_bad_flags_in_one_line():
    bad = run_cli("recommend", "--rate", "50Mbit", "--rtt", "30ms", "--buffer", "64 parsecs")
    assert bad.returncode == 2 and bad.stderr.startswith("error: --buffer: ") and bad.stderr.count("\n") == 1
    bad = run_cli("recommend", "--rate", "50Mbit", "--rtt", "30ms", "--buffer", "64KB", "--cca", "copa")
    assert bad.returncode == 2 and bad.stderr.startswith("error: --cca: unknown algorithm 'copa'")
