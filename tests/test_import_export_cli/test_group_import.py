"""``tavernbot import group FILE --session S``: a SillyTavern group definition sets the
session's group from the cards already imported; without a session it is refused."""

from __future__ import annotations

import json

from tests.test_import_export_cli.support import Cli


def _card(cli: Cli, name: str) -> None:
    path = cli.dir / f"{name}.json"
    data = {"name": name, "description": f"{name}.", "first_mes": ""}
    path.write_text(json.dumps({"spec": "chara_card_v2", "spec_version": "2.0", "data": data}))
    cli.ok("import", "card", path, "--session", "crew")


def test_a_group_definition_sets_the_sessions_group(cli: Cli) -> None:
    _card(cli, "Mira")
    _card(cli, "Bob")
    group = cli.dir / "1700000000000.json"
    group.write_text(
        json.dumps(
            {
                "id": "1700000000000",
                "name": "Crew",
                "members": ["Mira.png", "Bob.png"],
                "disabled_members": [],
                "activation_strategy": 3,
                "generation_mode": 0,
                "chat_id": "Crew - 1",
            }
        )
    )
    out = cli.ok("import", "group", group, "--session", "crew")
    assert "imported group 'Crew' into session 'crew'" in out
    (settings,) = cli.rows("SELECT settings FROM session WHERE key = 'crew'")
    stored = json.loads(settings[0])["group"]
    assert (stored["members"], stored["strategy"], stored["mode"]) == (
        ["Mira", "Bob"],
        "pooled",
        "swap",
    )
    code, _, err = cli("import", "group", group)
    assert code != 0 and "name the session" in err
