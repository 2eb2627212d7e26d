"""``[session]`` in the configuration (issue 13): the defaults every new session takes, one-line
exit-2 errors for bad values, environment overrides, and a console session created with them
(an existing session keeps its own settings; ``tavernbot chat --mode/--tools`` set options)."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.storage import open_storage
from bot.app import chat
from bot.cli import main
from bot.config import ConfigError, Settings, load_settings
from engine.turns.api import SessionKey
from engine.turns.options import MAX_MEMORY_BUDGET, SessionDefaults, option_lines
from engine.turns.profiles import environment_profile
from engine.turns.service import TavernService

pytestmark = pytest.mark.timeout(60)


def test_the_defaults_are_compat_plus_memory_on_tools_off() -> None:
    defaults = load_settings(None, environ={}).session.defaults()
    assert defaults == SessionDefaults()
    assert (defaults.prompt_mode, defaults.tools, defaults.memory) == ("compat_plus", False, True)
    assert defaults.macro_mode == "read_only" and defaults.reply_policy is None


def test_the_example_documents_every_session_key() -> None:
    example = (Path(__file__).parents[2] / "config.example.toml").read_text()
    section = example.split("[session]", 1)[1].split("\n[", 1)[0]
    for key in Settings.model_fields["session"].annotation.model_fields:  # type: ignore[union-attr]
        assert f"{key} =" in section, key
    assert load_settings(Path(__file__).parents[2] / "config.example.toml", environ={})


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (
            '[session]\nprompt_mode = "fast"\n',
            ["session.prompt_mode", "'fast'", "compat_strict, compat_plus, native"],
        ),
        ('[session]\ntools = "maybe"\n', ["session.tools", "'maybe'", "boolean"]),
        ("[session]\nmemory = 3\n", ["session.memory", "3"]),
        (
            f"[session]\nmemory_budget = {MAX_MEMORY_BUDGET + 1}\n",
            ["session.memory_budget", str(MAX_MEMORY_BUDGET + 1), str(MAX_MEMORY_BUDGET)],
        ),
        ('[session]\nmacro_mode = "all"\n', ["session.macro_mode", "read_only, full, off"]),
        ('[session]\nreply_policy = "never"\n', ["session.reply_policy", "every_message"]),
        ('[session]\nmood = "calm"\n', ["unknown key", "session.mood"]),
    ],
)
def test_a_bad_session_value_stops_with_exit_2_and_one_line(
    tmp_path: Path, toml: str, expected: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as info:
        load_settings(path, environ={})
    for part in expected:
        assert part in str(info.value), str(info.value)
    for command in (["config", "check"], ["chat", "--session", "x"]):
        assert main(["--config", str(path), *command]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "session." in err[0], err


def test_the_environment_overrides_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text('[session]\nprompt_mode = "native"\ntools = false\n')
    env = {
        "TAVERNBOT_SESSION_PROMPT_MODE": "compat_strict",
        "TAVERNBOT_SESSION_TOOLS": "true",
        "TAVERNBOT_SESSION_MEMORY": "false",
        "TAVERNBOT_SESSION_MEMORY_BUDGET": "900",
    }
    session = load_settings(path, environ=env).session
    assert (session.prompt_mode, session.tools, session.memory, session.memory_budget) == (
        "compat_strict",
        True,
        False,
        900,
    )
    with pytest.raises(ConfigError, match="environment variable TAVERNBOT_SESSION_PROMPT_MODE"):
        load_settings(path, environ={"TAVERNBOT_SESSION_PROMPT_MODE": "loud"})


async def _no_lines() -> AsyncIterator[str]:
    return
    yield ""  # an async generator that ends at once


async def _info(db: Path, name: str) -> dict[str, str]:
    storage = await open_storage(f"sqlite+aiosqlite:///{db}")
    try:
        service = TavernService(
            storage,
            model_for=lambda profile: None,  # type: ignore[arg-type,return-value]
            default_profile=environment_profile(provider="offline", base_url=None, model="x"),
        )
        info = await service.session_info(SessionKey(platform="console", realm="local", key=name))
        return dict(option_lines(info))
    finally:
        await storage.close()


async def _chat(settings: Settings, name: str, **options: str) -> None:
    out = io.StringIO()
    code = await chat(
        settings,
        session=name,
        user="Ann",
        jsonl=True,
        files={},
        options=options,
        lines=_no_lines,
        out=out,
    )
    assert code == 0, out.getvalue()


async def test_a_new_console_session_takes_the_configured_defaults(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    path = tmp_path / "t.toml"
    path.write_text(
        f'[database]\nurl = "sqlite+aiosqlite:///{db}"\n'
        '[session]\nprompt_mode = "native"\ntools = true\nmemory = false\n'
        'memory_budget = 250\nmacro_mode = "full"\n'
    )
    await _chat(load_settings(path, environ={}), "first")
    first = await _info(db, "first")
    assert first == {
        "mode": "native",
        "tools": "on",
        "memory": "off",
        "budget": "250",
        "macros": "full",
        "policy": "default",
        "global_writes": "off",
    }
    # New defaults: the existing session keeps its own, a new one takes the new ones.
    path.write_text(f'[database]\nurl = "sqlite+aiosqlite:///{db}"\n[session]\ntools = false\n')
    settings = load_settings(path, environ={})
    await _chat(settings, "first")
    assert await _info(db, "first") == first
    await _chat(settings, "second")
    second = await _info(db, "second")
    assert (second["mode"], second["tools"], second["memory"]) == ("compat_plus", "off", "on")
    # tavernbot chat --mode/--tools set the options of the session they open.
    await _chat(settings, "second", mode="compat_strict", tools="on")
    second = await _info(db, "second")
    assert (second["mode"], second["tools"]) == ("compat_strict", "on")
