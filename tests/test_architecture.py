"""The project's contracts: the engine stays pure, it and its edges are strictly typed, and the
code is linted."""

from __future__ import annotations

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
