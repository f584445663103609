"""The ``ccbench`` command loads only what the command at hand needs: ``--help`` and a
plain ``run`` start without the data-analysis stack (benches/cli_startup.py times them)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pandas", "matplotlib", "duckdb", "dask", "sklearn")

# Runs the console entry point in a fresh interpreter; the last line on stderr says which
# of HEAVY it loaded.
PROBE = """
import json, sys
from ccbench.cli import main
status = main({args!r})
sys.stdout.flush()
print(json.dumps({{"status": status, "loaded": sorted(m for m in {heavy!r} if m in sys.modules)}}), file=sys.stderr)
"""


def probe(*args: str) -> dict:
    code = PROBE.format(args=list(args), heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stderr.splitlines()[-1]), output=done.stdout)


def test_help_loads_no_heavy_library():
    got = probe("--help")
    assert got["status"] == 0 and "Commands:" in got["output"]
    assert got["loaded"] == []


def test_a_run_that_prints_its_summary_loads_no_heavy_library():
    got = probe("run", "--cca", "cubic", "--duration", "1s", "--json")
    assert got["status"] == 0 and json.loads(got["output"])["duration_s"] == 1.0
    assert got["loaded"] == []


def test_importing_the_package_loads_neither_pydantic_nor_pandas():
    code = "import sys, ccbench.cli; print(sorted(m for m in ('pandas', 'pydantic', 'numpy') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
