"""``macros preview --var bad`` is a usage error: exit 2 like every usage error (issue 16:
it exited 1)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bot.cli import main
from tests.conftest import ROOT


def test_a_var_without_equals_is_a_usage_error_in_the_process() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bot", "macros", "preview", "{{getvar::a}}", "--var", "bad"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "--var" in done.stderr and "'bad'" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.parametrize("option", ["--var", "--global-var"])
@pytest.mark.parametrize("value", ["bad", "=v"])
def test_each_pair_option_exits_2(
    option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["macros", "preview", "x", option, value])
    assert stopped.value.code == 2
    assert f"{option}" in capsys.readouterr().err


def test_good_pairs_still_work(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["macros", "preview", "{{getvar::a}}/{{getglobalvar::b}}", "--var", "a=1=2"]
        + ["--global-var", "b=x"]
    )
    assert code == 0
    assert capsys.readouterr().out.splitlines()[0] == "1=2/x"
