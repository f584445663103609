"""The emulator process: ``python -m ccbench.kernel.emu CONFIG.json``.

Runs :func:`ccbench._core.emulate` (the Rust link emulator) with stdin as its control
channel and stdout for ``ready`` and the final report. It is a process of its own so
that the run can stop it by pid, and so that its TUN devices disappear with it however
it ends.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m ccbench.kernel.emu CONFIG.json", file=sys.stderr)
        return 2
    from .. import _core

    config = Path(argv[0]).read_text()
    try:
        _core.emulate(config, 0, 1)
    except RuntimeError as e:
        print(f"error: emulator: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
