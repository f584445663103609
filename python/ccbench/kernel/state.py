"""What a kernel run has created, recorded so that it can always be removed.

Each run owns one state file, ``/run/ccbench/<id>.json``, written before anything is
created and updated as namespaces, devices and processes appear. A run is *stale* when
its owner process is gone (its pid no longer exists, or now belongs to a process that
started at a different time). :func:`cleanup_stale` removes what stale runs recorded,
and only that: processes by pid (after checking their start time, so a reused pid is
never signalled), network namespaces, devices and tracing instances whose names carry
the ``ccb-`` prefix and appear in the record, a tracefs mount the run made, struct_ops
maps (BPF congestion controls) whose algorithm name, map name and id are the recorded
ones, and the run's working directory under the state directory.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

STATE_DIR = Path("/run/ccbench")
PREFIX = "ccb-"


def _stat_fields(pid: int) -> Optional[list[str]]:
    """Fields 3 onwards of /proc/PID/stat (state, ppid, ...), None if there is no such
    process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) may contain spaces; fields after it are plain.
    return stat[stat.rindex(")") + 2 :].split()


def process_start_time(pid: int) -> Optional[int]:
    """The start time of process ``pid`` in clock ticks since boot; None if it is gone
    or a zombie."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def is_alive(pid: int, start: Optional[int]) -> bool:
    current = process_start_time(pid)
    return current is not None and (start is None or current == start)


@dataclass
class Proc:
    pid: int
    start: Optional[int]
    role: str


@dataclass
class StructOps:
    """A BPF congestion control the run registers: the algorithm's name (unique to the
    run), the map's own name, and the map's id once the kernel has given one. ``after``
    is the highest struct_ops map id the kernel held just before the registration, so
    that a map registered by a run killed before it recorded the id is still told
    apart (the kernel hands out map ids in increasing order)."""

    name: str
    map: str
    id: Optional[int] = None
    after: int = 0

    def matches(self, held: Any) -> bool:
        """Whether ``held`` (a ``bpftool.StructOpsMap``) is this registration."""
        if held.name != self.name or held.map != self.map:
            return False
        return held.id == self.id if self.id is not None else held.id > self.after


@dataclass
class RunState:
    id: str
    owner_pid: int
    owner_start: Optional[int]
    created_s: float
    namespaces: list[str] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    processes: list[Proc] = field(default_factory=list)
    # Tracing instances (tracefs directories named with PREFIX) and the tracefs mount
    # made for them when the host had none.
    traces: list[str] = field(default_factory=list)
    mounts: list[str] = field(default_factory=list)
    # BPF congestion controls, recorded before they are registered.
    struct_ops: list[StructOps] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return STATE_DIR / f"{self.id}.json"

    @property
    def workdir(self) -> Path:
        return STATE_DIR / self.id

    @classmethod
    def create(cls) -> "RunState":
        """A fresh run with a unique id; its state file exists on return."""
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        pid = os.getpid()
        for _ in range(100):
            run_id = secrets.token_hex(3)
            st = cls(run_id, pid, process_start_time(pid), time.time())
            if _name_in_use(st.names_for()):
                continue
            try:
                fd = os.open(st.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue
            os.close(fd)
            st.save()
            st.workdir.mkdir(mode=0o700)
            return st
        raise RuntimeError("could not find a free run id")

    def names_for(self) -> dict[str, str]:
        """Namespace and device names of this run (at most 15 bytes each)."""
        return {
            "ns_sender": f"{PREFIX}{self.id}-snd",
            "ns_receiver": f"{PREFIX}{self.id}-rcv",
            "tun_sender": f"{PREFIX}{self.id}-s",
            "tun_receiver": f"{PREFIX}{self.id}-r",
        }

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        os.replace(tmp, self.path)

    def add_namespace(self, name: str) -> None:
        self.namespaces.append(name)
        self.save()

    def add_device(self, name: str) -> None:
        self.devices.append(name)
        self.save()

    def add_process(self, pid: int, role: str) -> None:
        self.processes.append(Proc(pid, process_start_time(pid), role))
        self.save()

    def add_trace(self, path: str) -> None:
        self.traces.append(path)
        self.save()

    def add_mount(self, path: str) -> None:
        self.mounts.append(path)
        self.save()

    def add_struct_ops(self, entries: list[StructOps]) -> None:
        self.struct_ops.extend(entries)
        self.save()

    def set_struct_ops_ids(self, ids: dict[str, int]) -> None:
        """The map ids the kernel gave, by algorithm name."""
        for entry in self.struct_ops:
            if entry.name in ids:
                entry.id = ids[entry.name]
        self.save()

    @classmethod
    def load(cls, path: Path) -> Optional["RunState"]:
        try:
            d: dict[str, Any] = json.loads(path.read_text())
            d["processes"] = [Proc(**p) for p in d.get("processes", [])]
            d["struct_ops"] = [StructOps(**s) for s in d.get("struct_ops", [])]
            return cls(**d)
        except (OSError, ValueError, TypeError):
            return None

    def is_stale(self) -> bool:
        return not is_alive(self.owner_pid, self.owner_start)


def _name_in_use(names: dict[str, str]) -> bool:
    existing = set(list_namespaces()) | set(list_devices())
    return any(n in existing for n in names.values())


def list_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def list_devices(namespace: Optional[str] = None) -> list[str]:
    cmd = ["ip", "-o", "link", "show"] if namespace is None else ["ip", "-n", namespace, "-o", "link", "show"]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    names = []
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            names.append(parts[1].strip().split("@")[0])
    return names


def kill_process(pid: int, start: Optional[int], grace_s: float = 1.0) -> bool:
    """SIGTERM, then SIGKILL after ``grace_s``, to ``pid`` if it is still the process
    that was recorded. True if it was running."""
    if not is_alive(pid, start):
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        _reap(pid)
        if not is_alive(pid, start):
            return True
        time.sleep(0.02)
    if is_alive(pid, start):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _reap(pid)
    return True


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def delete_namespace(name: str) -> bool:
    if not name.startswith(PREFIX) or name not in list_namespaces():
        return False
    subprocess.run(["ip", "netns", "delete", name], capture_output=True)
    return True


def delete_device(name: str) -> bool:
    """A recorded device left in the root namespace (normally devices vanish with the
    emulator that holds them)."""
    if not name.startswith(PREFIX) or name not in list_devices():
        return False
    subprocess.run(["ip", "link", "delete", name], capture_output=True)
    return True


def delete_trace(path: str) -> bool:
    """A recorded tracing instance (a tracefs directory whose name has the prefix)."""
    if not Path(path).name.startswith(PREFIX) or not Path(path).is_dir():
        return False
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True


def unmount(path: str) -> bool:
    """A recorded mount, if it is still mounted (and not busy)."""
    mounted = any(
        len(line.split()) > 1 and line.split()[1] == path for line in Path("/proc/mounts").read_text().splitlines()
    )
    return mounted and subprocess.run(["umount", path], capture_output=True).returncode == 0


def unregister_struct_ops(recorded: list[StructOps]) -> tuple[list[str], bool]:
    """Unregister the struct_ops maps that are the ``recorded`` ones (algorithm name, map
    name and id) and nothing else; a line per map, and False if bpftool could not tell
    which maps the kernel holds (the record is then kept for a later cleanup)."""
    from . import bpftool

    if not recorded:
        return [], True
    try:
        held = bpftool.maps()
    except bpftool.BpftoolError:
        return [], False
    removed = []
    for m in held:
        if m.registered and any(r.matches(m) for r in recorded) and bpftool.unregister(m.id):
            removed.append(f"BPF congestion control {m.name} (struct_ops map {m.map}, id {m.id})")
    return removed, True


def remove_run(st: RunState) -> list[str]:
    """Remove everything ``st`` recorded; returns a line per thing removed."""
    removed: list[str] = []
    for p in reversed(st.processes):
        if kill_process(p.pid, p.start):
            removed.append(f"process {p.pid} ({p.role})")
    unregistered, known = unregister_struct_ops(st.struct_ops)
    removed += unregistered
    for ns in st.namespaces:
        if delete_namespace(ns):
            removed.append(f"namespace {ns}")
    for dev in st.devices:
        if delete_device(dev):
            removed.append(f"device {dev}")
    for path in st.traces:
        if delete_trace(path):
            removed.append(f"tracing instance {path}")
    for path in st.mounts:
        if unmount(path):
            removed.append(f"mount {path}")
    if st.workdir.is_dir():
        shutil.rmtree(st.workdir, ignore_errors=True)
    if not known:
        return removed
    for path in (st.path, st.path.with_suffix(".tmp")):
        try:
            path.unlink()
        except FileNotFoundError:
            pass
    return removed


def stale_runs() -> list[RunState]:
    if not STATE_DIR.is_dir():
        return []
    runs = []
    for path in sorted(STATE_DIR.glob("*.json")):
        st = RunState.load(path)
        if st is not None and st.path == path and st.is_stale():
            runs.append(st)
    return runs


def live_runs() -> list[RunState]:
    if not STATE_DIR.is_dir():
        return []
    runs = []
    for path in sorted(STATE_DIR.glob("*.json")):
        st = RunState.load(path)
        if st is not None and not st.is_stale():
            runs.append(st)
    return runs


def cleanup_stale() -> list[str]:
    """Remove the leftovers of every stale run; a line per thing removed."""
    removed: list[str] = []
    for st in stale_runs():
        removed.extend(f"run {st.id}: {what}" for what in remove_run(st))
        if not st.path.exists():
            removed.append(f"run {st.id}: state file")
    return removed


@contextmanager
def recorded_run() -> Iterator[tuple[RunState, list[str]]]:
    """A run recorded before it creates anything: stale runs' leftovers are removed
    first (the lines saying what), and everything the run records is removed when the
    block ends, however it ends."""
    removed = cleanup_stale()
    st = RunState.create()
    try:
        yield st, removed
    finally:
        remove_run(st)
