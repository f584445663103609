"""The annotated scenario in docs/scenarios.md, written from the schema: every key that
has an example, with its field's description and its default as the effective scenario
writes it. Keys, descriptions and defaults are written once, on the fields; a test fails
when the committed doc differs from this module's output:

    python -m ccbench.scenario.reference --write docs/scenarios.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from pydantic import BaseModel

from .host import Host, HostCost

BEGIN = (
    "<!-- Generated from the field descriptions in python/ccbench/scenario/ by "
    "`python -m ccbench.scenario.reference --write docs/scenarios.md`; do not edit. -->"
)
END = "<!-- End of the generated scenario. -->"
COMMENT_COLUMN = 25

# A scenario with only what is required, to read every default from.
MINIMAL = {"duration": "30s", "link": {"rate": "100Mbit", "rtt": "40ms"}, "flows": [{"cca": "cubic"}]}


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, dict):
        return "{ }" if not v else "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return str(v)


def _line(text: str, comment: str) -> str:
    if not comment:
        return text
    pad = text.ljust(COMMENT_COLUMN) if len(text) < COMMENT_COLUMN else text + "  "
    return f"{pad}# {comment}"


def _table(model: type[BaseModel], defaults: Optional[dict[str, Any]]) -> list[str]:
    """`key = example  # description; default D` for each field that has an example."""
    lines = []
    for name, field in model.model_fields.items():
        if not field.examples:
            continue
        key = field.alias or name
        comment = field.description or ""
        # A default of None means "omit it", which the description says.
        default = None if defaults is None or field.is_required() or field.default is None else defaults.get(key)
        if default not in (None, {}, []):
            shown = default if isinstance(default, str) else _toml_value(default)
            comment = f"{comment}; default {shown}" if comment else f"default {shown}"
        lines.append(_line(f"{key} = {_toml_value(field.examples[0])}", comment))
    return lines


def render() -> str:
    """The annotated scenario and the `[capture]` table, as two TOML code blocks."""
    from . import Arrivals, Capture, Flow, Link, ReverseLink, Scenario, Tcp, UdpFlow

    effective = Scenario.from_dict(MINIMAL).to_dict()
    udp = UdpFlow.model_validate({"kind": "udp", "rate": "5Mbit"}).to_dict()
    arrivals = Arrivals.model_validate({"cca": "cubic", "load": 0.5, "sizes": "web-search"}).to_dict()
    # The uplink's defaults, as a minimal [link.reverse] fills them in.
    uplink = ReverseLink.model_validate({"rate": "5Mbit"}).to_dict()
    tables: list[tuple[str, type[BaseModel], Optional[dict[str, Any]], str]] = [
        ("", Scenario, effective, ""),
        ("[link]", Link, effective["link"], "the shared bottleneck"),
        ("[link.reverse]", ReverseLink, uplink, "optional: the uplink, see [Both directions](directions.md)"),
        ("[tcp]", Tcp, effective["tcp"], "optional stack knobs; defaults of a recent Linux kernel"),
        ("[host]", Host, Host.model_validate({}).to_dict(), "optional: the sender host's CPU, shared by every flow"),
        # The costs' defaults are the preset's.
        ("[host.cost]", HostCost, None, "overrides of the preset's CPU time per unit of work"),
        ("[[flows]]", Flow, effective["flows"][0], "one entry per group of identical flows"),
        ("[[flows]]", UdpFlow, udp, 'kind = "udp": unresponsive flows, see [Traffic](traffic.md)'),
        ("[[arrivals]]", Arrivals, arrivals, "optional: connections arriving open-loop, see [Traffic](traffic.md)"),
    ]
    out = [BEGIN, "", "```toml"]
    for header, model, defaults, comment in tables:
        if header:
            if not header.startswith("[host.cost"):
                out.append("")
            out.append(_line(header, comment))
        out.extend(_table(model, defaults))
    out += [
        "```",
        "",
        "The optional `[capture]` table writes packet captures (see "
        "[Packet captures](captures.md#packet-captures)); it does not",
        "change the experiment and is not part of `scenario_hash`:",
        "",
        "```toml",
        "[capture]",
        *_table(Capture, None),
        "```",
        "",
        END,
    ]
    return "\n".join(out) + "\n"


def splice(doc: str, block: str) -> str:
    """`doc` with the text from BEGIN to END replaced by `block`."""
    start, end = doc.index(BEGIN), doc.index(END) + len(END) + 1
    return doc[:start] + block + doc[end:]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ccbench.scenario.reference", description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", metavar="DOC", type=Path, help="replace the generated part of DOC")
    args = parser.parse_args(argv)
    if args.write is None:
        sys.stdout.write(render())
    else:
        args.write.write_text(splice(args.write.read_text(), render()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
