"""A self-contained HTML page: figures embedded as data URIs (their PNG and SVG files
are written beside the page), tables, notes. No scripts, no external resources, and
no date, so the same input gives the same bytes."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import jinja2
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


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""


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


_TEMPLATE = jinja2.Environment(
    autoescape=True, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True
).from_string("""\
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
th, td { padding: 0.25em 0.6em; border-bottom: 1px solid #e3e3e3; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; text-align: center; }
td.text, th.text { text-align: left; }
.note { font-size: 0.85em; color: #555; }
.scroll { overflow-x: auto; }
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
<div class="scroll"><table>
<thead><tr>{% for c in table.columns %}<th{% if loop.first %} class="text"{% endif %}>{{ c }}</th>{% endfor %}</tr></thead>
<tbody>
{% for row in table.rows %}
<tr>{% for v in row %}<td{% if loop.first %} class="text"{% endif %}>{{ v }}</td>{% endfor %}</tr>
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
