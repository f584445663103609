"""No function over MAX_LINES lines outside the tests without a comment saying why (issue
41, item 6): a long function reads as a list of named steps, or says above itself why it
stays whole (one long table that must stay together, say).

Counted as ``ast`` counts a Python function (its ``def`` line to its last line) and, for
Rust, from the line of ``fn`` to the line of the brace that closes its body, both as the
formatters leave them. The comment is a line above the ``def`` (or its decorators) that
starts with ``#``, or, in Rust, a plain ``//`` line above the ``fn`` (or its attributes
and doc comment): a doc comment says what a function does, not why it is long. The tests
are left out: Python under ``tests/``, Rust's ``#[cfg(test)]`` items and ``*tests.rs``
files.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import NamedTuple


from conftest import ROOT

MAX_LINES = 80


class LongFunction(NamedTuple):
    path: str
    line: int
    name: str
    lines: int
    explained: bool

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.name}: {self.lines} lines{'' if self.explained else ', no comment'}"


def python_functions(text: str) -> list[tuple[str, int, int, int]]:
    """(name, def line, last line, first line of its decorators) of each function,
    methods and nested functions included."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            top = min([d.lineno for d in node.decorator_list] + [node.lineno])
            out.append((node.name, node.lineno, node.end_lineno or node.lineno, top))
    return out


