"""The README and docs/ stay true: every link and anchor resolves, docs/index.md lists
every page, and the shell commands they show run.

Commands are taken from ```sh blocks (each line a command; a trailing ``\\`` continues
it) and from plain ``` blocks whose lines start with ``$ `` (the lines after such a
command, up to the next one, are its expected output, compared exactly). They run in
one scratch directory holding ``scenarios/`` and ``traces/``, page by page, so a page
can use the files an earlier command wrote. Not run: lines starting with ``sudo`` (the
kernel engine needs root), commands whose program is not installed, and blocks marked
with ``<!-- not run: <why> -->`` on the line before them (set-up, long studies,
placeholders such as HOST).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->")
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# Pages whose commands use files that another page's commands write.
NEEDS = {"reports.md": ["plots.md", "sweeps.md"]}


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    lines: list[str]
    not_run: Optional[str] = None


def blocks(page: Path) -> Iterator[Block]:
    lines = page.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            start, lang = i, lines[i][3:].strip()
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            before = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
            mark = NOT_RUN.search(before)
            yield Block(page, start + 1, lang, lines[start + 1 : j], mark.group(1) if mark else None)
            i = j + 1
        else:
            i += 1


def prose(page: Path) -> str:
    """The page without its fenced blocks (links there are code, not links)."""
    text = page.read_text(encoding="utf-8")
    return re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in prose(page).split("\n"):
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_links_and_anchors_resolve(page: Path) -> None:
    broken = []
    for target in LINK.findall(prose(page)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with anchor #{anchor} in {rel(dest)}")
    assert not broken, f"{rel(page)}: " + "; ".join(broken)


def test_the_index_lists_every_page() -> None:
    linked = {(DOCS / t.partition("#")[0]).resolve() for t in LINK.findall(prose(DOCS / "index.md"))}
    missing = [p.name for p in DOCS.glob("*.md") if p.name != "index.md" and p.resolve() not in linked]
    assert not missing, f"docs/index.md does not link {missing}"


def test_the_readme_is_a_map() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.split("\n")) <= 250
    assert "make example" in readme and "make test" in readme and "docs/index.md" in readme


@dataclass
class Command:
    page: Path
    line: int
    text: str
    expected: Optional[str] = None  # the output shown after a "$ " command


def commands(page: Path) -> Iterator[Command]:
    for b in blocks(page):
        if b.not_run is not None:
            continue
        if b.lang == "sh":
            pending = ""
            for k, line in enumerate(b.lines):
                pending += line.rstrip()
                if pending.endswith("\\"):
                    pending = pending[:-1] + " "
                    continue
                if pending.strip():
                    yield Command(page, b.line + 1 + k, pending.strip())
                pending = ""
        elif b.lang == "" and b.lines and b.lines[0].startswith("$ "):
            current: Optional[Command] = None
            for k, line in enumerate(b.lines):
                if line.startswith("$ "):
                    if current is not None:
                        yield current
                    current = Command(page, b.line + 1 + k, line[2:].strip(), expected="")
                elif current is not None:
                    current.expected = (current.expected or "") + line.rstrip() + "\n"
            if current is not None:
                yield current


@dataclass
class Sandbox:
    dir: Path
    env: dict[str, str]
    done: dict[str, list[str]] = field(default_factory=dict)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    d = tmp_path_factory.mktemp("docs")
    for name in ("scenarios", "traces"):
        (d / name).symlink_to(ROOT / name)
    # The ccbench (and flent) installed next to this Python come first.
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        COLUMNS="200",
        NO_COLOR="1",
    )
    return Sandbox(d, env)


def run_page(page: Path, box: Sandbox) -> list[str]:
    """Run a page's commands once; the failures, as messages."""
    if page.name in box.done:
        return box.done[page.name]
    failures: list[str] = []
    for need in NEEDS.get(page.name, []):
        failures += [f"(needed by {page.name}) {f}" for f in run_page(DOCS / need, box)]
    for cmd in commands(page):
        argv = shlex.split(cmd.text, comments=True)
        if not argv or argv[0] == "sudo" or shutil.which(argv[0], path=box.env["PATH"]) is None:
            continue
        done = subprocess.run(
            ["bash", "-c", cmd.text], cwd=box.dir, env=box.env, capture_output=True, text=True, timeout=600
        )
        where = f"{rel(page)}:{cmd.line}: {cmd.text}"
        if cmd.expected is not None:
            got = "".join(line.rstrip() + "\n" for line in (done.stdout + done.stderr).splitlines())
            if got.strip("\n") != cmd.expected.strip("\n"):
                failures.append(f"{where}: printed\n{got}instead of\n{cmd.expected}")
        elif done.returncode != 0:
            failures.append(f"{where}: exit status {done.returncode}: {done.stderr.strip()[-1000:]}")
    box.done[page.name] = failures
    return failures


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_commands_run(page: Path, sandbox: Sandbox) -> None:
    failures = run_page(page, sandbox)
    assert not failures, "\n".join(failures)
