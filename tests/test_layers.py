"""The Python package's layers (docs/architecture.md, "The Python package"): every import
between its modules, at the top of a file or inside a function, goes to the importer's
own layer or one below, and no two modules import each other."""

from __future__ import annotations

import ast
import re

from conftest import ROOT

PACKAGE = ROOT / "python" / "ccbench"


def layers() -> dict[str, int]:
    """Module -> its layer's height (base 0), from the table in docs/architecture.md."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    table = text[text.index("| layer | modules | what they hold |") :].split("\n\n")[0]
    rows = [line for line in table.splitlines()[2:] if line.strip().startswith("|")]
    height = {}
    for level, row in enumerate(reversed(rows)):
        for name in re.findall(r"`([\w_]+)`", row.split("|")[2]):
            height[name] = level
    return height


def unit(module: str) -> str:
    """``ccbench.vm.guest`` -> ``vm``; ``ccbench`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports() -> dict[tuple[str, str], list[str]]:
    """(importer, imported) units -> where (file:line), for imports between units."""
    found: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        package = module if rel.name == "__init__" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            for target in _targets(node, package):
                if target.split(".")[0] == "ccbench" and unit(module) != unit(target):
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    found.setdefault((unit(module), unit(target)), []).append(where)
    return found


def _targets(node: ast.AST, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
    if base != "ccbench":
        return [base]
    # ``from ccbench import engines``: the submodule named; ``__version__``: the package's own.
    return [f"ccbench.{a.name}" if _is_module(a.name) else "ccbench" for a in node.names]


def _is_module(name: str) -> bool:
    return (PACKAGE / name).is_dir() or any((PACKAGE / f"{name}{ext}").exists() for ext in (".py", ".pyi"))


def test_every_module_has_a_layer() -> None:
    height = layers()
    units = {unit(".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts)) for p in PACKAGE.rglob("*.py")}
    units |= {p.name.split(".")[0] for p in PACKAGE.glob("*.pyi")}
    assert units - set(height) == set(), "add these to the table in docs/architecture.md"


def test_no_import_runs_upward_and_none_runs_in_a_circle() -> None:
    height, edges = layers(), imports()
    upward = {f"{a} -> {b}": where for (a, b), where in edges.items() if height[b] > height[a]}
    assert upward == {}, upward
    both_ways = {f"{a} <-> {b}": edges[(a, b)] + edges[(b, a)] for (a, b) in edges if (b, a) in edges and a < b}
    assert both_ways == {}, both_ways