def long_python(root: Path = ROOT) -> list[LongFunction]:
    found = []
    for path in sorted((root / "python" / "ccbench").rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        for name, first, last, top in python_functions(text):
            if last - first + 1 > MAX_LINES:
                above = lines[top - 2].strip() if top >= 2 else ""
                found.append(
                    LongFunction(str(path.relative_to(root)), first, name, last - first + 1, above.startswith("#"))
                )
    return found


class Token(NamedTuple):
    text: str  # an identifier or keyword, or one punctuation character
    line: int
    offset: int


IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def rust_tokens(text: str) -> list[Token]:
    """Identifiers and punctuation, each with its line; comments, strings and character
    literals are skipped whole (so a brace in them does not count), lifetimes too."""
    tokens: list[Token] = []
    i, line, n = 0, 1, len(text)

    def skip_to(j: int) -> int:
        nonlocal line
        line += text.count("\n", i, j)
        return j

    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            i = skip_to(j)
        elif c == '"':
            i = skip_to(_string_end(text, i + 1))
        elif c == "'":
            if text.startswith("\\", i + 1) or (i + 2 < n and text[i + 2] == "'"):
                i = _char_end(text, i)
            else:  # a lifetime: 'a, 'static
                m = IDENT.match(text, i + 1)
                i = m.end() if m else i + 1
        elif c.isalpha() or c == "_":
            m = IDENT.match(text, i)
            assert m is not None
            word, j = m.group(), m.end()
            if word in ("r", "br", "cr") and j < n and text[j] in '#"':
                hashes = len(text[j:]) - len(text[j:].lstrip("#"))
                if text.startswith('"', j + hashes):  # r"..", r#".."#
                    i = skip_to(text.index('"' + "#" * hashes, j + hashes + 1) + 1 + hashes)
                    continue
                m = IDENT.match(text, j + hashes)  # a raw identifier: r#type
                tokens.append(Token(m.group() if m else word, line, i))
                i = m.end() if m else j + hashes
                continue
            if word == "b" and j < n and text[j] == "'":  # b'x'
                i = _char_end(text, j)
                continue
            tokens.append(Token(word, line, i))
            i = j
        else:
            tokens.append(Token(c, line, i))
            i += 1
    return tokens


def _char_end(text: str, i: int) -> int:
    """Just past the character literal whose opening quote is at ``i``: 'x', '\\n',
    '\\'', '\\u{1F600}'."""
    return text.index("'", i + 3 if text[i + 1] == "\\" else i + 2) + 1


def _string_end(text: str, i: int) -> int:
    """Just past the closing quote of the string whose text starts at ``i``."""
    while text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return i + 1


def rust_functions(text: str) -> list[tuple[str, int, int, set[int]]]:
    """(name, line of ``fn``, line of the body's closing brace, lines of the attributes
    just before it) of each ``fn`` item with a body, nested ones included, outside
    ``#[cfg(test)]`` items."""
    tokens = rust_tokens(text)
    closer: dict[int, int] = {}
    stack: list[int] = []
    for k, t in enumerate(tokens):
        if t.text in "([{":
            stack.append(k)
        elif t.text in ")]}" and stack:
            closer[stack.pop()] = k
    out = []
    attribute_lines: set[int] = set()
    in_test_item = False
    k = 0
    while k < len(tokens):
        t = tokens[k]
        if t.text == "#" and k + 1 < len(tokens) and tokens[k + 1].text in ("[", "!"):
            open_ = k + 1 if tokens[k + 1].text == "[" else k + 2
            end = closer.get(open_, open_)
            body = re.sub(r"\s+", "", text[tokens[open_].offset + 1 : tokens[end].offset])
            if body == "cfg(test)":
                if tokens[k + 1].text == "!":
                    return []  # the whole file is a test module
                in_test_item = True
            attribute_lines.update(range(t.line, tokens[end].line + 1))
            k = end + 1
            continue
        if in_test_item and t.text in "{;":
            # The end of the item #[cfg(test)] applies to: a module, function, impl...
            in_test_item = False
            k = closer.get(k, k) + 1 if t.text == "{" else k + 1
            attribute_lines = set()
            continue
        if t.text == "fn" and k + 1 < len(tokens) and IDENT.fullmatch(tokens[k + 1].text):
            body = _body(tokens, closer, k + 2)
            if body is not None and not in_test_item:
                out.append((tokens[k + 1].text, t.line, tokens[closer[body]].line, attribute_lines))
            attribute_lines = set()
            k += 2
            continue
        if t.text in "{};":
            attribute_lines = set()
        k += 1
    return out


def _body(tokens: list[Token], closer: dict[int, int], k: int) -> int | None:
    """The index of the brace that opens the body of the ``fn`` whose signature starts
    at ``k``; None for a declaration without one (``fn f();`` in a trait)."""
    while k < len(tokens):
        t = tokens[k].text
        if t in "([":
            k = closer.get(k, k) + 1
        elif t == "{":
            return k
        elif t == ";":
            return None
        else:
            k += 1
    return None


def rust_explained(lines: list[str], fn_line: int, attribute_lines: set[int]) -> bool:
    """A plain ``//`` comment above the ``fn``, past its attributes and doc comment."""
    at = fn_line - 1
    while at >= 1:
        above = lines[at - 1].strip()
        if at in attribute_lines or above.startswith("///"):
            at -= 1
            continue
        return above.startswith("//") and not above.startswith("//!")
    return False


def long_rust(root: Path = ROOT) -> list[LongFunction]:
    found = []
    for path in sorted(root.glob("crates/*/src/**/*.rs")):
        if path.name.endswith("tests.rs"):
            continue
        text = path.read_text()
        lines = text.splitlines()
        for name, first, last, attributes in rust_functions(text):
            if last - first + 1 > MAX_LINES:
                explained = rust_explained(lines, first, attributes)
                found.append(LongFunction(str(path.relative_to(root)), first, name, last - first + 1, explained))
    return found


def test_every_long_function_says_why_it_is_long() -> None:
    found = long_python() + long_rust()
    print(f"\n{len(found)} functions over {MAX_LINES} lines:")
    for f in found:
        print(f"  {f}")
    unexplained = [str(f) for f in found if not f.explained]
    assert not unexplained, "over {} lines with no comment above saying why:\n  {}".format(
        MAX_LINES, "\n  ".join(unexplained)
    )


def test_the_rust_scanner_counts_fn_items_and_skips_tests() -> None:
    body = "\n".join(f"    let x{i} = {i};" for i in range(3))
    text = f"""\
/// Docs.
// Long: one table.
#[allow(
    clippy::too_many_lines
)]
pub fn explained<'a>(x: &'a str) -> impl Fn() + 'a {{
    let s = "}} {{ // not a comment";
    let r = r#"}}"#;
    let c = '}}';
    let e = '\\'';
    /* }} /* nested }} */ */
    fn inner() -> [u8; 2] {{
{body}
    }}
    move || drop(x)
}}

/// Only docs.
fn plain() {{}}

trait T {{
    fn declared(&self);
}}

#[cfg(test)]
mod tests {{
    fn helper() {{}}
}}

#[cfg(test)]
fn test_only() {{}}

fn after_tests(f: fn(u8) -> u8) -> u8 {{
    f(b'\\'') + f(b'}}')
}}
"""
    found = {name: (first, last, attrs) for name, first, last, attrs in rust_functions(text)}
    assert sorted(found) == ["after_tests", "explained", "inner", "plain"]
    assert found["explained"][:2] == (6, 18)
    assert found["inner"][:2] == (12, 16)
    assert found["plain"][:2] == (21, 21)
    assert found["after_tests"][:2] == (35, 37)
    lines = text.splitlines()
    assert rust_explained(lines, 6, found["explained"][2])
    assert not rust_explained(lines, 21, found["plain"][2])
