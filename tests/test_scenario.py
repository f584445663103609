"""The TOML scenario schema: defaults, expansion, errors, round trips and hashing."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from ccbench import Scenario, ScenarioError
from ccbench.scenario import Tcp
from ccbench.units import Buffer

from conftest import SCENARIOS, SHORT_TOML

MINIMAL = """\
duration = "10s"
[link]
rate = "100Mbit"
rtt = "40ms"
[[flows]]
cca = "cubic"
"""


def error_of(text: str) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        Scenario.from_toml(text)
    return info.value


def test_defaults_are_filled_in() -> None:
    s = Scenario.from_toml(MINIMAL)
    assert s.seed == 1
    assert s.duration_ns == 10 * 10**9
    assert s.interval_ns == 100 * 10**6
    assert s.link.buffer == Buffer("bdp", 1.0)
    assert s.link.loss == 0.0
    assert s.link.nic_rate_bps == 10 * 10**9
    assert (s.tcp.mss, s.tcp.init_cwnd, s.tcp.hz) == (1448, 10, 1000)
    assert s.tcp.rto_min_ns == 200 * 10**6
    assert s.tcp.tsq_limit_bytes == 4 * 2**20
    f = s.flows[0]
    assert (f.count, f.start_ns, f.access_delay_ns, f.size_bytes, f.pacing) == (1, 0, 0, None, None)
    assert f.rwnd_bytes == 6 * 2**20 and f.params == {}


def test_full_schema_to_core_json() -> None:
    s = Scenario.from_toml(
        """
        seed = 7
        duration = "30s"
        interval = "10ms"
        [link]
        rate = "1Gbit"
        rtt = "40ms"
        buffer = "100pkt"
        loss = "0.5%"
        nic_rate = "10Gbit"
        [tcp]
        mss = 1448
        init_cwnd = 10
        hz = 250
        rto_min = "200ms"
        rto_init = "1s"
        tsq_limit = "4MiB"
        pacing_shift = 10
        delack_min = "40ms"
        [[flows]]
        cca = "Cubic"
        count = 2
        start = "1s"
        access_delay = "5ms"
        size = "20MB"
        pacing = true
        rwnd = "6MiB"
        [[flows]]
        cca = "reno"
        """
    )
    core = json.loads(s.to_json())
    assert core["seed"] == 7
    assert core["duration_ns"] == 30 * 10**9
    assert core["sample_interval_ns"] == 10 * 10**6
    assert core["link"] == {
        "rate_bps": 10**9,
        "rtt_ns": 40 * 10**6,
        "buffer": {"packets": 100},
        "loss": 0.005,
        "nic_rate_bps": 10 * 10**9,
        "ecn_threshold": None,
    }
    assert core["tcp"]["hz"] == 250 and core["tcp"]["rto_min_ns"] == 200 * 10**6
    assert core["tcp"]["tsq_limit_bytes"] == 4 * 2**20 and core["tcp"]["delack_min_ns"] == 40 * 10**6
    assert len(core["flows"]) == 3
    first = core["flows"][0]
    assert first == core["flows"][1]
    assert first == {
        "cca": "cubic",
        "start_ns": 10**9,
        "access_delay_ns": 5 * 10**6,
        "size_bytes": 20 * 10**6,
        "pacing": True,
        "rwnd_bytes": 6 * 2**20,
        "params": {},
        "ecn": "off",
    }
    assert core["flows"][2]["cca"] == "reno" and core["flows"][2]["size_bytes"] is None
    assert s.flow_count == 3


def test_canonical_json_is_compact_and_sorted() -> None:
    text = Scenario.from_toml(MINIMAL).to_json()
    assert " " not in text
    assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.toml")), ids=lambda p: p.name)
def test_every_shipped_scenario_parses_and_round_trips(path: Path) -> None:
    s = Scenario.from_file(path)
    again = Scenario.from_toml(s.effective_toml())
    assert again == s
    assert again.scenario_hash == s.scenario_hash


def test_shipped_scenarios_exist() -> None:
    names = {p.name for p in SCENARIOS.glob("*.toml")}
    assert {"example.toml", "cubic-deep-buffer.toml", "sized-flows.toml", "different-rtts.toml"} <= names


def test_effective_toml_is_complete() -> None:
    s = Scenario.from_toml(MINIMAL)
    doc = tomllib.loads(s.effective_toml())
    assert set(doc) == {"seed", "duration", "interval", "link", "tcp", "flows"}
    assert set(doc["link"]) == {"rate", "rtt", "buffer", "aqm", "loss", "nic_rate"}
    # Every [tcp] knob has a default: all of them are written.
    assert set(doc["tcp"]) == {field.alias or name for name, field in Tcp.model_fields.items()}
    assert {"mss", "rto_min", "tsq_limit", "sack", "slow_start_after_idle"} <= set(doc["tcp"])
    assert set(doc["flows"][0]) == {
        "cca",
        "count",
        "start",
        "access_delay",
        "rwnd",
        "params",
        "ecn",
        "pacing_stride",
        "freeze_cc",
        "repeat",
        "pause",
        "rwnd_autotune",
        "connect",
        "fastopen",
        "direction",
    }
    assert s.scenario_hash in s.effective_toml()


def test_effective_toml_keeps_optional_flow_fields_and_params() -> None:
    s = Scenario.from_toml(MINIMAL.replace('cca = "cubic"', 'cca = "cubic"\nsize = "1MB"\npacing = false'))
    doc = tomllib.loads(s.effective_toml())
    assert doc["flows"][0]["size"] == "1MB" and doc["flows"][0]["pacing"] is False
    assert Scenario.from_toml(s.effective_toml()) == s


def test_hash_is_stable() -> None:
    # The canonical JSON of a fixed scenario, and so its hash, must not drift between
    # runs, machines or Python versions. A change in defaults changes it on purpose.
    s = Scenario.from_toml(SHORT_TOML)
    assert s.scenario_hash == Scenario.from_toml(SHORT_TOML).scenario_hash
    assert len(s.scenario_hash) == 64
    assert s.scenario_hash == EXPECTED_SHORT_HASH


EXPECTED_SHORT_HASH = "d2e670e7139f901de22f3f1fad452fc2f74df965d18d5abc24cd4350caa5b787"


def test_hash_ignores_spelling_but_not_values() -> None:
    a = Scenario.from_toml(MINIMAL)
    b = Scenario.from_toml(
        MINIMAL.replace('"100Mbit"', '"0.1Gbit"').replace('"40ms"', '"40000us"') + 'count = 1\nrwnd = "6MiB"\n'
    )
    assert a.scenario_hash == b.scenario_hash
    assert a.scenario_hash != Scenario.from_toml("seed = 2\n" + MINIMAL).scenario_hash
    two = Scenario.from_toml(MINIMAL + "count = 2\n")
    split = Scenario.from_toml(MINIMAL + '[[flows]]\ncca = "cubic"\n')
    assert two.scenario_hash == split.scenario_hash


def test_the_receive_buffer_setting_reaches_the_core_only_when_set() -> None:
    plain = Scenario.from_toml(MINIMAL)
    assert "rmem" not in plain.to_core()["tcp"]
    assert plain.tcp.sysctls()["net.ipv4.tcp_rmem"] == "4096 131072 6291456"
    # Linux's default written out is the default: the core does not see it either.
    same = Scenario.from_toml(MINIMAL + '[tcp]\nrmem = [4096, "128KiB", "6MiB"]\n')
    assert "rmem" not in same.to_core()["tcp"] and same.scenario_hash == plain.scenario_hash
    tuned = Scenario.from_toml(MINIMAL + '[tcp]\nrmem = ["4KiB", "128KiB", "256KiB"]\n')
    assert list(tuned.to_core()["tcp"]["rmem"]) == [4096, 131072, 262144]
    assert tuned.tcp.sysctls()["net.ipv4.tcp_rmem"] == "4096 131072 262144"
    assert tuned.scenario_hash != plain.scenario_hash
    with pytest.raises(ScenarioError) as e:
        Scenario.from_toml(MINIMAL + '[tcp]\nrmem = ["4KiB", "256KiB", "128KiB"]\n')
    assert e.value.field == "tcp.rmem" and "min <= default <= max" in str(e.value)
    # Half the buffer is advertised: the core refuses a first window under one segment.
    with pytest.raises(ScenarioError) as e:
        Scenario.from_toml(MINIMAL + '[tcp]\nrmem = ["1KiB", "2KiB", "256KiB"]\n')
    assert e.value.field == "tcp.rmem" and "twice tcp.mss" in str(e.value)


def test_a_small_tcp_rmem_max_limits_an_autotuned_window() -> None:
    """A 256 KiB tcp_rmem[2] holds an autotuned window to half of it: about 10.4 Mbit/s
    over 100 ms, where rwnd alone lets the flow fill 100 Mbit/s."""
    from ccbench import run

    base = MINIMAL.replace('"40ms"', '"100ms"') + "rwnd_autotune = true\n"
    limited = run(Scenario.from_toml(base + '[tcp]\nrmem = ["4KiB", "128KiB", "256KiB"]\n'))
    free = run(Scenario.from_toml(base))
    bound = 131072 // 1448 * 1448 * 8 / 0.1
    assert 0.9 * bound <= limited.summary["flows"][0]["goodput_bps"] <= bound
    assert free.summary["flows"][0]["goodput_bps"] > 5 * bound


def test_the_send_buffer_settings_reach_the_core_only_when_set() -> None:
    plain = Scenario.from_toml(MINIMAL)
    assert "wmem" not in plain.to_core()["tcp"] and "sndbuf_bytes" not in plain.to_core()["flows"][0]
    tuned = Scenario.from_toml(MINIMAL + 'sndbuf = "64KiB"\n[tcp]\nwmem = ["4KiB", "16KiB", "256KiB"]\n')
    core = tuned.to_core()
    assert list(core["tcp"]["wmem"]) == [4096, 16384, 262144] and core["flows"][0]["sndbuf_bytes"] == 65536
    assert tuned.tcp.sysctls()["net.ipv4.tcp_wmem"] == "4096 16384 262144"
    with pytest.raises(ScenarioError) as e:
        Scenario.from_toml(MINIMAL + '[tcp]\nwmem = ["4KiB", "16KiB", "1KiB"]\n')
    assert e.value.field == "tcp.wmem" and "min <= default <= max" in str(e.value)
    with pytest.raises(ScenarioError) as e:
        Scenario.from_toml(MINIMAL + 'sndbuf = "2GiB"\n')
    assert e.value.field == "flows[0].sndbuf"


def test_the_path_mtu_and_probing_settings_reach_the_core_only_when_set() -> None:
    plain = Scenario.from_toml(MINIMAL)
    core = plain.to_core()
    assert not {"mtu_bytes", "mtu_black_hole"} & set(core["link"])
    assert not {"mtu_probing", "base_mss", "probe_threshold", "probe_interval_ns", "mtu_probe_floor"} & set(core["tcp"])
    # Linux's defaults, as the kernel engine sets them (tcp_probe_interval in seconds).
    sysctls = plain.tcp.sysctls()
    assert [sysctls[f"net.ipv4.tcp_{k}"] for k in ("mtu_probing", "base_mss", "probe_threshold")] == ["0", "1024", "8"]
    assert (sysctls["net.ipv4.tcp_probe_interval"], sysctls["net.ipv4.tcp_mtu_probe_floor"]) == ("600", "48")
    hole = Scenario.from_toml(
        MINIMAL.replace("[link]", "[link]\nmtu = 1400\nmtu_black_hole = true")
        + '[tcp]\nmtu_probing = 1\nbase_mss = 512\nprobe_interval = "30s"\n'
    )
    core = hole.to_core()
    assert (core["link"]["mtu_bytes"], core["link"]["mtu_black_hole"]) == (1400, True)
    assert (core["tcp"]["mtu_probing"], core["tcp"]["base_mss"], core["tcp"]["probe_interval_ns"]) == (
        1,
        512,
        30 * 10**9,
    )
    assert hole.tcp.sysctls()["net.ipv4.tcp_probe_interval"] == "30"
    assert hole.to_dict()["tcp"]["probe_interval"] == "30s" and hole.scenario_hash != plain.scenario_hash
    assert Scenario.from_toml(hole.effective_toml()) == hole


@pytest.mark.parametrize(
    "link, tcp, field, message",
    [
        ("mtu = 500", "", "link.mtu", "552 to 65535 bytes"),
        ("mtu = 70000", "", "link.mtu", "552 to 65535 bytes"),
        ("mtu_black_hole = true", "", "link.mtu_black_hole", "needs link.mtu"),
        ("", "mtu_probing = 3", "tcp.mtu_probing", "from 0 to 2"),
        ("", "base_mss = 10", "tcp.base_mss", "from 48 to 9000 bytes"),
        ("", "probe_threshold = 70000", "tcp.probe_threshold", "from 0 to 65535 bytes"),
        ("", 'probe_interval = "100000min"', "tcp.probe_interval", "at most 49.71 days"),
        ("", "mtu_probe_floor = 9001", "tcp.mtu_probe_floor", "from 48 to 9000 bytes"),
    ],
)
def test_path_mtu_values_out_of_range_name_their_key(link: str, tcp: str, field: str, message: str) -> None:
    text = MINIMAL.replace("[link]", f"[link]\n{link}") + (f"[tcp]\n{tcp}\n" if tcp else "")
    e = error_of(text)
    assert e.field == field and message in e.message, (e.field, e.message)


def test_connecting_when_due_and_fast_open_reach_the_core_only_when_set() -> None:
    plain = Scenario.from_toml(MINIMAL)
    assert not {"connect", "fastopen"} & set(plain.to_core()["flows"][0])
    tfo = Scenario.from_toml(MINIMAL + 'size = "20KB"\nrepeat = 3\nconnect = "sender"\nfastopen = true\n')
    flow = tfo.to_core()["flows"][0]
    assert (flow["connect"], flow["fastopen"]) == ("sender", True)
    with pytest.raises(ScenarioError) as e:
        Scenario.from_toml(MINIMAL + "fastopen = true\n")
    assert e.value.field == "flows[0].fastopen" and 'needs connect = "sender" or "receiver"' in e.value.message
    assert Scenario.from_toml(MINIMAL + 'size = "20KB"\nconnect = "receiver"\n').flows[0].connect == "receiver"
    with pytest.raises(ScenarioError) as e:
        Scenario.from_toml(MINIMAL + 'connect = "client"\n')
    assert e.value.field == "flows[0].connect" and "'ahead', 'sender' or 'receiver'" in str(e.value)


def test_from_flags_defaults() -> None:
    s = Scenario.from_flags()
    assert s.link.rate_bps == 100 * 10**6 and s.link.rtt_ns == 40 * 10**6
    assert s.link.buffer == Buffer("bdp", 1.0)
    assert s.duration_ns == 10 * 10**9
    assert [f.cca for f in s.flows] == ["cubic"]


def test_from_flags_everything() -> None:
    s = Scenario.from_flags(
        cca="cubic,reno",
        flows=2,
        rate="1Gbit",
        rtt="20ms",
        buffer="2bdp",
        loss="1%",
        duration="5s",
        seed=9,
        interval="10ms",
        size="10MB",
        pacing=True,
    )
    assert [(f.cca, f.count, f.size_bytes, f.pacing) for f in s.flows] == [
        ("cubic", 2, 10**7, True),
        ("reno", 2, 10**7, True),
    ]
    assert (s.link.rate_bps, s.link.rtt_ns, s.link.loss) == (10**9, 20 * 10**6, 0.01)
    assert s.link.buffer == Buffer("bdp", 2.0)
    assert (s.seed, s.duration_ns, s.interval_ns) == (9, 5 * 10**9, 10**7)


def test_flags_override_a_file() -> None:
    path = SCENARIOS / "different-rtts.toml"
    base = Scenario.from_file(path)
    s = Scenario.from_flags(base=base, rate="50Mbit", seed=4, flows=3)
    assert s.link.rate_bps == 50 * 10**6 and s.seed == 4
    assert [f.count for f in s.flows] == [3, 3]
    assert [f.access_delay_ns for f in s.flows] == [f.access_delay_ns for f in base.flows]
    replaced = Scenario.from_flags(base=base, cca="reno")
    assert [(f.cca, f.access_delay_ns) for f in replaced.flows] == [("reno", 0)]
    assert replaced.link == base.link


def test_load_accepts_scenario_mapping_and_path(tmp_path: Path) -> None:
    s = Scenario.from_toml(MINIMAL)
    p = tmp_path / "s.toml"
    p.write_text(MINIMAL)
    assert Scenario.load(s) is s
    assert Scenario.load(tomllib.loads(MINIMAL)) == s
    assert Scenario.load(p) == s
    assert Scenario.load(str(p)) == s
    with pytest.raises(TypeError):
        Scenario.load(42)  # type: ignore[arg-type]


BASE = MINIMAL


@pytest.mark.parametrize(
    "text, field, message",
    [
        (BASE.replace('"100Mbit"', '"0"'), "link.rate", "must be positive"),
        (BASE.replace('"100Mbit"', '"-5Mbit"'), "link.rate", "must be positive"),
        (BASE.replace('"100Mbit"', "0"), "link.rate", "must be positive"),
        (BASE.replace('"40ms"', '"0ms"'), "link.rtt", "must be positive"),
        (BASE.replace("[link]", '[link]\nbuffer = "-1bdp"'), "link.buffer", "must not be negative"),
        (BASE.replace('"cubic"', '"copa"'), "flows[0].cca", "allowed: reno, cubic"),
        (BASE + "colour = 1\n", "flows[0].colour", "unknown key; allowed keys: cca, count"),
        (BASE.replace("[link]", "[link]\njitter = 1"), "link.jitter", "unknown key; allowed keys: rate, trace, rtt"),
        ("speed = 1\n" + BASE, "speed", "unknown key; allowed keys: seed, duration"),
        (BASE + "[tcp]\nfoo = 1\n", "tcp.foo", "unknown key; allowed keys: mss"),
        (BASE.replace('"10s"', '"10 parsecs"'), "duration", "unknown duration unit 'parsecs'"),
        (BASE.replace('"10s"', '"0s"'), "duration", "must be positive"),
        (BASE.replace("[link]", '[link]\nloss = "150%"'), "link.loss", "below 100%"),
        (BASE.replace("[link]", "[link]\nloss = 1.5"), "link.loss", "below 100%"),
        ('interval = "100us"\n' + BASE, "interval", "at least 1ms"),
        (BASE.replace('rtt = "40ms"\n', ""), "link.rtt", "is required"),
        (BASE.replace('duration = "10s"\n', ""), "duration", "is required"),
        (BASE.split("[[flows]]")[0], "flows", "is required"),
        (BASE.split("[[flows]]")[0] + "flows = []\n", "link.flows", "unknown key"),
        ("flows = []\n" + BASE.split("[[flows]]")[0], "flows", "at least one"),
        (BASE + 'size = "0B"\n', "flows[0].size", "must be positive"),
        (BASE + 'start = "10s"\n', "flows[0].start", "before the end of the run"),
        (BASE + "count = 0\n", "flows[0].count", "from 1 to"),
        (BASE + 'rwnd = "1KB"\n', "flows[0].rwnd", "at least one MSS"),
        (BASE + "params = { bogus = 1.0 }\n", "flows[0].params.bogus", "not a parameter of cubic; allowed: beta,"),
        (
            BASE + '[[flows]]\ncca = "reno"\ncount = 3\n[[flows]]\ncca = "reno"\nparams = { x = 1 }\n',
            "flows[2].params.x",
            "reno takes no parameters",
        ),
        (BASE + 'pacing = "yes"\n', "flows[0].pacing", "must be true or false"),
        ("seed = -1\n" + BASE, "seed", "from 0 to"),
        ("seed = true\n" + BASE, "seed", "must be an integer"),
        (BASE + "[tcp]\nhz = 7\n", "tcp.hz", "must divide 1000000"),
        (BASE + "[tcp]\nmss = 10\n", "tcp.mss", "from 64 to 9000"),
        (BASE + "[tcp]\nfrto = 3\n", "tcp.frto", "from 0 to 2"),
        ("link = 3\n" + BASE.replace("[link]", "[other]"), "link", "must be a table"),
    ],
)
def test_errors_name_the_field(text: str, field: str, message: str) -> None:
    e = error_of(text)
    assert e.field == field
    assert message in e.message


def test_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    p = tmp_path / "broken.toml"
    p.write_text('duration = "10s"\n[link\nrate = 1\n')
    with pytest.raises(ScenarioError) as info:
        Scenario.from_file(p)
    assert info.value.field == str(p)
    assert "invalid TOML" in info.value.message and "line 2" in info.value.message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        Scenario.from_file(tmp_path / "nope.toml")
    assert info.value.message == "no such scenario file"


def test_scenarios_are_immutable() -> None:
    s = Scenario.from_toml(MINIMAL)
    with pytest.raises(Exception):
        s.seed = 3  # type: ignore[misc]
