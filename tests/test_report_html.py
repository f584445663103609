"""HTML reports of a run directory and of a sweep: files, embedding, determinism, and
the page as a real headless browser renders it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

import ccbench
from ccbench.analysis import record_from_result
from ccbench.report_html import ReportError, choose_axes, sweep_report
from ccbench import engines

from conftest import run_cli

CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMEDRIVER = ("/usr/bin/chromedriver",)


def _sweep_records(sweep: str = "tiny") -> list[tuple[object, ccbench.Result]]:
    """A 2 x 2 grid (rate x buffer), BBR and Cubic, two seeds, plus one mixed run."""
    out = []
    for rate in ("10Mbit", "20Mbit"):
        for buffer in ("0.25bdp", "4bdp"):
            for cca in ("bbr", "cubic"):
                for seed in (1, 2):
                    sc = ccbench.Scenario.from_flags(
                        cca=cca, rate=rate, rtt="20ms", buffer=buffer, loss="0.2%", duration="2s", seed=seed
                    )
                    result = ccbench.run(sc)
                    point = {"link.rate": rate, "link.buffer": buffer, "flows[0].cca": cca}
                    out.append((record_from_result(result, point, seed - 1, sweep), result))
    for buffer in ("0.25bdp", "4bdp"):
        sc = ccbench.Scenario.from_flags(
            cca="bbr,cubic", rate="20Mbit", rtt="20ms", buffer=buffer, loss="0.2%", duration="2s"
        )
        result = ccbench.run(sc)
        out.append((record_from_result(result, {"link.buffer": buffer}, 0, sweep), result))
    return out


@pytest.fixture(scope="module")
def records():
    return [r for r, _ in _sweep_records()]


@pytest.fixture(scope="module")
def sweep_page(records, tmp_path_factory) -> Path:
    return sweep_report(records, tmp_path_factory.mktemp("sweep"), name="tiny")


def test_sweep_page_embeds_every_figure_and_writes_files_beside_it(sweep_page: Path):
    html = sweep_page.read_text()
    out = sweep_page.parent
    for stem in (
        "ratio_bbr_cubic",
        "heatmap_goodput_mbps_bbr",
        "heatmap_goodput_mbps_cubic",
        "cdfs",
        "goodput_delay",
        "retransmissions",
        "sharing",
    ):
        for fmt in ("png", "svg"):
            assert (out / f"{stem}.{fmt}").stat().st_size > 1000, stem
        assert f'href="{stem}.svg"' in html
    assert html.count('src="data:image/svg+xml;base64,') == 7
    for name in ("runs.csv", "flows.csv", "means.csv"):
        assert (out / name).stat().st_size > 0
    assert "Means with 95% confidence intervals" in html
    assert " ± " in html  # two repetitions give intervals
    assert "<script" not in html and "http" not in html.split("</style>")[1]


def test_sweep_page_is_byte_identical_for_the_same_records(records, sweep_page: Path, tmp_path: Path):
    again = sweep_report(records, tmp_path, name="tiny")
    assert again.read_bytes() == sweep_page.read_bytes()
    assert (tmp_path / "ratio_bbr_cubic.png").read_bytes() == (sweep_page.parent / "ratio_bbr_cubic.png").read_bytes()


def test_axes_follow_the_study_layout_and_reject_unswept_columns():
    assert choose_axes(["rate_mbps", "rtt_ms", "buffer_bdp"]) == ("buffer_bdp", "rtt_ms", "rate_mbps")
    assert choose_axes(["loss_pct"]) == ("loss_pct", None, None)
    assert choose_axes(["rate_mbps", "buffer_bdp"], x="rate_mbps") == ("rate_mbps", "buffer_bdp", None)
    with pytest.raises(ReportError, match="does not vary"):
        choose_axes(["rate_mbps"], y="rtt_ms")


def test_report_of_a_stored_sweep_from_the_command_line(tmp_path: Path):
    store_api = pytest.importorskip("ccbench.store")
    store = store_api.open_store(tmp_path / "store")
    version = engines.get("sim").code_version()
    for local, result in _sweep_records("cli-sweep")[:8]:
        run_id = store_api.run_id_for(local.scenario_hash, local.seed, local.engine, version)
        store.add(
            store_api.RunRecord(
                run_id=run_id,
                scenario_hash=local.scenario_hash,
                seed=local.seed,
                engine=local.engine,
                code_version=version,
                sweep=local.sweep,
                point=local.point,
                repetition=local.repetition,
                scenario=local.scenario,
                summary=local.summary,
                series_dir=None,
            ),
            result,
        )
    out = tmp_path / "report"
    done = run_cli(
        "report", "--sweep", "cli-sweep", "--store", str(tmp_path / "store"), "--out", str(out), "--format", "svg"
    )
    assert done.returncode == 0, done.stderr
    assert (out / "index.html").exists() and (out / "cdfs.svg").exists() and not (out / "cdfs.png").exists()
    bad = run_cli("report", "--sweep", "nope", "--store", str(tmp_path / "store"))
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: --sweep: no runs of sweep 'nope'; stored sweeps: cli-sweep"
    bad = run_cli(
        "report",
        "--sweep",
        "cli-sweep",
        "--store",
        str(tmp_path / "store"),
        "--x",
        "loss_pct",
        "--out",
        str(tmp_path / "bad"),
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error: --x: 'loss_pct' does not vary")
    assert not (tmp_path / "bad").exists(), "bad input writes nothing"


def test_report_of_a_run_directory(tmp_path: Path):
    run_dir = tmp_path / "run"
    assert (
        run_cli("run", "--cca", "bbr,cubic", "--rate", "10Mbit", "--duration", "2s", "--out", str(run_dir)).returncode
        == 0
    )
    done = run_cli("report", str(run_dir))
    assert done.returncode == 0, done.stderr
    page = run_dir / "report" / "index.html"
    html = page.read_text()
    assert html.count("data:image/svg+xml;base64,") == 3  # flow0, flow1, link
    assert "Bottleneck" in html and "bbr" in html
    missing = run_cli("report", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and missing.stderr.startswith("error: ")
    assert run_cli("report").returncode == 2


# The page in a real browser


def _browser():
    webdriver = pytest.importorskip("selenium.webdriver")
    binary = next((b for b in CHROMIUM if Path(b).exists()), None)
    driver_path = next((d for d in CHROMEDRIVER if Path(d).exists()), shutil.which("chromedriver"))
    if binary is None or driver_path is None:
        pytest.skip("chromium and chromium-driver are not installed (make test installs them as root)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1300,900",
        "--allow-file-access-from-files",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=options)


def _check_in_browser(page: Path, figures: int) -> None:
    driver = _browser()
    try:
        driver.set_page_load_timeout(30)
        driver.get(page.resolve().as_uri())
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight,"
            " i.getBoundingClientRect().width]);"
        )
        assert len(images) == figures
        for complete, width, height, shown in images:
            assert complete and width > 100 and height > 100 and shown > 100
        assert driver.find_element("tag name", "h1").text.startswith("ccbench")
        assert driver.execute_script("return document.querySelectorAll('table tbody tr').length;") > 0
        errors = [e for e in driver.get_log("browser") if e.get("level") in ("SEVERE", "ERROR")]
        assert errors == []
    finally:
        driver.quit()


def test_sweep_page_renders_in_a_headless_browser(sweep_page: Path):
    _check_in_browser(sweep_page, figures=len(re.findall(r"<img ", sweep_page.read_text())))


def test_run_page_renders_in_a_headless_browser(tmp_path: Path):
    from ccbench.report_html import run_report

    run = ccbench.run(ccbench.Scenario.from_flags(cca="bbr3", rate="10Mbit", duration="2s"))
    run.save(tmp_path / "run")
    _check_in_browser(run_report(tmp_path / "run"), figures=2)
