"""``tavernbot export group --session S [--out FILE]``: the session's group as a SillyTavern
group definition, every imported field kept; a solo session or no session is one line."""

from __future__ import annotations

import json

from tests.test_import_export_cli.support import Cli

DEFINITION = {
    "id": "1700000000000",
    "name": "Crew",
    "members": ["Mira.png", "Bob.png"],
    "disabled_members": ["Bob.png"],
    "activation_strategy": 3,
    "generation_mode": 0,
    "chat_id": "Crew - 1",
    "chats": ["Crew - 1"],
    "fav": True,
    "date_added": 1700000000000,
    "unknown_key": {"kept": True},
}


def _card(cli: Cli, name: str) -> None:
    path = cli.dir / f"{name}.json"
    data = {"name": name, "description": f"{name}.", "first_mes": ""}
    path.write_text(json.dumps({"spec": "chara_card_v2", "spec_version": "2.0", "data": data}))
    cli.ok("import", "card", path, "--session", "crew")


def test_export_group_writes_the_imported_definition(cli: Cli) -> None:
    _card(cli, "Mira")
    _card(cli, "Bob")
    group = cli.dir / "1700000000000.json"
    group.write_text(json.dumps(DEFINITION))
    cli.ok("import", "group", group, "--session", "crew")

    out = cli.dir / "out.json"
    code, _, err = cli("export", "group", "--session", "crew", "--out", out)
    assert code == 0 and f"to {out}" in err
    assert json.loads(out.read_text()) == DEFINITION
    assert json.loads(cli.ok("export", "group", "--session", "crew")) == DEFINITION


def test_export_group_refuses_a_solo_session_in_one_line(cli: Cli) -> None:
    _card(cli, "Mira")
    code, out, err = cli("export", "group", "--session", "crew")
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "session crew plays one character; a group needs two" in err
    code, _, err = cli("export", "group")
    assert code != 0 and "export group needs --session NAME" in err
