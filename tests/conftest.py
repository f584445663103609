"""Shared helpers: running the CLI in a subprocess, and the end-to-end gate."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"

# A scenario small enough to simulate in a moment.
SHORT_TOML = """\
seed = 3
duration = "2s"
interval = "100ms"

[link]
rate = "10Mbit"
rtt = "20ms"
buffer = "1bdp"

[[flows]]
cca = "cubic"
count = 2
"""


@dataclass
class Completed:
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str, cwd: Path | None = None) -> Completed:
    """``ccbench ARGS`` in a fresh interpreter, as a user would run it."""
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1")
    proc = subprocess.run(
        [sys.executable, "-m", "ccbench", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )
    return Completed(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def short_scenario(tmp_path: Path) -> Path:
    path = tmp_path / "short.toml"
    path.write_text(SHORT_TOML)
    return path
