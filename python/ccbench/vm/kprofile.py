"""The guest kernel's tick profile, by function.

With ``profile_guest`` the VM engine boots the guest with ``profile=4``, and the agent
returns ``/proc/profile`` over the run, summed by function with the guest's own
``/proc/kallsyms`` (``crates/ccbench-agent/src/kprofile.rs``): a tick counts where the
guest's timer tick interrupted its kernel (``profile_tick``); ticks in user space are not
counted, ticks in any module count as ``(modules)``. In a guest whose vCPU is held to a
share, a tick that fell due while the vCPU waited fires as it resumes, where its budget
ran out, so the profile samples the guest's CPU time as the host charges it.
"""

from __future__ import annotations

from typing import Any

# Bytes of kernel text per bucket: 2^SHIFT, small enough to tell functions apart.
SHIFT = 4


def by_function(profile: dict[str, Any], top: int = 30) -> dict[str, Any]:
    """The ``top`` most ticked functions first, each with its share of all ticks."""
    ticks = int(profile["ticks"])
    ranked = sorted(profile["functions"].items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return {
        "ticks": ticks,
        "functions": [{"function": f, "ticks": n, "share": round(n / ticks, 4) if ticks else 0.0} for f, n in ranked],
    }
