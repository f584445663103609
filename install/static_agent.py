"""The VM engine's guest agent, built statically: the guest has no dynamic loader, so
glibc's static C runtime is linked in, for an explicit target so that the flag reaches
neither build scripts nor the workspace's ordinary build.

``python3 install/static_agent.py`` builds it (``make agent``); the build backend
(``install/build_backend.py``) builds it for every install.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
TARGET = "x86_64-unknown-linux-gnu"
BUILT = ROOT / "target" / TARGET / "release" / "ccbench-agent"


def build() -> Optional[Path]:
    """Build the agent; its path, or None with the reason on stderr where it cannot be
    built here (the rest of ccbench does not need it)."""
    why = None
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        why = f"the VM engine's guest is x86_64 Linux, and this is {platform.system()} {platform.machine()}"
    elif shutil.which("cargo") is None:
        why = "cargo is not on PATH"
    elif not (ROOT / "crates" / "ccbench-agent").is_dir():
        why = f"{ROOT} has no crates/ccbench-agent"
    if why is None:
        env = dict(os.environ, RUSTFLAGS="-C target-feature=+crt-static")
        got = subprocess.run(
            ["cargo", "build", "--release", "-p", "ccbench-agent", "--target", TARGET], cwd=ROOT, env=env
        )
        if got.returncode == 0 and BUILT.is_file():
            return BUILT
        why = f"cargo build failed (exit {got.returncode}; a static build needs glibc's libc.a: Debian's libc6-dev)"
    print(f"ccbench: the VM engine's guest agent was not built: {why}", file=sys.stderr)
    return None


if __name__ == "__main__":
    sys.exit(0 if build() else 1)
