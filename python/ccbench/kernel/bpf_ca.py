"""Congestion controls given as compiled BPF objects: ``cca = "bpf:PATH"``.

A flow's ``cca`` arrives as ``bpf:/abs/x.bpf.o``, or ``bpf:/abs/x.bpf.o:MAP`` when the
object holds several ``tcp_congestion_ops`` struct_ops maps (the kernel's
``bpf_dctcp.c`` has ``dctcp_nouse`` and ``dctcp``); its ``params`` are the object's
global variables by name. For a run:

* :func:`prepare`: one copy of the object per distinct set of globals, written by
  ``_core.bpf_prepare`` with those values and the algorithm of every struct_ops map in
  it renamed ``ccb<token><k>``, the token the run's own (at most 15 bytes: the kernel's
  ``TCP_CA_NAME_MAX`` less its NUL). ``bpftool struct_ops register`` registers every
  map of an object and the kernel keeps one algorithm per name, so every map is renamed
  and two runs never meet.
* :func:`register` (the kernel engine, on this host): the names recorded in the run's
  state file before bpftool runs, the map ids once the kernel has them. The run's
  removal unregisters exactly those (``state.unregister_struct_ops``), on success, on
  error, on Ctrl-C, SIGTERM, and after a ``kill -9`` at the next start or
  ``ccbench kernel cleanup``.
* The VM engine registers the same copies inside its guest (``ccbench.vm.bpf``).

The flows choose the algorithm per socket (``TCP_CONGESTION``), which root may do with
one that ``tcp_allowed_congestion_control`` does not list. No namespace gets it as its
default: that would have to be listed there.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from ..bpf.name import is_bpf, parse
from ..errors import ScenarioError
from . import bpftool
from .host import KernelEngineError, available_congestion_control
from .state import RunState, StructOps

if TYPE_CHECKING:
    from .plan import FlowPlan, Plan

NAME_PREFIX = "ccb"
# include/net/tcp.h: the algorithm negotiates ECN whatever the sysctl says.
TCP_CONG_NEEDS_ECN = 0x2
# The kernel's TCP_CA_NAME_MAX (16) less the NUL; BPF_OBJ_NAME_LEN (16) for a map's name.
NAME_MAX = 15
MAP_NAME_MAX = 15


@dataclass(frozen=True)
class Copy:
    """An object prepared for one registration: the object as a flow named it and its
    digest, the globals set in the copy, and each struct_ops map's new algorithm name."""

    source: str
    sha256: str
    params: dict[str, Any]
    names: dict[str, str]  # map symbol -> algorithm name
    path: Path
    field: str  # the first flow entry that uses it (``flows[0].cca``), for errors

    def map_names(self) -> dict[str, str]:
        """Algorithm name -> the map's own name as the kernel keeps it."""
        return {name: symbol[:MAP_NAME_MAX] for symbol, name in self.names.items()}


@dataclass
class BpfSet:
    """A run's BPF congestion controls: the copies, each flow's (copy, map symbol), and
    the map ids the kernel (the host's or the guest's) gave, by algorithm name."""

    copies: list[Copy]
    flows: dict[int, tuple[int, str]]
    ids: dict[str, int] = field(default_factory=dict)
    # What a reader should know: maps of an object that no flow runs and the kernel
    # did not register.
    notes: list[str] = field(default_factory=list)

    def needs_ecn(self, flow: int) -> bool:
        """Whether flow ``flow``'s map asks for ECN (``TCP_CONG_NEEDS_ECN``)."""
        from ..bpf.name import describe

        copy, symbol = self.flows[flow]
        maps = describe(str(self.copies[copy].path))["maps"]
        return any(m["symbol"] == symbol and m["flags"] & TCP_CONG_NEEDS_ECN for m in maps)

    def name(self, flow: int) -> str:
        """The algorithm name flow ``flow`` sets with ``TCP_CONGESTION``."""
        copy, symbol = self.flows[flow]
        return self.copies[copy].names[symbol]

    def settle(self, k: int, registered: set[str], output: str, kernel: str) -> None:
        """Copy ``k`` registered with ``kernel`` (``"the kernel"``, ``"the guest
        kernel"``) as far as the names in ``registered`` say: KernelEngineError (exit
        status 2) with what it said when a map a flow runs is not among them; a note for
        a map no flow runs."""
        copy = self.copies[k]
        used = {symbol for index, symbol in self.flows.values() if index == k}
        missing = [symbol for symbol, name in copy.names.items() if name not in registered]
        for symbol in missing:
            said = bpftool.refusal(output, symbol[:MAP_NAME_MAX]) or "no reason given"
            if symbol in used:
                raise KernelEngineError(copy.field, f"{kernel} refused {copy.source}: {said}")
            self.notes.append(f"{copy.source}: {said}; no flow runs it")

    def record(self, flow: int, reported: Optional[str]) -> dict[str, Any]:
        """What flow ``flow`` ran, for its summary: the object and its digest, the map,
        the name it was registered under and its map id, and the algorithm its socket
        reported at the end of the run (``TCP_CONGESTION`` read back; None where the
        agent does not read it)."""
        index, symbol = self.flows[flow]
        copy = self.copies[index]
        name = copy.names[symbol]
        return {
            "object": copy.source,
            "sha256": copy.sha256,
            "map": symbol,
            "name": name,
            "map_id": self.ids.get(name),
            "tcp_congestion": reported,
        }


def _core_call(name: str, where: str) -> Any:
    from .. import _core

    fn = getattr(_core, name, None)
    if fn is None:
        raise KernelEngineError(
            where, f"this build of ccbench cannot read BPF objects (ccbench._core lacks {name}); install it again"
        )
    return fn


