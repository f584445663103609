"""The progress bar of a sweep on stderr: runs done of runs to do, elapsed time, ETA."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Optional


class SweepProgress:
    """A rich progress bar; does nothing when ``enabled`` is false."""

    def __init__(self, name: str, total: int, enabled: bool = True) -> None:
        self.name = name
        self.total = total
        self.failed = 0
        self._progress: Any = None
        self._task: Any = None
        if enabled and total > 0:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("runs"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
            )

    def __enter__(self) -> "SweepProgress":
        if self._progress is not None:
            self._progress.start()
            self._task = self._progress.add_task(self._description(), total=self.total)
        return self

    def advance(self, failed: bool = False) -> None:
        if failed:
            self.failed += 1
        if self._progress is not None:
            self._progress.update(self._task, advance=1, description=self._description())

    def _description(self) -> str:
        from rich.markup import escape

        return escape(f"sweep {self.name}" + (f" ({self.failed} failed)" if self.failed else ""))

    def __exit__(
        self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
