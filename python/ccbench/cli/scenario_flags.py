"""Click options made from the scenario's flag table (``ccbench.scenario.flags``): a
flag's help is its field's description, example and default, and its value is checked
by the field when the scenario is validated."""

from __future__ import annotations

import re
import types
import typing
from typing import TYPE_CHECKING, Any, Optional, Sequence

import click

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo

    from ..scenario.flags import Flag

_DOC_LINK = re.compile(r"\[[^\]]*\]\(([^)#]+)[^)]*\)")
_IDENTIFIER = re.compile(r"\S*[._]")


class FlagsFromSchema(click.Command):
    """A command that takes scenario flags (all of them, or those named in
    ``scenario_flags``), before its own options or with ``flags_first=False`` after them.
    They are made the first time they are needed, which imports the scenario's models:
    ``ccbench --help`` does without."""

    def __init__(
        self, *args: Any, scenario_flags: Optional[Sequence[str]] = None, flags_first: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._wanted = scenario_flags
        self._first = flags_first
        self._made = False

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        if not self._made:
            at = 0 if self._first else len(self.params)
            self.params[at:at] = scenario_options(self._wanted)
            self._made = True
        return super().get_params(ctx)


def scenario_options(wanted: Optional[Sequence[str]] = None) -> list[click.Option]:
    from ..scenario.flags import FLAGS

    return [option(flag) for flag in FLAGS if wanted is None or flag.option in wanted]


def option(flag: "Flag") -> click.Option:
    """The click option of one row of the flag table."""
    from ..scenario.flags import field_info

    found = field_info(flag)
    if found is None:  # a flag that sets no one field: its row says it all
        kind, metavar, written = ("switch" if flag.switch else "text"), None, ""
    else:
        info, default = found
        kind, metavar, forms = _kind(info)
        written = _written(info, default, kind, forms)
    settings: dict[str, Any] = {
        "help": _capitalized(flag.help.replace("{}", written) if flag.help is not None else written + "."),
        "metavar": flag.metavar or metavar,
        "multiple": flag.multiple,
    }
    if kind == "switch":
        settings.update(is_flag=True, default=None)
    elif kind == "on-off":
        settings.update(type=click.Choice(["on", "off"]), callback=_on_off)
    elif kind == "choice":
        settings["type"] = click.Choice([v for arm in _arms(info.annotation) for v in typing.get_args(_bare(arm))])
    elif kind == "int":
        settings["type"] = int
    return click.Option([flag.option, flag.key], **settings)


def _on_off(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[bool]:
    return None if value is None else value == "on"


def _kind(info: "FieldInfo") -> tuple[str, Optional[str], Optional[str]]:
    """(kind, metavar, forms) of a field: a switch, on or off (an optional boolean), one
    of its literal values, a value in a unit, an integer, or text."""
    arms = [_bare(arm) for arm in _arms(info.annotation)]
    if arms == [bool]:
        return ("on-off" if len(typing.get_args(info.annotation)) > 1 else "switch"), None, None
    if all(typing.get_origin(arm) is typing.Literal for arm in arms):
        return "choice", None, None
    unit = _unit(info)
    if unit is not None:
        return "unit", *unit
    if arms == [int]:
        return "int", "N", None
    return "text", None, None


def _arms(annotation: Any) -> list[Any]:
    """The types an annotation allows besides None, with their metadata
    (``Optional[Annotated[int, ...]]`` keeps it inside)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [arm for arm in typing.get_args(annotation) if arm is not type(None)]
    return [annotation]


def _bare(arm: Any) -> Any:
    return typing.get_args(arm)[0] if typing.get_origin(arm) is typing.Annotated else arm


def _unit(info: "FieldInfo") -> Optional[tuple[str, Optional[str]]]:
    """(metavar, forms) of the field's unit, known by the function that parses it; the
    forms where one example does not show them."""
    from pydantic import BeforeValidator

    from ..scenario.host import parse_share
    from ..traces import load_trace
    from ..units import parse_buffer, parse_duration, parse_loss, parse_rate, parse_size

    units = {
        parse_duration: ("TIME", None),
        parse_rate: ("RATE", None),
        parse_size: ("SIZE", None),
        parse_buffer: ("SIZE", "1bdp, 256KB or 100pkt"),
        parse_loss: ("LOSS", "0.5% or 0.005"),
        parse_share: ("SHARE", "25% or 0.25"),
        load_trace: ("PATH", None),
    }
    metadata = list(info.metadata)
    for arm in _arms(info.annotation):  # Optional[Rate]: the parser is inside
        if typing.get_origin(arm) is typing.Annotated:
            metadata += typing.get_args(arm)[1:]
    parsers = [item.func for item in metadata if isinstance(item, BeforeValidator)]
    return next((units[p] for p in parsers if p in units), None)


def _written(info: "FieldInfo", default: Any, kind: str, forms: Optional[str]) -> str:
    """The field's description, with an example of its unit (after the first clause,
    before any "; omit ...") and its default."""
    text = _DOC_LINK.sub(r"docs/\1", info.description or "").replace("`", "")
    shown = None if default is None or kind == "switch" else _toml(info, default)
    example = forms or (info.examples[0] if info.examples and kind == "unit" else None)
    if example is not None and example != shown:
        head, sep, rest = text.partition("; ")
        text = f"{head}, e.g. {example}{sep}{rest}"
    if shown is not None:
        text += f"; default {shown}"
    return text


def _toml(info: "FieldInfo", value: Any) -> str:
    """A value of the field as a scenario file writes it (``100ms``, not 100000000)."""
    from pydantic import PlainSerializer

    if isinstance(value, str):
        return value
    for item in info.metadata:
        if isinstance(item, PlainSerializer):
            return str(item.func(value))
    return str(value)


def _capitalized(text: str) -> str:
    """A capital first letter, unless ``text`` starts with a name such as
    net.ipv4.tcp_tso_rtt_log."""
    return text if _IDENTIFIER.match(text) else text[:1].upper() + text[1:]
