"""A run written in other tools' formats: flent's data files and ``iperf3 -J`` reports."""

from __future__ import annotations

from typing import Any, Mapping


def engine_words(summary: Mapping[str, Any]) -> str:
    """Which engine produced the run, in words, for the files' free-text fields."""
    if summary.get("engine") == "kernel" and summary.get("kernel"):
        return f"ccbench {summary['version']} on the Linux {summary['kernel']} kernel"
    if summary.get("engine") == "kernel":
        return f"ccbench {summary['version']} on the Linux kernel"
    return f"ccbench {summary['version']} simulator"
