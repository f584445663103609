"""A self-contained HTML page: figures embedded as data URIs (their PNG and SVG files
are written beside the page), tables, notes. No scripts, no external resources, and
no date, so the same input gives the same bytes.

Each table column is numeric or text, decided from its cells (``column_kinds``):
numbers stay on one line, right-aligned with tabular figures; text is left-aligned
and wraps, and a column of sentences gets a readable maximum width."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import jinja2
from markupsafe import Markup, escape
from matplotlib.figure import Figure

from ..plots import style


@dataclass
class Image:
    """A figure written to disk; ``embed`` is the file the page inlines."""

    title: str
    caption: str
    files: list[Path]

    @property
    def embed(self) -> Path:
        svg = [p for p in self.files if p.suffix == ".svg"]
        return svg[0] if svg else self.files[0]

    def data_uri(self) -> str:
        mime = "image/svg+xml" if self.embed.suffix == ".svg" else "image/png"
        return f"data:{mime};base64,{base64.b64encode(self.embed.read_bytes()).decode('ascii')}"


# A number as the tables print one: sign, thousands commas, decimals, exponent, and a
# unit or suffix written after it ("12.3%", "1.2x", "20Mbit", "25 pkt").
_NUMBER = re.compile(
    r"[-+−]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:e[-+]?\d+)?"
    r"(?:\s?(?:%|x|×|pkt|ms|µs|us|s|KB|kB|MB|bit|kbit|Mbit|Gbit|bdp|BDP)\b|%)?"
)
# What may stand between the numbers of a numeric cell: "12.3 ± 0.4", "1.90 ✗; 0.79",
# "57.9 / 30.4 [29.0–31.2] (1.90) ✓".
_BETWEEN = re.compile(r"[\s±✗✓/;,:()\[\]–—−-]*")
# Cells that say "no value" and so say nothing about their column.
BLANKS = frozenset({"", "-", "–", "—", "n/a"})
# A text column whose longest cell has more characters than this holds sentences.
PROSE = 40


def is_number(cell: str) -> bool:
    """Whether ``cell`` is one or more numbers with their units and signs, and nothing else."""
    text = cell.strip()
    return bool(_NUMBER.search(text)) and _BETWEEN.fullmatch(_NUMBER.sub(" ", text)) is not None


def column_kinds(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The CSS class of each column: ``num`` when every cell that is not blank is a
    number, else ``text`` (``text prose`` when a cell is longer than ``PROSE``)."""
    kinds = []
    for i in range(len(columns)):
        cells = [str(row[i]).strip() for row in rows if i < len(row)]
        filled = [c for c in cells if c not in BLANKS]
        if all(is_number(c) for c in filled):
            kinds.append("num")
        else:
            kinds.append("text prose" if max(len(c) for c in filled) > PROSE else "text")
    return kinds


def cell_html(value: object, kind: str) -> Markup:
    """A cell's text, escaped; in a numeric column the ``± half-width`` of a mean is a span
    of its own, which a narrow window puts on a line below the mean."""
    text = str(value)
    if kind == "num" and " ± " in text:
        mean, half = text.split(" ± ", 1)
        return Markup('{}<span class="ci"> ± {}</span>').format(mean, half)
    return escape(text)


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""

    def kinds(self) -> list[str]:
        return column_kinds(self.columns, self.rows)


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    images: list[Image] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)


@dataclass
class Page:
    title: str
    subtitle: str = ""
    sections: list[Section] = field(default_factory=list)


def save_figure(
    fig: Figure, out: Path, stem: str, title: str, caption: str = "", formats: Sequence[str] = style.FORMATS
) -> Image:
    """Write ``out/stem.<fmt>`` (deterministic bytes, as ccbench's other figures)."""
    out.mkdir(parents=True, exist_ok=True)
    return Image(title=title, caption=caption, files=style.save(fig, out / stem, formats))


_ENV = jinja2.Environment(autoescape=True, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
_ENV.filters["cell"] = cell_html
_TEMPLATE = _ENV.from_string("""\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ page.title }}</title>
<style>
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1200px;
       padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
h3 { font-size: 1em; margin-bottom: 0.3em; }
.subtitle { color: #555; margin-top: 0; }
figure { margin: 1em 0 2em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; }
figcaption a { color: #0072B2; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em 0; }
th, td { padding: 0.25em 0.6em; border-bottom: 1px solid #e3e3e3; vertical-align: top; }
th { background: #f4f4f4; vertical-align: bottom; }
.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
th.num { white-space: normal; max-width: 8em; }
.text { text-align: left; overflow-wrap: break-word; }
td.prose { max-width: 30em; }
.note { font-size: 0.85em; color: #555; }
.scroll { overflow-x: auto; }
@media (max-width: 900px) {
  body { padding: 0 0.5em; }
  table { font-size: 0.75em; }
  th, td { padding: 0.25em 0.3em; }
  .ci { display: block; }
}
</style>
</head>
<body>
<h1>{{ page.title }}</h1>
{% if page.subtitle %}<p class="subtitle">{{ page.subtitle }}</p>{% endif %}
{% for section in page.sections %}
<section>
<h2>{{ section.title }}</h2>
{% for p in section.paragraphs %}
<p>{{ p }}</p>
{% endfor %}
{% for table in section.tables %}
<h3>{{ table.title }}</h3>
{% set kinds = table.kinds() %}
<div class="scroll"><table>
<thead><tr>{% for c in table.columns %}<th class="{{ kinds[loop.index0] }}">{{ c }}</th>{% endfor %}</tr></thead>
<tbody>
{% for row in table.rows %}
<tr>{% for v in row %}<td class="{{ kinds[loop.index0] }}">{{ v | cell(kinds[loop.index0]) }}</td>{% endfor %}</tr>
{% endfor %}
</tbody>
</table></div>
{% if table.note %}<p class="note">{{ table.note }}</p>{% endif %}
{% endfor %}
{% for image in section.images %}
<figure>
<h3>{{ image.title }}</h3>
<img src="{{ image.data_uri() }}" alt="{{ image.title }}">
<figcaption>{{ image.caption }}{% if image.caption %} {% endif %}Files:
{% for f in image.files %}<a href="{{ f.name }}">{{ f.name }}</a>{% if not loop.last %}, {% endif %}{% endfor %}.
</figcaption>
</figure>
{% endfor %}
</section>
{% endfor %}
</body>
</html>
""")


def write_page(page: Page, out: Path, name: str = "index.html") -> Path:
    """Render ``page`` to ``out/name``. Figure files must already be in ``out`` (the
    page links them by name)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    path.write_text(_TEMPLATE.render(page=page), encoding="utf-8")
    return path
