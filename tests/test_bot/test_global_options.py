"""``--config`` and ``-v`` are accepted after the command too (issue 16: ``tavernbot run
--config x`` was refused with the top-level usage)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bot.cli import build_parser
from tests.conftest import ROOT


def test_global_options_parse_before_or_after_the_command() -> None:
    parser = build_parser()
    for argv in (
        ["--config", "x.toml", "run"],
        ["run", "--config", "x.toml"],
        ["memory", "forget", "--config", "x.toml", "m1"],
        ["-v", "config", "check", "--config", "x.toml"],
    ):
        args = parser.parse_args(argv)
        assert args.config == Path("x.toml"), argv
    assert parser.parse_args(["run"]).config is None
    assert parser.parse_args(["memory", "jobs", "-v"]).verbose is True
    assert parser.parse_args(["memory", "jobs"]).verbose is False


def test_the_config_named_after_the_command_is_the_one_used(tmp_path: Path) -> None:
    db = tmp_path / "from-config.db"
    config = tmp_path / "mine.toml"
    config.write_text(f'[database]\nurl = "sqlite+aiosqlite:///{db}"\n', encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot",
            "memory",
            "list",
            "--session",
            "nobody",
            "--config",
            str(config),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)},
        check=False,
    )
    assert "usage:" not in done.stderr
    assert done.returncode == 1, done.stderr
    assert "no console session named 'nobody'" in done.stderr
    assert db.exists()
