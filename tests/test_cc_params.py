"""Algorithm parameters (``[[flows]] params``): one behaviour for every algorithm, and
the table of names, defaults and ranges the binding exposes (``_core.parameters()``),
of which docs/parameters.md is a rendering: ``python tests/test_cc_params.py --update``
writes it again."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ccbench import _core

from conftest import SHORT_TOML, run_cli


def table() -> dict[str, list[dict[str, object]]]:
    return json.loads(_core.parameters())


def test_parameters_lists_every_algorithm_with_default_range_and_meaning() -> None:
    t = table()
    assert set(t) == set(_core.algorithms())
    assert t["reno"] == []
    for alg, rows in t.items():
        for row in rows:
            assert set(row) == {"name", "kind", "default", "min", "max", "kernel", "meaning"}, alg
            assert row["kind"] in ("flag", "integer", "gain")
            assert row["min"] <= row["default"] <= row["max"], (alg, row)
            assert row["kernel"] and row["meaning"]
    beta = next(r for r in t["cubic"] if r["name"] == "beta")
    assert (beta["default"], beta["min"], beta["max"], beta["kernel"]) == (717, 1, 1023, "tcp_cubic.c: beta")
    high_gain = next(r for r in t["bbr"] if r["name"] == "high_gain")
    assert high_gain["default"] == 739 / 256 and high_gain["kind"] == "gain"


def write(tmp_path: Path, cca: str, params: str) -> Path:
    p = tmp_path / "scenario.toml"
    p.write_text(SHORT_TOML.replace('cca = "cubic"', f'cca = "{cca}"') + f"params = {{ {params} }}\n")
    return p


def assert_one_line_error(result, line: str) -> None:
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [line]
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("cca", "params", "line"),
    [
        ("bbr", "high_gain = 12", "error: flows[0].params.high_gain: must be in [0.00390625, 3.99609375], got 12"),
        ("bbr3", "full_loss_cnt = 16", "error: flows[0].params.full_loss_cnt: must be in [0, 15], got 16"),
        ("cubic", "hystart = 0.5", "error: flows[0].params.hystart: is a flag: must be 0 or 1, got 0.5"),
        ("bbr2", "cwnd_gian = 2", None),
        ("reno", "beta = 0.5", "error: flows[0].params.beta: reno takes no parameters"),
    ],
)
def test_cli_reports_one_error_line_for_a_bad_parameter(
    tmp_path: Path, cca: str, params: str, line: str | None
) -> None:
    out = tmp_path / "out"
    result = run_cli("run", str(write(tmp_path, cca, params)), "--out", str(out))
    if line is None:
        names = ", ".join(r["name"] for r in table()[cca])
        line = f"error: flows[0].params.cwnd_gian: not a parameter of {cca}; allowed: {names}"
    assert_one_line_error(result, line)
    assert not out.exists()


def test_the_ends_of_a_range_are_accepted(tmp_path: Path) -> None:
    from ccbench.scenario import Scenario

    for row in table()["bbr3"]:
        for x in (row["min"], row["max"]):
            text = write(tmp_path, "bbr3", f"{row['name']} = {x}").read_text()
            assert Scenario.from_toml(text).flows[0].params == {row["name"]: x}


DOC = Path(__file__).resolve().parent.parent / "docs" / "parameters.md"

DOC_HEAD = """\
# Algorithm parameters

A flow's algorithm takes overrides by name in its `[[flows]]` entry, e.g.

```toml
[[flows]]
cca = "bbr"
params = { cwnd_gain = 2.5, probe_rtt_mode_ms = 100 }
```

Every algorithm applies them the same way (`crates/ccbench-sim/src/cc/params.rs`):

- a name the algorithm does not have is an error listing the names it has;
- a value outside the range below, or of the wrong kind, is an error giving the range,
  e.g. `error: flows[0].params.high_gain: must be in [0.00390625, 3.99609375], got 12`;
  nothing is clamped;
- *flag*: 0 or 1; *integer*: a whole number, as the kernel holds it; *gain*: a real
  number, rounded to the nearest 1/256 (BBR's fixed point, `BBR_UNIT`) when applied,
  so `cwnd_gain = 2.5` is 640/256 and the default `high_gain` 739/256 shows as
  2.88671875.

The ranges are what the kernel's own fields can hold where it stores the value in a bit
field of `struct bbr` (a gain in `pacing_gain:10` is below 4; `full_bw_cnt:2` counts to
3), what keeps the arithmetic defined otherwise (Cubic's `beta` below 1024, a BBR cut
below 1), and generous bounds on times and counts. The effective set of every flow is
recorded in `summary.json` (`flows[].params`). BBRv2 and BBRv3 share one table; their
defaults differ.

This page is generated from `ccbench._core.parameters()` by
`python tests/test_cc_params.py --update`; a test keeps it current.
"""


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def render() -> str:
    out = [DOC_HEAD]
    for alg, rows in sorted(table().items()):
        out.append(f"\n## {alg}\n")
        if not rows:
            out.append("No parameters.\n")
            continue
        out.append("| name | kind | default | range | kernel | meaning |")
        out.append("|---|---|---|---|---|---|")
        for r in rows:
            rng = f"[{_number(r['min'])}, {_number(r['max'])}]"
            out.append(
                f"| `{r['name']}` | {r['kind']} | {_number(r['default'])} | {rng} | `{r['kernel']}` | {r['meaning']} |"
            )
    return "\n".join(out) + "\n"


def test_the_parameters_page_is_current() -> None:
    assert DOC.read_text() == render(), "run: python tests/test_cc_params.py --update"


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_cc_params.py --update")
    DOC.write_text(render())
    print(f"wrote {DOC}")
