"""ccbench replicate vargas2022 and elmenhorst2026 on tiny grids: the sweeps run into
the store, the comparison comes from the runs, and the figures and report are written."""

from __future__ import annotations

import csv
import io

import pytest
from rich.console import Console

from ccbench.replicate import elmenhorst2026, studies, vargas2022
from ccbench.store import open_store
from ccbench.sweep import plan_from_dict

PHONE = vargas2022.Grid(duration="3s", repetitions=1, connections=(1, 20), strides=(1, 10, 50))
VM = elmenhorst2026.Grid(
    duration="8s",
    repetitions=1,
    shares=("25%", "100%"),
    slices=("1ms", "10ms"),
    rtts=("10ms",),
    rates=("10Mbit", "100Mbit"),
    patched=("bbr3",),
)


def test_both_studies_are_registered_and_quick_modes_stay_small():
    assert {"vargas2022", "elmenhorst2026", "cao2019"} <= set(studies())
    for module in (vargas2022, elmenhorst2026):
        runs = sum(plan_from_dict(doc).run_count for doc in module.plans(module.QUICK, "q").values())
        assert runs < 200, module.__name__


def rows(path):
    return {r["point"]: r for r in csv.DictReader(path.open())}


@pytest.fixture(scope="module")
def phone(tmp_path_factory):
    root = tmp_path_factory.mktemp("vargas")
    console = Console(file=io.StringIO(), width=200)
    vargas2022.run(True, root / "out", 2, open_store(root / "store"), console, grid=PHONE)
    return root / "out", console.file.getvalue()


def test_phone_comparison_and_figures(phone):
    out, printed = phone
    r = rows(out / "comparison.csv")
    assert len(r) == 12 and all(v["study"] and v["ccbench"] for v in r.values())
    assert r["Low-End, 1 connection: Cubic / BBR"]["study"] == "364 / 325 Mbit/s"
    assert "BBR" in r["Low-End, 20 connections: Cubic / BBR"]["ccbench"]
    assert "tso_rtt_log = 0" in printed
    for stem in ("connections", "pacing", "stride"):
        assert (out / f"{stem}.png").stat().st_size > 1000 and (out / f"{stem}.svg").exists()
    assert (out / "index.html").read_text().count("data:image/svg+xml;base64,") == 3


@pytest.fixture(scope="module")
def vm(tmp_path_factory):
    root = tmp_path_factory.mktemp("elmenhorst")
    console = Console(file=io.StringIO(), width=200)
    elmenhorst2026.run(True, root / "out", 2, open_store(root / "store"), console, grid=VM)
    return root / "out", console.file.getvalue()


def test_vm_comparison_and_figures(vm):
    out, printed = vm
    r = rows(out / "comparison.csv")
    assert len(r) == 8 and all(v["study"] and v["ccbench"] for v in r.values())
    low = r["BBR at 10-25% CPU share, 10 ms slices and longer (100 Mbit/s)"]["ccbench"]
    # BBRv1 and v3 collapse; BBRv2 keeps 44 Mbit/s at 25% of 10 ms under the deadline
    # reservation (docs/replications.md), the highest of the three.
    assert float(low.split("at most ")[1].split(" ")[0]) < 50
    assert "below 1 BDP in" in r["Inflight at 25% share, 10 ms slices"]["ccbench"]
    # Beside the server preset, the vm preset (a KVM guest); its one fitted row says so.
    assert all(v["vm_preset"] and v["basis"] for v in r.values())
    fitted = [p for p, v in r.items() if v["basis"].startswith("fitted")]
    assert fitted == ["1 ms slices: share where BBRv1 / BBRv3 approach the link rate"]
    assert "half a burst" in printed
    for stem in ("share", "bandwidth", "patch", "spiral", "inflight"):
        assert (out / f"{stem}.png").stat().st_size > 1000, stem
    assert (out / "index.html").read_text().count("data:image/svg+xml;base64,") == 5
