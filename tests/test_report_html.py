"""HTML reports of a run directory and of a sweep: files, embedding, determinism, and
the page as a real headless browser renders it."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pytest

import ccbench
from ccbench.analysis import record_from_result
from ccbench.report_html import Page, ReportError, Section, Table, choose_axes, sweep_report, write_page
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


def test_columns_are_numeric_or_text_by_their_cells(tmp_path: Path):
    from ccbench.report_html.page import column_kinds, is_number

    for cell in ("12.34 ± 0.56", "1,234", "-3.5e-4", "92.6%", "1.2x", "25 pkt", "20Mbit", "2.00 ✗; 0.79 ✗"):
        assert is_number(cell), cell
    assert is_number("57.9 / 30.4 [29.0–31.2] (1.90) ✓")
    for cell in ("bbr3", "bbr+cubic", "cubic 20Mbit 20ms 1bdp", "5 seconds", "n/a", ""):
        assert not is_number(cell), cell
    sentence = "BBR's share depends on the buffer: larger with shallow buffers"
    rows = [["bbr", "1.00", "-", sentence], ["cubic", "n/a", "–", "short"]]
    assert column_kinds(["cca", "ratio", "none", "finding"], rows) == ["text", "num", "num", "text prose"]
    page = Page(
        "t",
        sections=[Section("s", tables=[Table("t", ["cca", "goodput", "finding"], [["bbr", "9.35 ± 0.11", "a < b"]])])],
    )
    html = write_page(page, tmp_path).read_text()
    assert '<th class="num">goodput</th>' in html
    assert html.count("white-space: nowrap") == 1 and ".num { text-align: right; white-space: nowrap;" in html
    assert '<td class="num">9.35<span class="ci"> ± 0.11</span></td>' in html
    assert '<td class="text">a &lt; b</td>' in html


# The page in a real browser


def _browser(user_data: Path):
    """Headless Chromium with its profile in ``user_data`` (a fresh directory)."""
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
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-dev-shm-usage",
        f"--user-data-dir={user_data}",
        "--window-size=1300,900",
        "--allow-file-access-from-files",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=options)


def _check_in_browser(page: Path, figures: int) -> None:
    with tempfile.TemporaryDirectory() as profile:
        _check_images_and_console(_browser(Path(profile)), page, figures)


def _check_images_and_console(driver, page: Path, figures: int) -> None:
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


# Tables at the widths of a laptop and of a narrow window: each kind of page the project
# writes, measured in the browser and kept as a screenshot in the test's tmp_path.

WIDTHS = (1280, 800)

# A replication with one run per point: enough for every row of the findings table.
SMALL_CAO = dict(
    rates=("10Mbit",),
    rtts=("20ms",),
    buffers=("5KB", "200KB"),
    losses=("0%", "20%"),
    sharing_buffers=("0.25bdp", "4bdp"),
    duration="2s",
    repetitions=1,
    loss_point=("10Mbit", "20ms", "1bdp"),
    sharing_point=("10Mbit", "20ms"),
)

# What the browser measures: problems (a table wider than the window or scrolling inside
# its box, a cell whose content overflows it, a numeric cell that wraps or is not
# right-aligned and tabular, a text cell that cannot wrap), and the longest sentence.
LAYOUT_JS = """
const view = document.documentElement.clientWidth;
const problems = [];
const title = (el) => (el.closest('.scroll').previousElementSibling || {}).textContent;
const lines = (rects) => {
  let count = 0, bottom = -Infinity;
  for (const r of [...rects].sort((a, b) => a.top - b.top)) {
    if (r.top >= bottom - 1) { count += 1; bottom = r.bottom; } else { bottom = Math.max(bottom, r.bottom); }
  }
  return count;
};
const textRects = (cell) => {
  const out = [];
  const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    if (!n.textContent.trim()) continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    for (const b of range.getClientRects()) if (b.width > 0) out.push({node: n, top: b.top, bottom: b.bottom, right: b.right});
  }
  return out;
};
if (document.documentElement.scrollWidth > view) problems.push(`page scrolls sideways: ${document.documentElement.scrollWidth} > ${view}`);
let stacked = 0, numeric = 0, text = 0, longest = null;
for (const table of document.querySelectorAll('table')) {
  const box = table.getBoundingClientRect(), scroll = table.closest('.scroll');
  if (box.left < 0 || box.right > view + 0.5) problems.push(`${title(table)}: table ${Math.round(box.width)} px wide, window ${view}`);
  if (scroll.scrollWidth > scroll.clientWidth) problems.push(`${title(table)}: scrolls sideways in its box`);
  for (const cell of table.querySelectorAll('th, td')) {
    const name = `${title(table)}: ${cell.tagName} "${cell.textContent.slice(0, 40)}"`;
    const style = getComputedStyle(cell);
    if (cell.scrollWidth > cell.clientWidth + 1) problems.push(`${name} overflows its cell`);
    if (cell.tagName !== 'TD' || !cell.textContent.trim()) continue;
    const rects = textRects(cell);
    if (cell.classList.contains('num')) {
      numeric += 1;
      if (style.whiteSpace !== 'nowrap' || style.textAlign !== 'right' || !style.fontVariantNumeric.includes('tabular-nums'))
        problems.push(`${name}: ${style.whiteSpace}, ${style.textAlign}, ${style.fontVariantNumeric}`);
      for (const node of new Set(rects.map(r => r.node)))
        if (lines(rects.filter(r => r.node === node)) !== 1) problems.push(`${name}: "${node.textContent}" wraps`);
      const ci = cell.querySelector('.ci');
      const below = ci !== null && getComputedStyle(ci).display === 'block';
      stacked += below ? 1 : 0;
      if (lines(rects) !== (below ? 2 : 1)) problems.push(`${name}: ${lines(rects)} lines`);
      const edge = cell.getBoundingClientRect().right - parseFloat(style.paddingRight) - parseFloat(style.borderRightWidth);
      for (const r of rects) {
        const right = Math.max(...rects.filter(o => Math.abs(o.top - r.top) < 1).map(o => o.right));
        if (Math.abs(right - edge) > 1.5) problems.push(`${name}: a line ends ${(edge - right).toFixed(1)} px left of the cell's edge`);
      }
    } else {
      text += 1;
      if (style.whiteSpace !== 'normal' || style.textAlign !== 'left') problems.push(`${name}: ${style.whiteSpace}, ${style.textAlign}`);
      const chars = cell.textContent.length;
      if (longest === null || chars > longest.chars)
        longest = {chars, lines: lines(rects), height: cell.getBoundingClientRect().height - parseFloat(style.paddingTop)
                   - parseFloat(style.paddingBottom), line: parseFloat(style.lineHeight), text: cell.textContent};
    }
  }
}
return {view, problems, stacked, numeric, text, longest, tables: document.querySelectorAll('table').length};
"""


@pytest.fixture(scope="module")
def run_page(tmp_path_factory) -> Path:
    from ccbench.report_html import run_report

    out = tmp_path_factory.mktemp("run")
    ccbench.run(ccbench.Scenario.from_flags(cca="bbr,cubic", rate="10Mbit", duration="2s")).save(out / "run")
    return run_report(out / "run")


@pytest.fixture(scope="module")
def replication_page(tmp_path_factory) -> Path:
    import io

    from rich.console import Console

    from ccbench.replicate import cao2019

    store_api = pytest.importorskip("ccbench.store")
    root = tmp_path_factory.mktemp("cao")
    console = Console(file=io.StringIO(), width=200)
    cao2019.run(True, root / "out", 2, store_api.open_store(root / "store"), console, grid=cao2019.Grid(**SMALL_CAO))
    return root / "out" / "index.html"


@pytest.fixture(scope="module")
def validate_page(tmp_path_factory) -> Path:
    import json

    from ccbench.validate.report import build
    from ccbench.validate.tables import to_json
    from test_validate_grid import _results

    return build(json.loads(json.dumps(to_json(_results(), [], {"command": "test"}))), tmp_path_factory.mktemp("v"))


def _layout(driver, page: Path, width: int, shot: Path) -> dict:
    """The page at a window ``width`` px wide: LAYOUT_JS's measures, and a screenshot of
    the whole page in ``shot``."""
    driver.set_window_size(width, 900)
    inner = driver.execute_script("return window.innerWidth;")
    if inner != width:
        driver.set_window_size(2 * width - inner, 900)
    driver.get(page.resolve().as_uri())
    assert driver.execute_script("return window.innerWidth;") == width
    layout = driver.execute_script(LAYOUT_JS)
    for _ in range(2):  # without the scroll bar, figures get wider and the page taller
        height, chrome = driver.execute_script(
            "return [document.documentElement.scrollHeight, window.outerHeight - window.innerHeight];"
        )
        driver.set_window_size(driver.get_window_size()["width"], min(height + chrome, 16000))
    assert driver.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(shot.read_bytes()[16:20], "big") == width
    return layout


@pytest.mark.parametrize("kind", ["run", "sweep", "replication", "validate"])
def test_tables_fit_the_window_text_wraps_and_numbers_stay_aligned(kind: str, request, tmp_path: Path):
    page = request.getfixturevalue(f"{kind}_page")
    driver = _browser(tmp_path / "profile")
    try:
        for width in WIDTHS:
            layout = _layout(driver, page, width, tmp_path / f"{kind}-{width}.png")
            assert layout["problems"] == [], f"{kind} at {width} px"
            assert layout["tables"] > 0 and layout["numeric"] + layout["text"] > 0
            longest = layout["longest"]
            if longest["chars"] > 80:  # wider than a sentence column's 30em at any window width
                assert longest["lines"] > 1 and longest["height"] > 1.5 * longest["line"], (width, longest)
            if kind == "replication":
                assert longest["lines"] > 2, (width, longest)
            if kind == "sweep":  # a mean's interval moves below it in a narrow window only
                assert (layout["stacked"] > 0) == (width < 900), (width, layout["stacked"])
    finally:
        driver.quit()
