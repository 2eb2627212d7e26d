"""The evaluator's dispatch on item kinds is exhaustive, statically and at run time (issue 14).

``MacroEnv.eval_items`` picks a handler for each kind of ``Item`` (text, macro, scoped block,
variable shorthand, raw tag). mypy --strict must report a kind added to ``Item`` without a
handler, and an object of no known kind must never be copied out as if it were a raw tag.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import get_args

from engine.macros import diagnostics as d
from engine.macros.cache import TemplateCache
from engine.macros.nodes import Item, Macro, RawMacro, Scoped, Template, VarExpr
from engine.macros.registry import Registry, default_registry
from tests.test_macros.util import codes, run

ROOT = Path(__file__).resolve().parents[2]

#: One document holding every kind of item: text, a macro, a scoped block, a variable
#: shorthand and a raw tag (a closing tag with no opener).
EVERY_KIND = "a {{user}} {{trim}} b {{/trim}} {{.x = 5}}{{.x}} {{/foo}}"


def _kinds(items: list[Item], found: set[type]) -> set[type]:
    for item in items:
        found.add(type(item))
        if isinstance(item, Scoped):
            _kinds(item.content.items, found)
    return found


def test_every_item_kind_is_evaluated_by_its_handler() -> None:
    parsed = TemplateCache().get(EVERY_KIND, default_registry())
    assert _kinds(parsed.items, set()) == set(get_args(Item))
    result = run(EVERY_KIND)
    assert result.text == "a Alice b 5 {{/foo}}"
    assert codes(result) == [d.MACRO_UNMATCHED_CLOSING_BLOCK]


class _StrangeNode:
    """Shaped like a raw tag, but not one of the item kinds the evaluator knows."""

    __slots__ = ("text", "start", "name", "code", "src", "end")

    def __init__(self) -> None:
        self.text = self.src = "{{strange}}"
        self.start = 0
        self.end = len(self.text)
        self.name = "strange"
        self.code = None


class _CacheWithStrangeNode(TemplateCache):
    def get(self, text: str, registry: Registry) -> Template:
        items: list[Item] = ["before ", _StrangeNode(), " after"]  # type: ignore[list-item]
        return Template(text, text, items, ())


def test_an_unknown_item_kind_is_reported_never_copied_as_a_raw_tag() -> None:
    result = run("before {{strange}} after", cache=_CacheWithStrangeNode())
    assert codes(result) == [d.MACRO_INTERNAL_ERROR]
    assert "_StrangeNode" in result.warnings[0].message
    assert result.text == "before {{strange}} after"  # the input, kept as written


def test_mypy_reports_an_item_kind_without_a_handler(tmp_path: Path) -> None:
    """Add a node kind to ``Item`` in a copy of the engine: mypy --strict must name the
    evaluator's dispatch as the place that does not handle it."""
    copy = tmp_path / "engine"
    shutil.copytree(ROOT / "engine", copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    nodes = copy / "macros" / "nodes.py"
    source = nodes.read_text(encoding="utf-8")
    declaration = "Item = Union[str, Macro, VarExpr, Scoped, RawMacro]"
    assert declaration in source, "the Item union moved; update this test"
    source = source.replace(declaration, declaration[:-1] + ", Extra]")
    source += (
        "\n\nfrom typing import final as _final\n\n\n@_final\nclass Extra:\n"
        '    """A node kind the evaluator has no handler for."""\n\n'
        '    __slots__ = ("src", "start", "end")\n\n'
        "    def __init__(self, src: str, start: int, end: int) -> None:\n"
        "        self.src = src\n        self.start = start\n        self.end = end\n"
    )
    nodes.write_text(source, encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--python-version",
            "3.11",
            "--follow-imports",
            "silent",
            "--no-error-summary",
            "--cache-dir",
            str(tmp_path / "cache"),
            "engine/macros/evaluator.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = result.stdout + result.stderr
    assert result.returncode == 1, report
    errors = [line for line in report.splitlines() if ": error:" in line]
    assert errors, report
    assert all(line.startswith("engine/macros/evaluator.py:") for line in errors), report
    assert any('"assert_never"' in line and "Extra" in line for line in errors), report


def test_every_node_kind_is_final() -> None:
    """The dispatch narrows with ``type(item) is Kind``, which mypy only trusts for final
    classes: a subclass would fall through to the unreachable branch."""
    for kind in (Macro, VarExpr, Scoped, RawMacro):
        assert getattr(kind, "__final__", False) is True, kind.__name__
