"""The characters' own webhooks in one channel (issue 17), through discord.py and the fake:
at most ``MAX_CHARACTER_WEBHOOKS``, the least recently used one renamed and given the new
picture past it; a changed picture is uploaded again; a name Discord refuses leaves the
character on the shared webhook, asked once. Pictures come from the fake service's stored
PNG cards."""

from __future__ import annotations

from adapters.discord.avatars import (
    MAX_CHARACTER_WEBHOOKS,
    MAX_REMEMBERED_REFUSALS,
    MAX_WEBHOOK_NAME,
    CharacterHooks,
)
from adapters.discord.convert import Place
from adapters.discord.runner import DiscordRunner
from engine.turns.api import MAIN_BRANCH
from tests.fakes.discord import FakeDiscord
from tests.fakes.pictures import picture
from tests.test_discord.conftest import PacedService, Starter, World
from tests.test_discord.real_engine import key_of

SHARED_NAME = "tavernbot"


def _give_picture(service: PacedService, world: World, name: str, image: bytes) -> None:
    service.assets[(key_of(world).realm, "card", name)] = image


async def _say(runner: DiscordRunner, world: World, name: str, text: str) -> int:
    """``name`` posts ``text`` in #rp the way a reply does; the webhook that posted it."""
    place = Place(key=key_of(world), branch=MAIN_BRANCH, channel_id=world.rp.id)
    outlet = await runner.outlets.outlet(place, name, None)
    await outlet.send(text)
    assert outlet.webhook_id is not None
    return outlet.webhook_id


def _names(fake: FakeDiscord) -> dict[int, str]:
    return {h.id: h.name for h in fake.webhooks.values()}


async def test_past_the_limit_the_least_recently_used_webhook_is_renamed(
    fake: FakeDiscord, world: World, service: PacedService, start_bot: Starter
) -> None:
    runner = await start_bot()
    names = [f"C{n}" for n in range(MAX_CHARACTER_WEBHOOKS + 1)]
    images = {name: picture((n, 9, 9, 255)) for n, name in enumerate(names)}
    for name in names:
        _give_picture(service, world, name, images[name])
    first = {name: await _say(runner, world, name, "hi") for name in names[:-1]}
    assert len(fake.webhooks) == MAX_CHARACTER_WEBHOOKS

    # One more: C0's webhook (the least recently used) becomes the newcomer's.
    newcomer = await _say(runner, world, names[-1], "hello")
    assert newcomer == first["C0"]
    assert len(fake.webhooks) == MAX_CHARACTER_WEBHOOKS
    hook = fake.webhooks[newcomer]
    assert (hook.name, hook.avatar_bytes()) == (names[-1], images[names[-1]])

    # C0 again: now C1's webhook is the least recently used one.
    assert await _say(runner, world, "C0", "back") == first["C1"]
    assert fake.webhooks[first["C1"]].avatar_bytes() == images["C0"]
    assert len(fake.webhooks) == MAX_CHARACTER_WEBHOOKS
    assert runner.outlets.characters.created == MAX_CHARACTER_WEBHOOKS


async def test_a_changed_picture_is_given_to_the_same_webhook(
    fake: FakeDiscord, world: World, service: PacedService, start_bot: Starter
) -> None:
    runner = await start_bot()
    _give_picture(service, world, "Mira", picture((1, 1, 1, 255)))
    hook_id = await _say(runner, world, "Mira", "one")
    assert await _say(runner, world, "Mira", "two") == hook_id
    assert runner.outlets.characters.edited == 0
    _give_picture(service, world, "Mira", picture((2, 2, 2, 255)))  # re-imported
    assert await _say(runner, world, "Mira", "three") == hook_id
    assert fake.webhooks[hook_id].avatar_bytes() == picture((2, 2, 2, 255))
    assert runner.outlets.characters.edited == 1


async def test_a_name_discord_refuses_speaks_through_the_shared_webhook(
    fake: FakeDiscord, world: World, service: PacedService, start_bot: Starter
) -> None:
    runner = await start_bot()
    _give_picture(service, world, "Discord Dan", picture((5, 5, 5, 255)))
    creations = len([c for c in fake.calls if c.path.endswith("/webhooks")])
    for text in ("one", "two"):
        hook_id = await _say(runner, world, "Discord Dan", text)
        assert _names(fake)[hook_id] == SHARED_NAME
    posted = [m for m in fake.messages.values() if m.get("webhook_id")]
    assert [m["author"]["username"] for m in posted] == ["Discord Dan", "Discord Dan"]
    # Asked once (refused), then the shared webhook was made; not asked again.
    tried = [c for c in fake.calls if c.method == "POST" and c.path.endswith("/webhooks")]
    assert [c.body["name"] for c in tried[creations:]] == ["Discord Dan", SHARED_NAME]
    assert [c.status for c in tried[creations:]] == [400, 200]


async def test_without_a_picture_the_shared_webhook_as_before(
    fake: FakeDiscord, world: World, service: PacedService, start_bot: Starter
) -> None:
    runner = await start_bot()
    service.assets[(key_of(world).realm, "card", "Finn")] = b'{"name": "Finn"}'
    hook_id = await _say(runner, world, "Finn", "ahoy")
    assert _names(fake) == {hook_id: SHARED_NAME}
    assert fake.webhooks[hook_id].avatar is None


async def test_a_long_name_is_cut_to_discords_webhook_name_limit(
    fake: FakeDiscord, world: World, service: PacedService, start_bot: Starter
) -> None:
    runner = await start_bot()
    name = "Lady " + "M" * 120
    _give_picture(service, world, name, picture((3, 3, 3, 255)))
    hook_id = await _say(runner, world, name, "greetings")
    assert _names(fake)[hook_id] == name[:MAX_WEBHOOK_NAME]
    # The message itself still carries the name Discord shows (cut the same way).
    posted = [m for m in fake.messages.values() if m.get("webhook_id") == str(hook_id)]
    assert posted[-1]["author"]["username"] == name[:MAX_WEBHOOK_NAME]


def test_refusals_are_remembered_up_to_their_limit() -> None:
    hooks = CharacterHooks(None)
    for n in range(MAX_REMEMBERED_REFUSALS + 1):
        assert hooks._first_refusal(1, f"C{n}", "digest")
    assert not hooks._first_refusal(1, f"C{MAX_REMEMBERED_REFUSALS}", "digest")
    assert len(hooks._refused) == MAX_REMEMBERED_REFUSALS
    assert hooks._first_refusal(1, "C0", "digest")  # the oldest was forgotten