def _refused(e: ValueError, flow: str, path: str) -> KernelEngineError:
    """``_core``'s refusal of an object as the flow's: its ScenarioError names ``cca`` or
    ``params.NAME``, which become ``flows[i].cca`` or ``flows[i].params.NAME``."""
    field, message = (e.field, e.message) if isinstance(e, ScenarioError) else ("cca", str(e))
    return KernelEngineError(f"{flow}.{field}", message if path in message else f"{path}: {message}")


def describe(path: str, flow: str) -> dict[str, Any]:
    """``_core.bpf_object``'s account of an object (its maps, globals, ...), with the
    sha256 of its bytes."""
    try:
        info: dict[str, Any] = json.loads(_core_call("bpf_object", f"{flow}.cca")(path))
        info["sha256"] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except ValueError as e:
        raise _refused(e, flow, path) from None
    except OSError as e:
        raise KernelEngineError(f"{flow}.cca", f"{path}: {e.strerror or e}") from None
    return info


def _flow_map(f: "FlowPlan", symbol: Optional[str], path: str, maps: list[dict[str, Any]]) -> str:
    """The struct_ops map flow ``f`` runs: the one it names, or the object's only one."""
    symbols = [m["symbol"] for m in maps]
    where = f"{f.field}.cca"
    if not symbols:
        raise KernelEngineError(where, f"{path} holds no struct_ops map")
    if symbol is None:
        if len(symbols) > 1:
            raise KernelEngineError(
                where,
                f"{path} holds several struct_ops maps ({', '.join(symbols)}); name one: bpf:{path}:{symbols[-1]}",
            )
        return symbols[0]
    if symbol not in symbols:
        raise KernelEngineError(where, f"{path} has no struct_ops map {symbol}; it has {', '.join(symbols)}")
    return symbol


def _globals(params: dict[str, float]) -> dict[str, Any]:
    """A flow's params as the object's globals take them: whole numbers as integers."""
    return {k: int(v) if float(v).is_integer() else v for k, v in sorted(params.items())}


def _token(taken: set[str]) -> str:
    """A token for the run's algorithm names that no algorithm of the kernel has."""
    for _ in range(100):
        token = secrets.token_hex(4)
        if not any(name.startswith(f"{NAME_PREFIX}{token}") for name in taken):
            return token
    raise RuntimeError("could not find a free name for a BPF congestion control")


def prepare(plan: "Plan", workdir: Path) -> Optional[BpfSet]:
    """The run's BPF congestion controls prepared in ``workdir`` (None if no flow has
    one); KernelEngineError for an object ``_core`` refuses."""
    wanted = [f for f in plan.flows if is_bpf(f.cca)]
    if not wanted:
        return None
    objects: dict[str, dict[str, Any]] = {}
    groups: dict[tuple[str, str], list[tuple["FlowPlan", str]]] = {}
    for f in wanted:
        name = parse(f.cca)
        path, symbol = name.path, name.map
        if path not in objects:
            objects[path] = describe(path, f.field)
        symbol = _flow_map(f, symbol, path, objects[path]["maps"])
        params = _globals(plan.scenario.flows[f.entry].params)
        groups.setdefault((path, json.dumps(params)), []).append((f, symbol))

    count = sum(len(objects[path]["maps"]) for path, _ in groups)
    token = _token(set(available_congestion_control()))
    if len(f"{NAME_PREFIX}{token}{count - 1}") > NAME_MAX:
        raise KernelEngineError("flows", f"a run registers at most 10000 BPF struct_ops maps, this one {count}")
    out = workdir / "bpf"
    out.mkdir(parents=True, exist_ok=True)
    prepare_copy = _core_call("bpf_prepare", f"{wanted[0].field}.cca")
    copies: list[Copy] = []
    flows: dict[int, tuple[int, str]] = {}
    k = 0
    for (path, params_json), members in groups.items():
        names = {}
        for m in objects[path]["maps"]:
            names[m["symbol"]] = f"{NAME_PREFIX}{token}{k}"
            k += 1
        first = members[0][0]
        target = out / f"{len(copies)}.bpf.o"
        try:
            prepare_copy(path, str(target), json.dumps(names), params_json)
        except ValueError as e:
            raise _refused(e, first.field, path) from None
        copy = Copy(path, objects[path]["sha256"], json.loads(params_json), names, target, f"{first.field}.cca")
        for f, symbol in members:
            flows[f.index] = (len(copies), symbol)
        copies.append(copy)
    return BpfSet(copies, flows)


def register(st: RunState, bpf: BpfSet) -> None:
    """Register every copy with this host's kernel, each map recorded in the run's state
    before bpftool runs and its id as soon as the kernel has given it.
    KernelEngineError (exit status 2) with what the kernel said when it refuses one."""
    try:
        after = max((m.id for m in bpftool.maps()), default=0)
    except bpftool.BpftoolError as e:
        raise KernelEngineError(bpf.copies[0].field, str(e)) from None
    for k, copy in enumerate(bpf.copies):
        names = copy.map_names()
        st.add_struct_ops([StructOps(name, map_name, after=after) for name, map_name in names.items()])
        try:
            output = bpftool.register(str(copy.path))
            held = bpftool.maps()
        except bpftool.BpftoolError as e:
            raise KernelEngineError(copy.field, f"registering {copy.source}: {e}") from None
        ids = {
            m.name: m.id for m in held if m.registered and m.name in names and m.map == names[m.name] and m.id > after
        }
        st.set_struct_ops_ids(ids)
        bpf.ids.update(ids)
        bpf.settle(k, set(ids), output, "the kernel")
