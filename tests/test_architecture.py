"""The project's contracts: the engine stays pure, it and its edges are strictly typed, and the
code is linted."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys

from tests.conftest import ROOT


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(ROOT / ".venv" / "bin")) or shutil.which(name)
    assert found, f"{name} is not installed; install the '.[dev]' extra"
    return found


def test_import_contracts_hold() -> None:
    result = _run(_tool("lint-imports"))
    assert result.returncode == 0, result.stdout + result.stderr


TYPED_PACKAGES = ("engine", "adapters", "bot")
"""The whole service, the edges where it meets libraries and users as strictly as the engine."""


def test_code_is_strictly_typed() -> None:
    # One run: the packages are checked against each other's real signatures.
    result = _run(sys.executable, "-m", "mypy", "--no-error-summary", *TYPED_PACKAGES)
    assert result.returncode == 0, result.stdout + result.stderr


def test_code_is_linted() -> None:
    result = _run(sys.executable, "-m", "ruff", "check", "engine", "adapters", "bot", "tests")
    assert result.returncode == 0, result.stdout + result.stderr


DYNAMIC_IMPORTERS = frozenset({"importlib", "pkgutil"})
"""Modules that load code by a name computed at run time: the project imports its own modules
plainly, so the type checker, the import contracts and a reader all see every dependency."""


def _imported_names(node: ast.AST) -> list[str]:
    """The modules ``node`` imports (``__import__`` for a call of it), none for other nodes."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return [node.func.id] if node.func.id == "__import__" else []
    return []


def test_project_modules_are_imported_plainly() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {name}"
        for package in ("engine", "adapters", "bot")
        for path in sorted((ROOT / package).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        for name in _imported_names(node)
        if name == "__import__" or name.split(".")[0] in DYNAMIC_IMPORTERS
    ]
    assert not found, "dynamic imports:\n" + "\n".join(found)
