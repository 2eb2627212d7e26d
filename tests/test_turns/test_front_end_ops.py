"""The service operations the platform front ends call (personas, memory, assets, current
branch, session options, closing, floor speakers, card pictures, chat headers), on the real
engine: a SQLite file database and the offline model. Every test also checks that another
realm sees nothing of the first."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from adapters.storage import SqlStorage
from bot.cli_commands.exports import asset_bytes
from bot.scheduler import build_memory_service
from engine.errors import ConfigurationError, NotFoundError
from engine.formats.cards import AVATAR_KEY, CharacterCard, card_to_png, parse_card
from engine.memory.plan import MutationPlan
from engine.memory.records import (
    MemoryKind,
    MemoryRecord,
    MemoryScope,
    MemorySource,
    Provenance,
)
from engine.timeline.assets import AssetService
from engine.timeline.errors import InvalidNameError
from engine.turns.api import MAIN_BRANCH, SessionKey, Speaker, UserLine
from engine.turns.errors import SessionClosedError
from engine.turns.memory_access import MAX_MEMORY_LIST
from engine.turns.options import MAX_MEMORY_BUDGET, MEMORY_BUDGET, SessionDefaults
from engine.turns.personas import MAX_PERSONA_DESCRIPTION, MAX_PERSONA_NAME
from engine.turns.profiles import LLMProfile
from engine.turns.service import TavernService
from tests.test_turns.conftest import ANN, KEY, Recorder, line, offline_service

pytestmark = pytest.mark.timeout(60)

GUILD_A = SessionKey(platform="discord", realm="g-a", key="c-1")
GUILD_A2 = SessionKey(platform="discord", realm="g-a", key="c-2")
GUILD_B = SessionKey(platform="discord", realm="g-b", key="c-9")
BOB = Speaker(id="u2", name="Bob")
CARD = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {"name": "Mira", "description": "Mira is the friend of {{user}}.", "first_mes": ""},
}


@pytest.fixture
async def svc(storage: SqlStorage, events: Recorder) -> AsyncIterator[TavernService]:
    memory = build_memory_service(storage, model=None, model_name="offline", events=events)
    # These sessions play SillyTavern's prompt alone: the tests put memories in by hand.
    strict = SessionDefaults(prompt_mode="compat_strict")
    service = offline_service(storage, events, memory=memory, session_defaults=strict)
    await service.start()
    for key in (GUILD_A, GUILD_A2, GUILD_B):
        await service.open_session(key)
    yield service
    await service.aclose()


def card_bytes(name: str = "Mira") -> bytes:
    data = dict(CARD, data=dict(CARD["data"], name=name))  # type: ignore[arg-type]
    return json.dumps(data).encode()


# ---------------------------------------------------------------------- personas


async def test_a_persona_names_its_speaker_in_the_realm_only(svc: TavernService) -> None:
    await svc.import_asset(GUILD_A, "card", "mira.json", card_bytes())
    await svc.set_persona(GUILD_A, ANN.id, "Lady Ann", "A knight errant.")
    assert await svc.persona(GUILD_A, ANN.id) == ("Lady Ann", "A knight errant.")
    assert await svc.persona(GUILD_A2, ANN.id) == ("Lady Ann", "A knight errant.")  # same realm
    assert await svc.persona(GUILD_B, ANN.id) is None  # another guild
    assert await svc.persona(GUILD_A, BOB.id) is None

    await svc.respond(GUILD_A, MAIN_BRANCH, [UserLine(speaker=ANN, text="hello")])
    assert await svc.floor_speakers(GUILD_A, MAIN_BRANCH, 1) == [
        Speaker(id=ANN.id, name="Lady Ann")
    ]
    # {{user}} in the next prompt is the persona's name.
    prompt = await svc.dry_run(GUILD_A, MAIN_BRANCH, "and now?")
    text = json.dumps(prompt["messages"])
    assert "friend of Lady Ann" in text and "friend of Ann" not in text
    # ... and the persona's description is the persona prompt.
    assert "A knight errant." in text

    await svc.respond(GUILD_B, MAIN_BRANCH, [UserLine(speaker=ANN, text="hi")])
    assert await svc.floor_speakers(GUILD_B, MAIN_BRANCH, 1) == [ANN]


async def test_personas_survive_a_restart_and_can_be_cleared(
    svc: TavernService, storage: SqlStorage, events: Recorder
) -> None:
    await svc.set_persona(GUILD_A, BOB.id, "Robert")
    again = offline_service(storage, events)
    assert await again.persona(GUILD_A, BOB.id) == ("Robert", "")
    await again.clear_persona(GUILD_A, BOB.id)
    assert await again.persona(GUILD_A, BOB.id) is None
    with pytest.raises(NotFoundError, match="no persona"):
        await again.clear_persona(GUILD_A, BOB.id)


async def test_persona_limits_are_refused(svc: TavernService) -> None:
    with pytest.raises(ConfigurationError, match="needs a name"):
        await svc.set_persona(GUILD_A, ANN.id, "  ", "x")
    with pytest.raises(ConfigurationError, match="MAX_PERSONA_NAME"):
        await svc.set_persona(GUILD_A, ANN.id, "n" * (MAX_PERSONA_NAME + 1), "")
    with pytest.raises(ConfigurationError, match="MAX_PERSONA_DESCRIPTION"):
        await svc.set_persona(GUILD_A, ANN.id, "Ann", "d" * (MAX_PERSONA_DESCRIPTION + 1))
    await svc.set_persona(GUILD_A, ANN.id, "n" * MAX_PERSONA_NAME, "d" * MAX_PERSONA_DESCRIPTION)
    assert await svc.persona(GUILD_A, ANN.id) is not None


# ---------------------------------------------------------------------- memory


def _record(
    n: int, *, realm: str, session: str | None, branch: str | None, text: str
) -> MemoryRecord:
    scope = MemoryScope.GLOBAL if session is None else MemoryScope.CHAT
    return MemoryRecord(
        id=f"mem-{n}",
        kind=MemoryKind.FACT,
        scope=scope,
        scope_id=realm if session is None else session,
        realm_id=realm,
        session_id=session,
        origin_branch=branch,
        text=text,
        provenance=Provenance(source=MemorySource.MANUAL, floor_no=1),
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        created_floor=1,
        key=f"k{n}",
        importance=0.25 * n,
    )


async def _seed_memories(svc: TavernService) -> None:
    ids_a = await svc.parts.sessions.ids(GUILD_A)
    ids_b = await svc.parts.sessions.ids(GUILD_B)
    main_a = await svc.parts.sessions.branch(ids_a.session_id, MAIN_BRANCH)
    main_b = await svc.parts.sessions.branch(ids_b.session_id, MAIN_BRANCH)
    for key in (GUILD_A, GUILD_B):
        await svc.respond(key, MAIN_BRANCH, [line("We enter the cave.")])
    ra, sa, rb, sb = (
        str(x) for x in (ids_a.realm_id, ids_a.session_id, ids_b.realm_id, ids_b.session_id)
    )
    records = (
        _record(1, realm=ra, session=sa, branch=str(main_a.id), text="Ann owns a silver key"),
        _record(2, realm=ra, session=None, branch=None, text="The kingdom is at war"),
        _record(3, realm=rb, session=sb, branch=str(main_b.id), text="Bob hides a golden coin"),
    )
    assert svc.memory is not None
    await svc.memory.repo.apply_plan(MutationPlan(new_records=records))


async def test_memories_are_listed_searched_and_forgotten_per_realm(svc: TavernService) -> None:
    await _seed_memories(svc)
    listed = await svc.memories(GUILD_A, MAIN_BRANCH)
    assert {m.id for m in listed} == {"mem-1", "mem-2"}
    one = next(m for m in listed if m.id == "mem-1")
    assert (one.kind, one.scope, one.text, one.importance) == (
        "fact",
        "chat",
        "k1: Ann owns a silver key",
        0.25,
    )
    assert [m.id for m in await svc.memories(GUILD_A, MAIN_BRANCH, query="silver key")] == [
        "mem-1"
    ]
    assert await svc.memories(GUILD_A, MAIN_BRANCH, query="golden coin") == []
    assert [m.id for m in await svc.memories(GUILD_B, MAIN_BRANCH)] == ["mem-3"]
    assert len(await svc.memories(GUILD_A, MAIN_BRANCH, limit=1)) == 1

    with pytest.raises(NotFoundError, match="mem-3"):
        await svc.forget_memory(GUILD_A, "mem-3")  # another realm's memory
    with pytest.raises(NotFoundError):
        await svc.forget_memory(GUILD_A, "mem-404")
    await svc.forget_memory(GUILD_A, "mem-1")
    assert [m.id for m in await svc.memories(GUILD_A, MAIN_BRANCH)] == ["mem-2"]
    assert [m.id for m in await svc.memories(GUILD_B, MAIN_BRANCH)] == ["mem-3"]


async def test_memory_list_limit_is_capped(svc: TavernService) -> None:
    ids = await svc.parts.sessions.ids(GUILD_A)
    main = await svc.parts.sessions.branch(ids.session_id, MAIN_BRANCH)
    await svc.respond(GUILD_A, MAIN_BRANCH, [line("go")])
    records = tuple(
        _record(
            100 + n,
            realm=str(ids.realm_id),
            session=str(ids.session_id),
            branch=str(main.id),
            text=f"fact number {n}",
        )
        for n in range(MAX_MEMORY_LIST + 5)
    )
    assert svc.memory is not None
    await svc.memory.repo.apply_plan(MutationPlan(new_records=records))
    assert len(await svc.memories(GUILD_A, MAIN_BRANCH, limit=10_000)) == MAX_MEMORY_LIST
    assert await svc.memories(GUILD_A, MAIN_BRANCH, limit=-3) == []


async def test_memory_without_a_memory_service_is_a_configuration_error(
    service: TavernService,
) -> None:
    with pytest.raises(ConfigurationError, match="memory is not enabled"):
        await service.memories(KEY, MAIN_BRANCH)
    with pytest.raises(ConfigurationError, match="memory is not enabled"):
        await service.forget_memory(KEY, "mem-1")


# ---------------------------------------------------------------------- assets


async def test_import_without_binding_then_bind_and_unbind(svc: TavernService) -> None:
    await svc.import_asset(GUILD_A, "card", "mira.json", card_bytes(), bind=False)
    book = {"entries": {"0": {"uid": 0, "key": ["cave"], "content": "Caves are dark."}}}
    await svc.import_asset(
        GUILD_A, "worldbook", "lore.json", json.dumps(book).encode(), bind=False
    )
    info = await svc.session_info(GUILD_A)
    assert info.character is None and info.worldbooks == ()
    assert await svc.list_assets(GUILD_A, "card") == ["Mira"]
    assert await svc.list_assets(GUILD_A2, "worldbook") == ["lore"]  # the realm's
    assert await svc.list_assets(GUILD_B, "card") == []  # nothing of another guild

    assert (await svc.bind_asset(GUILD_A, "card", "Mira")).character == "Mira"
    assert (await svc.bind_asset(GUILD_A, "worldbook", "lore")).worldbooks == ("lore",)
    assert (await svc.bind_asset(GUILD_A, "worldbook", "lore")).worldbooks == ("lore",)
    reply = await svc.respond(GUILD_A, MAIN_BRANCH, [line("hi")])
    assert reply.character == "Mira"
    assert (await svc.unbind_asset(GUILD_A, "worldbook", "lore")).worldbooks == ()
    with pytest.raises(NotFoundError, match="does not use"):
        await svc.unbind_asset(GUILD_A, "worldbook", "lore")
    assert (await svc.unbind_asset(GUILD_A, "card", "Mira")).character is None

    with pytest.raises(NotFoundError, match="no card named 'Mira'"):
        await svc.bind_asset(GUILD_B, "card", "Mira")
    with pytest.raises(ConfigurationError, match="not a realm asset"):
        await svc.list_assets(GUILD_A, "chat")


async def test_presets_and_regex_sets_bind(svc: TavernService) -> None:
    await svc.import_asset(GUILD_A, "preset", "house.json", b'{"prompts": []}', bind=False)
    scripts = [{"scriptName": "x", "findRegex": "/a/g", "replaceString": "b"}]
    await svc.import_asset(GUILD_A, "regex", "fix.json", json.dumps(scripts).encode(), bind=False)
    assert (await svc.bind_asset(GUILD_A, "preset", "house")).preset == "house"
    await svc.bind_asset(GUILD_A, "regex", "fix")
    ids = await svc.parts.sessions.ids(GUILD_A)
    assert (await svc.parts.sessions.settings(ids.session_id)).settings.regex_sets == ("fix",)
    assert (await svc.unbind_asset(GUILD_A, "preset", "house")).preset is None
    await svc.unbind_asset(GUILD_A, "regex", "fix")
    assert (await svc.parts.sessions.settings(ids.session_id)).settings.regex_sets == ()


async def test_profiles_and_personas_are_assets_users_never_see(
    svc: TavernService, storage: SqlStorage
) -> None:
    await svc.save_profile(GUILD_A, LLMProfile(id="cheap", model="offline", provider="offline"))
    await svc.set_persona(GUILD_A, ANN.id, "Lady Ann")
    ids = await svc.parts.sessions.ids(GUILD_A)
    kinds = {a.kind for a in await AssetService(storage).list(ids.realm_id)}
    assert kinds == {"profile", "persona"}
    for kind in ("card", "preset", "worldbook", "regex"):
        assert await svc.list_assets(GUILD_A, kind) == []  # type: ignore[arg-type]
    with pytest.raises(InvalidNameError):
        await AssetService(storage).names(ids.realm_id, "profile")  # type: ignore[arg-type]
    with pytest.raises(InvalidNameError):
        await AssetService(storage).list(ids.realm_id, "avatar")  # type: ignore[arg-type]


async def test_a_png_card_keeps_its_picture_for_the_export(
    svc: TavernService, storage: SqlStorage
) -> None:
    picture = card_to_png(parse_card(card_bytes("Pictured"), source="x.json"))
    await svc.import_asset(GUILD_A, "card", "pictured.png", picture)
    ids = await svc.parts.sessions.ids(GUILD_A)
    asset = await AssetService(storage).get(ids.realm_id, "card", "Pictured")
    assert isinstance(asset.data.get(AVATAR_KEY), str)
    exported = asset_bytes("card", asset.name, asset.data)
    assert exported.startswith(b"\x89PNG")
    again: CharacterCard = parse_card(exported, source="again.png")
    assert again.name == "Pictured" and again.avatar is not None
    # A JSON card has no picture to keep.
    await svc.import_asset(GUILD_A, "card", "plain.json", card_bytes("Plain"))
    plain = await AssetService(storage).get(ids.realm_id, "card", "Plain")
    assert AVATAR_KEY not in plain.data
    assert (await svc.respond(GUILD_A, MAIN_BRANCH, [line("hi")])).character == "Plain"


# ---------------------------------------------------------------------- branches, options


async def test_current_branch_is_persisted_per_session(
    svc: TavernService, storage: SqlStorage, events: Recorder
) -> None:
    await svc.respond(GUILD_A, MAIN_BRANCH, [line("one")])
    assert await svc.current_branch(GUILD_A) == MAIN_BRANCH
    await svc.fork(GUILD_A, MAIN_BRANCH, after_floor=1, name="side")
    await svc.set_current_branch(GUILD_A, "side")
    assert await svc.current_branch(GUILD_A) == "side"
    assert await svc.current_branch(GUILD_A2) == MAIN_BRANCH
    again = offline_service(storage, events)
    assert await again.current_branch(GUILD_A) == "side"
    assert (await again.session_info(GUILD_A)).current_branch == "side"
    with pytest.raises(NotFoundError):
        await svc.set_current_branch(GUILD_A, "nowhere")
    with pytest.raises(NotFoundError):
        await svc.set_current_branch(GUILD_B, "side")  # a branch of another session
    await svc.reset(GUILD_A)
    assert await svc.current_branch(GUILD_A) == MAIN_BRANCH


async def test_session_options_are_validated_and_shown(svc: TavernService) -> None:
    assert (await svc.session_info(GUILD_A)).reply_policy is None
    info = await svc.set_session_option(GUILD_A, "reply_policy", "quiet_period")
    assert info.reply_policy == "quiet_period"
    assert (await svc.set_session_option(GUILD_A, "macro_mode", "full")).macro_mode == "full"
    info = await svc.set_session_option(GUILD_A, "prompt_mode", "compat_plus")
    assert info.prompt_mode == "compat_plus"
    with pytest.raises(ConfigurationError, match="policy must be one of"):
        await svc.set_session_option(GUILD_A, "reply_policy", "sometimes")
    with pytest.raises(ConfigurationError, match="unknown session option 'character'"):
        await svc.set_session_option(GUILD_A, "character", "Mira")
    assert (await svc.session_info(GUILD_A)).reply_policy == "quiet_period"
    assert (await svc.session_info(GUILD_A2)).reply_policy is None


async def test_a_closed_session_refuses_turns_until_reopened(
    svc: TavernService, storage: SqlStorage, events: Recorder
) -> None:
    await svc.respond(GUILD_A, MAIN_BRANCH, [line("one")])
    await svc.close_session(GUILD_A)
    assert (await svc.session_info(GUILD_A)).closed
    with pytest.raises(SessionClosedError, match="closed"):
        await svc.respond(GUILD_A, MAIN_BRANCH, [line("two")])
    with pytest.raises(SessionClosedError):
        await svc.regenerate(GUILD_A, MAIN_BRANCH)
    await svc.respond(GUILD_A2, MAIN_BRANCH, [line("elsewhere")])  # other sessions play on
    # The data stays, and another process sees the flag.
    assert len(await svc.history(GUILD_A, MAIN_BRANCH)) == 1
    again = offline_service(storage, events)
    with pytest.raises(SessionClosedError):
        await again.respond(GUILD_A, MAIN_BRANCH, [line("two")])
    assert not (await again.open_session(GUILD_A)).closed
    assert (await again.respond(GUILD_A, MAIN_BRANCH, [line("two")])).floor == 2
    assert "session.closed" in events.names() and "session.reopened" in events.names()
    # A refused turn stored nothing and is no failed generation.
    assert "generation.failed" not in events.names()


async def test_floor_speakers_lists_each_speaker_once(svc: TavernService) -> None:
    lines = [line("a"), line("b", BOB), line("c")]
    await svc.respond(GUILD_A, MAIN_BRANCH, lines)
    assert await svc.floor_speakers(GUILD_A, MAIN_BRANCH, 1) == [ANN, BOB]
    await svc.fork(GUILD_A, MAIN_BRANCH, after_floor=1, name="t")
    assert await svc.floor_speakers(GUILD_A, "t", 1) == [ANN, BOB]  # seen through the fork
    with pytest.raises(NotFoundError, match="no floor 7"):
        await svc.floor_speakers(GUILD_A, MAIN_BRANCH, 7)
    with pytest.raises(NotFoundError):
        await svc.floor_speakers(GUILD_B, MAIN_BRANCH, 1)


# ---------------------------------------------------------------------- export header


async def test_export_keeps_an_imported_chat_header(svc: TavernService) -> None:
    header = {
        "user_name": "Traveller",
        "character_name": "Mira",
        "chat_metadata": {"note_prompt": "keep it short"},
    }
    await svc.configure(GUILD_A, st_chat=header)
    await svc.respond(GUILD_A, MAIN_BRANCH, [line("hi")])
    first = json.loads((await svc.export_chat(GUILD_A, MAIN_BRANCH)).splitlines()[0])
    assert first["user_name"] == "Traveller"
    assert first["chat_metadata"] == {"note_prompt": "keep it short"}
    await svc.respond(GUILD_A2, MAIN_BRANCH, [line("hi")])
    other = json.loads((await svc.export_chat(GUILD_A2, MAIN_BRANCH)).splitlines()[0])
    assert other["user_name"] == ANN.name and other["chat_metadata"] == {}


async def test_memory_budget_is_a_validated_session_setting(svc: TavernService) -> None:
    for bad in (-1, "lots", True, MAX_MEMORY_BUDGET + 1):
        with pytest.raises(ConfigurationError, match="memory_budget"):
            await svc.configure(GUILD_A, memory_budget=bad)
    await svc.configure(GUILD_A, memory_budget=0)
    session = await svc.timeline.find_session("discord", GUILD_A.key)
    assert session is not None and session.settings.extra[MEMORY_BUDGET] == 0
