"""The SQL storage adapter satisfies the storage Protocols of ``engine.ports`` (checked by
mypy --strict, since Protocols are structural)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_sql_storage_implements_the_storage_port() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--no-error-summary",
            "tests/test_storage/conformance_check.py",
            "adapters/storage",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
