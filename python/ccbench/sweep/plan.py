"""Sweep plans: a scenario TOML in which values may be lists or ranges.

A plan expands to the cross product of its swept values (keys in a ``zip`` group vary
together), each point repeated ``repetitions`` times with its own seed. Every expanded
point is validated when the plan is loaded, so a bad value anywhere is reported before
anything runs. The syntax is in the README, "Sweeps and the results store".
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, Union

from .. import engines
from ..errors import ScenarioError
from ..scenario import Scenario, read_toml
from .. import keypaths as paths
from ..keypaths import dotted
from .ranges import expand_range, is_range

SWEEP_KEYS = ("name", "repetitions", "zip", "vary")
MAX_RUNS = 100_000
MAX_REPETITIONS = 10_000
MAX_NAME = 100
_SCENARIO_KEYS = ("seed", "duration", "interval", "link", "tcp", "host", "flows", "arrivals")


@dataclass(frozen=True)
class Point:
    """One run of a plan: the scenario to run (seed included), the swept values that
    made it, and which repetition of those values it is."""

    scenario: Scenario
    values: dict[str, Any]
    repetition: int
    index: int = 0  # position of the point's values in the plan (repetitions share it)


@dataclass(frozen=True)
class Axis:
    """Swept keys that vary together (one key, or a zip group) and their values, one
    tuple per step."""

    keys: tuple[str, ...]
    steps: tuple[tuple[Any, ...], ...]


def derive_seed(seed: int, repetition: int) -> int:
    """Repetition 0 runs the plan's own seed; repetition r > 0 a 32-bit seed derived
    from (seed, r), the same on every machine (short enough to read and type)."""
    if repetition == 0:
        return seed
    digest = hashlib.sha256(f"ccbench-repetition:{seed}:{repetition}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


@dataclass
class Plan:
    """An expanded plan. ``points()`` lists every run, validated."""

    name: str
    repetitions: int
    base: dict[str, Any]  # the scenario document with the swept places left as written
    axes: list[Axis]
    engine: str = engines.DEFAULT
    source: str = "plan"
    _points: dict[str, list[Point]] = field(default_factory=dict, repr=False)

    @property
    def swept_keys(self) -> list[str]:
        return [k for axis in self.axes for k in axis.keys]

    @property
    def point_count(self) -> int:
        n = 1
        for axis in self.axes:
            n *= len(axis.steps)
        return n

    @property
    def run_count(self) -> int:
        return self.point_count * self.repetitions

    def points(self, engine: Optional[str] = None) -> list[Point]:
        """Every run of the plan (points x repetitions), validated for ``engine``
        (default: the engine the plan was loaded for)."""
        engine = engine or self.engine
        if engine not in self._points:
            self._points[engine] = list(self._expand(_loader(engine)))
        return list(self._points[engine])

    def _expand(self, load: Callable[[Mapping[str, Any]], Scenario]) -> Iterator[Point]:
        keys = self.swept_keys
        parsed = [paths.parse(k, k) for k in keys]
        total = self.point_count
        for index, combo in enumerate(itertools.product(*(axis.steps for axis in self.axes))):
            flat = [v for step in combo for v in step]
            values = dict(zip(keys, flat))
            doc = copy.deepcopy(self.base)
            for path, value in zip(parsed, flat):
                paths.put(doc, path, value)
            try:
                scenario = load(doc)
                if isinstance(scenario, Scenario):  # a simulated point must fit this machine
                    from ..resources import check as check_resources

                    check_resources(scenario, flag=None)
            except ScenarioError as e:
                where = ", ".join(f"{k}={_show(v)}" for k, v in values.items())
                context = f" (point {index + 1} of {total}: {where})" if where else ""
                raise ScenarioError(e.field, e.message + context) from None
            for rep in range(self.repetitions):
                seeded = scenario if rep == 0 else scenario.model_copy(update={"seed": derive_seed(scenario.seed, rep)})
                yield Point(scenario=seeded, values=dict(values), repetition=rep, index=index)


def _show(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def _loader(engine: str) -> Callable[[Mapping[str, Any]], Scenario]:
    return engines.get(engine).load


# Loading


def load_plan(path: Union[str, os.PathLike[str]], *, engine: str = engines.DEFAULT, name: Optional[str] = None) -> Plan:
    """Read and expand the plan at ``path``; every point is validated for ``engine``.
    ``name`` overrides the plan's ``sweep.name`` (default: the file name without .toml).
    Raises ScenarioError (``.field``, ``.message``) for anything wrong."""
    doc = read_toml(path)
    return plan_from_dict(doc, name=name, default_name=Path(path).stem, engine=engine, source=os.fspath(path))


def plan_from_dict(
    doc: Mapping[str, Any],
    *,
    name: Optional[str] = None,
    default_name: str = "sweep",
    engine: str = engines.DEFAULT,
    source: str = "plan",
) -> Plan:
    """A plan from a TOML-shaped mapping (a scenario with lists, ranges and ``[sweep]``)."""
    _loader(engine)
    base = copy.deepcopy(dict(doc))
    options = base.pop("sweep", {})
    if not isinstance(options, dict):
        raise ScenarioError("sweep", "must be a table: [sweep] with name, repetitions, zip, vary")
    unknown = [k for k in options if k not in SWEEP_KEYS]
    if unknown:
        key = unknown[0]
        hint = (
            (f" ({key} is a scenario key: in TOML it belongs to the table above it, so write it before [sweep])")
            if key in _SCENARIO_KEYS
            else ""
        )
        raise ScenarioError(f"sweep.{key}", f"unknown key; allowed keys: {', '.join(SWEEP_KEYS)}{hint}")
    plan_name = _name(
        name if name is not None else options.get("name", default_name), "--name" if name is not None else "sweep.name"
    )
    repetitions = _repetitions(options.get("repetitions", 1))

    swept: dict[str, list[Any]] = {}
    _find_swept(base, (), swept)
    _add_vary(base, options.get("vary", {}), swept)
    axes = _axes(swept, options.get("zip", []))
    plan = Plan(name=plan_name, repetitions=repetitions, base=base, axes=axes, engine=engine, source=source)
    if plan.run_count > MAX_RUNS:
        raise ScenarioError(
            "sweep",
            f"{plan.point_count} points x {repetitions} repetitions = {plan.run_count} runs; at most {MAX_RUNS}",
        )
    plan.points()  # validate every point now, before anything runs
    return plan


def _name(value: Any, fieldname: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME or any(c in value for c in "\n\r\0"):
        raise ScenarioError(fieldname, f"must be a non-empty string of at most {MAX_NAME} characters on one line")
    return value


def _repetitions(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_REPETITIONS:
        raise ScenarioError("sweep.repetitions", f"must be an integer from 1 to {MAX_REPETITIONS}, got {value!r}")
    return value


def _find_swept(node: Any, path: paths.Path, swept: dict[str, list[Any]]) -> None:
    """Collect the lists and ranges in value places of the scenario document; leave the
    rest to the scenario schema."""
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        here = path + (key,)
        if here in (("flows",), ("arrivals",)):
            _check_entries(key, value)
            if isinstance(value, list):
                for i, entry in enumerate(value):
                    _find_swept(entry, (key, i), swept)
            continue
        if paths.is_table(here):
            if isinstance(value, list):
                raise ScenarioError(
                    dotted(here),
                    f"a table cannot be swept as a whole; sweep the values inside it, e.g. {_example(here)}",
                )
            _find_swept(value, here, swept)
            continue
        values = _swept_values(dotted(here), value)
        if values is not None:
            swept[dotted(here)] = values


def _check_entries(array: str, value: Any) -> None:
    if isinstance(value, list) and value and not all(isinstance(e, dict) for e in value):
        raise ScenarioError(
            array,
            f"must be an array of tables ([[{array}]]); to sweep algorithms write "
            f'cca = ["bbr", "cubic"] inside a [[{array}]] entry',
        )


def _example(path: paths.Path) -> str:
    if path and path[-1] == "params":
        return f"{dotted(path)}.beta = [0.3, 0.5]"
    if path == ("tcp",):
        return "tcp.mss = [1448, 8948]"
    return 'link.rate = ["10Mbit", "50Mbit"]'


def _swept_values(fieldname: str, value: Any) -> Optional[list[Any]]:
    """The values a list or range sweeps; None for a plain value."""
    if isinstance(value, list):
        if not value:
            raise ScenarioError(fieldname, "an empty list sweeps nothing; give at least one value")
        for v in value:
            if isinstance(v, (list, dict)):
                raise ScenarioError(
                    fieldname, "a swept list holds plain values (strings, numbers, booleans), not arrays or tables"
                )
        seen: list[Any] = []
        for v in value:
            if any(type(v) is type(s) and v == s for s in seen):
                raise ScenarioError(fieldname, f"{_show(v)} is listed twice; give each value once")
            seen.append(v)
        return list(value)
    if isinstance(value, dict) and is_range(value):
        return expand_range(fieldname, value)
    return None


def _add_vary(base: dict[str, Any], vary: Any, swept: dict[str, list[Any]]) -> None:
    """``[sweep.vary]``: swept values named by dotted key, e.g. ``"flows[0].cca" = [...]``."""
    if not isinstance(vary, dict):
        raise ScenarioError("sweep.vary", 'must be a table of dotted keys, e.g. "flows[0].cca" = ["bbr", "cubic"]')
    counts = {a: len(base[a]) if isinstance(base.get(a), list) else 0 for a in paths.ENTRY_ARRAYS}
    for key, value in vary.items():
        fieldname = f"sweep.vary.{key}"
        path = paths.parse(fieldname, key)
        paths.check_value_path(fieldname, path, counts)
        name = dotted(path)
        if name in swept:
            raise ScenarioError(name, "swept twice, in the scenario and in [sweep.vary]; sweep it in one place")
        if paths.has(base, path):
            raise ScenarioError(name, "given both in the scenario and in [sweep.vary]; give it in one place")
        values = _swept_values(name, value)
        if values is None:
            raise ScenarioError(fieldname, f"must be a list of values or a range table, got {_show(value)}")
        paths.put(base, path, values)
        swept[name] = values


def _axes(swept: dict[str, list[Any]], zip_groups: Any) -> list[Axis]:
    """One axis per swept key, except that each zip group is one axis, placed where its
    first key is."""
    if not isinstance(zip_groups, list) or not all(isinstance(g, list) for g in zip_groups):
        raise ScenarioError("sweep.zip", 'must be a list of key lists, e.g. [["link.rate", "link.buffer"]]')
    group_of: dict[str, int] = {}
    groups: list[list[str]] = []
    for g, group in enumerate(zip_groups):
        if len(group) < 2 or not all(isinstance(k, str) for k in group):
            raise ScenarioError("sweep.zip", f"each group names at least two swept keys, got {group!r}")
        names = []
        for key in group:
            name = dotted(paths.parse("sweep.zip", key))
            if name not in swept:
                raise ScenarioError(
                    "sweep.zip", f"{key!r} is not swept; zip names keys whose values are lists or ranges"
                )
            if name in group_of:
                raise ScenarioError("sweep.zip", f"{key!r} is named twice; a key belongs to one zip group")
            group_of[name] = g
            names.append(name)
        lengths = {len(swept[n]) for n in names}
        if len(lengths) != 1:
            counts = ", ".join(f"{n} has {len(swept[n])}" for n in names)
            raise ScenarioError("sweep.zip", f"keys that vary together need as many values each; {counts}")
        groups.append(names)
    axes: list[Axis] = []
    placed: set[int] = set()
    for name in swept:
        index = group_of.get(name)
        if index is None:
            axes.append(Axis((name,), tuple((v,) for v in swept[name])))
        elif index not in placed:
            placed.add(index)
            members = groups[index]
            axes.append(Axis(tuple(members), tuple(zip(*(swept[n] for n in members)))))
    return axes


def points_of(plan_or_points: Union[Plan, Sequence[Point]], engine: str) -> list[Point]:
    return plan_or_points.points(engine) if isinstance(plan_or_points, Plan) else list(plan_or_points)
