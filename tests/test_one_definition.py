"""One definition of each thing: no port, value set or clock is written out twice.

Read from the source (``ast``), so a second copy fails here before two copies can drift apart.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("engine", "adapters", "bot")
ONCE = ("SystemClock",)
"""Classes that must exist in one place only, whatever their shape."""
NOT_COPIES: frozenset[str] = frozenset({"ROLE_BY_NUMBER"})
"""Tuples equal to a Literal's values by more than chance: SillyTavern numbers the roles in
this order (``ROLE_BY_NUMBER[n]``), whatever order the Literal lists them in."""


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            yield _name(path), ast.parse(path.read_text(encoding="utf-8"))


def _name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _literal_values(node: ast.expr) -> tuple[str, ...] | None:
    """The strings of ``Literal["a", "b"]`` (None for anything else)."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
        return None
    if node.value.id != "Literal":
        return None
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    values = [i.value for i in items if isinstance(i, ast.Constant)]
    if len(values) != len(items) or not all(isinstance(v, str) for v in values):
        return None
    return tuple(str(v) for v in values)


def _string_tuple(node: ast.expr | None) -> tuple[str, ...] | None:
    if not isinstance(node, ast.Tuple) or not node.elts:
        return None
    values = [e.value for e in node.elts if isinstance(e, ast.Constant)]
    if len(values) != len(node.elts) or not all(isinstance(v, str) for v in values):
        return None
    return tuple(str(v) for v in values)


def _assignments(tree: ast.Module) -> Iterator[tuple[str, ast.expr | None]]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                yield target.id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node.target.id, node.value


def _is_protocol(node: ast.ClassDef) -> bool:
    return any(
        (isinstance(b, ast.Name) and b.id == "Protocol")
        or (isinstance(b, ast.Attribute) and b.attr == "Protocol")
        for b in node.bases
    )


def test_each_protocol_name_is_defined_once() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for module, tree in _modules():
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and (_is_protocol(node) or node.name in ONCE):
                where[node.name].append(module)
    twice = {name: places for name, places in where.items() if len(places) > 1}
    assert twice == {}


def test_each_literal_value_set_is_defined_once() -> None:
    where: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for module, tree in _modules():
        for name, value in _assignments(tree):
            values = _literal_values(value) if value is not None else None
            if values is not None:
                where[values].append(f"{module}.{name}")
    twice = {values: names for values, names in where.items() if len(names) > 1}
    assert twice == {}


def test_no_tuple_copies_a_literal_by_hand() -> None:
    """A tuple of a Literal's values is ``get_args(TheLiteral)``, never a second list."""
    literals: dict[tuple[str, ...], str] = {}
    tuples: list[tuple[str, tuple[str, ...]]] = []
    for module, tree in _modules():
        for name, value in _assignments(tree):
            if value is None:
                continue
            values = _literal_values(value)
            if values is not None and len(values) > 1:
                literals[values] = f"{module}.{name}"
            copied = _string_tuple(value)
            if copied is not None and len(copied) > 1:
                tuples.append((f"{module}.{name}", copied))
    copies = {
        name: literals[values]
        for name, values in tuples
        if values in literals and name.rsplit(".", 1)[1] not in NOT_COPIES
    }
    assert copies == {}


def test_every_engine_error_is_raised_somewhere() -> None:
    """An error class nobody raises (directly, or through a subclass) only misleads the
    reader of the error tree."""
    bases: dict[str, list[str]] = {}
    built: set[str] = set()
    for module, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and module.startswith("engine."):
                bases[node.name] = [b.id for b in node.bases if isinstance(b, ast.Name)]
            elif isinstance(node, ast.Call):  # built, or handed to what builds it
                for part in (node.func, *node.args, *(k.value for k in node.keywords)):
                    if isinstance(part, ast.Name):
                        built.add(part.id)
                    elif isinstance(part, ast.Attribute):
                        built.add(part.attr)
            elif isinstance(node, ast.Raise) and isinstance(node.exc, ast.Name):
                built.add(node.exc.id)
    errors = {"EngineError"}
    while True:
        more = {name for name, parents in bases.items() if set(parents) & errors} - errors
        if not more:
            break
        errors |= more
    used = set(built & errors)
    for name in sorted(used):  # a raised error's ancestors are in use too
        stack = [name]
        while stack:
            for parent in bases.get(stack.pop(), []):
                if parent in errors and parent not in used:
                    used.add(parent)
                    stack.append(parent)
    assert sorted(errors - used) == []
