"""``bpftool``'s struct_ops commands, and what the kernel said when it refused an object.

``bpftool struct_ops register OBJ`` loads every program of an object and registers
every struct_ops map in it; the registration outlives bpftool (the map holds itself
until ``bpftool struct_ops unregister id ID``). ``list`` names a map by its own name
(the map's symbol in the object, at most 15 bytes), ``dump`` shows its value, where a
``tcp_congestion_ops`` carries the algorithm's ``name``. Nothing here unregisters a map
but by its id.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any, Optional

from ..lifecycle import die_with_parent

# Loading a large object runs the verifier over every program: seconds at most.
TIMEOUT_S = 60.0
REGISTERED = re.compile(r"Registered (\S+) (\S+) id (\d+)")
# A map's state once it is unregistered (the kernel's enum bpf_struct_ops_state).
UNREGISTERED = "BPF_STRUCT_OPS_STATE_TOBEFREE"


class BpftoolError(RuntimeError):
    """bpftool failed or did not answer in time; the message is its last meaningful line."""


def path() -> Optional[str]:
    """The bpftool on PATH (Debian's is /usr/sbin/bpftool), or None."""
    return shutil.which("bpftool")


def run(*args: str, timeout_s: float = TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """``bpftool ARGS``; it dies with this process (a registration is never left half
    done by a bpftool that outlived its run's record)."""
    tool = path()
    if tool is None:
        raise BpftoolError("bpftool is not installed")
    try:
        return subprocess.run(
            [tool, *args],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            preexec_fn=die_with_parent(os.getpid()),
        )
    except subprocess.TimeoutExpired:
        raise BpftoolError(f"bpftool {' '.join(args[:2])} did not finish within {timeout_s:g} s") from None


@dataclass(frozen=True)
class StructOpsMap:
    """A struct_ops map: its id, its own name, for a congestion control the algorithm's
    name (None for other kinds of struct_ops), and whether it is registered. An
    unregistered map lives on until the last socket that ran its algorithm is gone."""

    id: int
    map: str
    name: Optional[str]
    state: Optional[str] = None

    @property
    def registered(self) -> bool:
        return self.state != UNREGISTERED


def maps() -> list[StructOpsMap]:
    """Every struct_ops map the kernel holds, registered or not (``bpftool -j
    struct_ops dump``)."""
    proc = run("-j", "struct_ops", "dump")
    if proc.returncode != 0:
        raise BpftoolError(f"bpftool struct_ops dump: {last_line(proc.stderr + proc.stdout)}")
    return parse_dump(proc.stdout)


def parse_dump(text: str) -> list[StructOpsMap]:
    """``bpftool -j struct_ops dump``'s output: a map's info followed by its value, in a
    JSON array (several maps) or bare and comma-separated (bpftool 7.1 for one map)."""
    items = _json_values(text)
    found = []
    for info, value in zip(items, items[1:]):
        map_info = info.get("bpf_map_info") if isinstance(info, dict) else None
        if not isinstance(map_info, dict) or not isinstance(value, dict) or "bpf_map_info" in value:
            continue
        body = next((v for v in value.values() if isinstance(v, dict)), {})
        data, common = body.get("data"), body.get("common")
        name = data.get("name") if isinstance(data, dict) else None
        state = common.get("state") if isinstance(common, dict) else None
        found.append(StructOpsMap(int(map_info["id"]), str(map_info.get("name", "")), name, state))
    return found


def _json_values(text: str) -> list[Any]:
    decoder = json.JSONDecoder()
    values: list[Any] = []
    at, text = 0, text.strip()
    while at < len(text):
        if text[at] in ", \n\t\r":
            at += 1
            continue
        value, at = decoder.raw_decode(text, at)
        values.extend(value if isinstance(value, list) else [value])
    return values


def register(obj: str) -> str:
    """Load object ``obj`` and register each of its struct_ops maps; what bpftool said.
    bpftool goes on to the next map when the kernel refuses one (a map that is no
    complete ``tcp_congestion_ops``, such as ``bpf_dctcp.c``'s ``dctcp_nouse``), and
    registers none when a program fails to load: which maps are registered is for the
    caller to check (:func:`maps`, or :func:`registered_ids` of the output)."""
    proc = run("struct_ops", "register", obj)
    return proc.stdout + proc.stderr


def registered_ids(output: str) -> dict[str, int]:
    """The maps ``bpftool struct_ops register`` said it registered: id by map name."""
    return {m.group(2): int(m.group(3)) for m in REGISTERED.finditer(output)}


def unregister(map_id: int) -> bool:
    """Unregister the struct_ops map ``map_id``; True if bpftool did."""
    return run("struct_ops", "unregister", "id", str(map_id)).returncode == 0


# Lines of a verifier log that describe the program's state, not the reason it failed.
_STATE_LINE = re.compile(
    r"^(\d+: |; |processed \d+ insns|verification time|stack depth|func '|mark_precise|"
    r"last_idx|regs=|from \d+ to \d+|Func#|Validating|\s*$)"
)
# libbpf's and bpftool's lines that only say that something failed.
_GENERIC = re.compile(r"failed to load object|failed to load: -?\d+|BPF program load failed|^Error: failed to load")


def refusal(output: str, map_name: Optional[str] = None) -> str:
    """What the kernel said when it refused an object: the verifier's last meaningful
    line (prefixed with the program's name), else bpftool's line on the struct_ops map
    ``map_name`` if there is one, else the first line of libbpf's or bpftool's that says
    more than "failed"."""
    lines = [line.rstrip() for line in output.splitlines()]
    about = f"can't register struct_ops {map_name}: "
    for line in lines if map_name else []:
        if about in line:
            said = line[line.index(about) + len(about) :]
            # bpftool 7.1 reads the wrong errno here and prints "Success".
            if said in ("Success", ""):
                said = (
                    "the kernel gave no reason (a tcp_congestion_ops needs ssthresh, undo_cwnd, and cong_avoid "
                    "or cong_control, and a name no other algorithm has)"
                )
            return f"struct_ops {map_name} was not registered: {said}"
    begin = next((i for i, line in enumerate(lines) if "-- BEGIN PROG LOAD LOG --" in line), None)
    if begin is not None:
        prog = re.search(r"prog '([^']+)'", lines[begin])
        end = next((i for i in range(begin + 1, len(lines)) if "-- END PROG LOAD LOG --" in lines[i]), len(lines))
        said = [line for line in lines[begin + 1 : end] if not _STATE_LINE.match(line)]
        if said:
            return f"prog '{prog.group(1)}': {said[-1]}" if prog else said[-1]
    meaningful = [line for line in lines if line.strip() and not _GENERIC.search(line)]
    if meaningful:
        return meaningful[0].removeprefix("libbpf: ").removeprefix("Error: ")
    return last_line(output) or "bpftool failed without a message"


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""
