"""A run written in other tools' formats: flent's data files and ``iperf3 -J`` reports."""

from __future__ import annotations

from typing import Any, Mapping


def real_kernel(summary: Mapping[str, Any]) -> bool:
    """Whether a real Linux stack sent the run (the kernel and VM engines record its
    release as ``kernel``; the simulator records none)."""
    return "kernel" in summary


def engine_words(summary: Mapping[str, Any]) -> str:
    """Which engine produced the run, in words, for the files' free-text fields."""
    if real_kernel(summary) and summary.get("kernel"):
        where = " in a VM" if "vm" in summary else ""
        return f"ccbench {summary['version']} on the Linux {summary['kernel']} kernel{where}"
    if real_kernel(summary):
        return f"ccbench {summary['version']} on the Linux kernel"
    return f"ccbench {summary['version']} simulator"
