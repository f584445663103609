"""The table the scenario's flags are declared in (``ccbench.scenario.flags``): a flag
and the field it sets, and the places of a scenario's TOML form that flags reach (a
table, every TCP flow, every UDP flow, every group of arrivals)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Union

from ..errors import ScenarioError

Doc = dict[str, Any]
# How a flag that is not one field's value changes the scenario's TOML form: it gets
# the document, its own value and every flag's value by keyword.
Apply = Callable[[Doc, Any, Mapping[str, Any]], None]

EVERY_FLOW = "flows[]"  # every TCP [[flows]] entry
EVERY_UDP = "udp[]"  # every [[flows]] entry with kind = "udp"
EVERY_GROUP = "arrivals[]"  # every [[arrivals]] entry


@dataclass(frozen=True)
class Flag:
    """A flag and the scenario field it sets, named as a scenario file names it
    (``link.rate``; ``flows[].size`` sets it in every TCP ``[[flows]]`` entry)."""

    option: str
    field: str = ""
    # Only for a flag that is not simply the field's value.
    apply: Optional[Apply] = None
    # Only where the field has no description fit for help; "{}" stands for the help
    # written from the field (its description, example and default).
    help: Optional[str] = None
    # Only where the field's type does not name its values (a preset, a file).
    metavar: Optional[str] = None
    # Only for a flag that sets no one field: it takes no value, or may be repeated.
    switch: bool = False
    multiple: bool = False
    keyword: Optional[str] = None

    @property
    def key(self) -> str:
        """Its keyword in :meth:`Scenario.from_flags` (and the CLI's parameter name)."""
        return self.keyword or self.option[2:].replace("-", "_")

    def apply_to(self, doc: Doc, value: Any, given: Mapping[str, Any]) -> None:
        if self.apply is not None:
            self.apply(doc, value, given)
        else:
            set_field(doc, self.field, value)


def tables(doc: Doc, path: str) -> list[Doc]:
    """The tables of ``doc`` at ``path`` ("", "link", "link.reverse", "flows[]" for the TCP
    flows, "udp[]", "arrivals[]"), made when missing. A value that is not a table is left
    for validation to report."""
    if path in (EVERY_FLOW, EVERY_UDP):
        entries = doc.get("flows")
        if not isinstance(entries, list):
            return []
        return [e for e in entries if isinstance(e, dict) and _is_udp(e) == (path == EVERY_UDP)]
    if path == EVERY_GROUP:
        groups = doc.get("arrivals")
        return [g for g in groups if isinstance(g, dict)] if isinstance(groups, list) else []
    table: Any = doc
    for key in path.split(".") if path else ():
        table = table.setdefault(key, {})
        if not isinstance(table, dict):
            return []
    return [table]


def set_field(doc: Doc, field: str, value: Any) -> None:
    where, _, key = field.rpartition(".")
    for table in tables(doc, where):
        table[key] = value


def _is_udp(entry: Doc) -> bool:
    return entry.get("kind") == "udp"


def each_direction(
    doc: Doc, value: Union[str, list[str]], where: str, option: str, what: str, wanted: str = ""
) -> None:
    """One direction for every entry at ``where``, or one each in order (as ``--cca`` and
    ``--udp`` make them); without entries, refused saying how to make one (``wanted``)."""
    names = [d.strip().lower() for d in value.split(",")] if isinstance(value, str) else list(value)
    entries = tables(doc, where)
    if not entries and wanted:
        raise ScenarioError(option, f"needs {wanted}")
    if len(names) == 1:
        names *= len(entries)
    if len(names) != len(entries):
        raise ScenarioError(
            option,
            f"give one direction for every {what}, or one per {what} entry: {len(entries)} here, got {len(names)}",
        )
    for entry, name in zip(entries, names):
        entry["direction"] = name
