"""Which members answer a turn, as SillyTavern's ``generateGroupWrapper`` decides it.

:func:`activate` takes the group, the members' talkativeness, what started the turn and a
seed, and gives the members who speak, in order. Every random choice draws from one
``random.Random(seed)``, so a seed stored with the floor gives the same speakers again.

SillyTavern's rules, kept here:

- a turn is a user's when it has non-empty user input; otherwise (auto mode, a turn a game
  master starts) the newest message's text is the activation text;
- muted members never speak on their own; a member called by name (``speak``) speaks even
  when muted, as SillyTavern's forced member (``force_chid``) does;
- ``natural``: each word of the text, in order, activates the first member (in list order)
  whose name has that word (words are ASCII ``\\w+`` runs, lowercased, as ``extractAllWords``
  reads them); then every member, in shuffled order, speaks if its talkativeness is at least
  a random roll; if nobody was chosen, one member at random among those with talkativeness
  above 0 (all members if none has any). In a turn that is not a user's, the last speaker is
  left out of both the mentions and the rolls unless self-responses are allowed;
- ``list``: every unmuted member in list order;
- ``pooled``: one member at random among those who have not spoken since the user's last
  message (all of them in a user's turn); when everyone has, one at random other than the
  last speaker;
- ``manual``: nobody answers a user's message; a turn that is not a user's gets one unmuted
  member at random.
"""

from __future__ import annotations

import random
import re
from collections.abc import Collection, Mapping, Sequence

from engine.errors import NotFoundError
from engine.formats.cards import DEFAULT_TALKATIVENESS
from engine.group.settings import GroupSettings

# JavaScript's /\b\w+\b/g without the "u" flag: ASCII word characters only.
_WORD = re.compile(r"\b\w+\b", re.ASCII)


def extract_words(text: str) -> list[str]:
    """The words of ``text`` lowercased, as SillyTavern's ``extractAllWords`` finds them
    (``"Mira-Vale, hi!"`` gives ``["mira", "vale", "hi"]``)."""
    return [word.lower() for word in _WORD.findall(text)]


def activate(
    settings: GroupSettings,
    *,
    talkativeness: Mapping[str, float],
    user_input: str | None,
    seed: int,
    last_message: str = "",
    last_speaker: str | None = None,
    spoken_since_user: Collection[str] = (),
    speak: str | None = None,
) -> tuple[str, ...]:
    """The members who answer this turn, in the order they speak.

    ``talkativeness`` maps member names to their card's value (missing: SillyTavern's 0.5).
    ``user_input`` is the user's new message (``None`` or empty: a turn not started by a
    user). ``last_message`` is the newest visible message's text and ``last_speaker`` its
    author when that is a member (``None`` when it is the user's or there is none).
    ``spoken_since_user`` names the members who replied after the user's last message (for
    ``pooled``). ``speak`` calls one member by name, whatever the strategy and even when
    muted; a name that is not a member raises :class:`~engine.errors.NotFoundError`.
    """
    if speak is not None:
        if speak not in settings.members:
            raise NotFoundError(f"{speak} is not in this group")
        return (speak,)
    rng = random.Random(seed)
    user_turn = bool(user_input)
    enabled = settings.unmuted
    if settings.strategy == "list":
        return enabled
    if settings.strategy == "manual":
        return () if user_turn or not enabled else (rng.choice(enabled),)
    if settings.strategy == "pooled":
        spoken = () if user_turn else spoken_since_user
        return pooled(enabled, spoken=spoken, last_speaker=last_speaker, rng=rng)
    banned = None if user_turn or settings.allow_self_responses else last_speaker
    text = user_input if user_input else last_message
    return natural(enabled, text=text, talkativeness=talkativeness, banned=banned, rng=rng)


def natural(
    members: Sequence[str],
    *,
    text: str,
    talkativeness: Mapping[str, float],
    banned: str | None,
    rng: random.Random,
) -> tuple[str, ...]:
    """SillyTavern's natural order over ``members`` (the unmuted ones); ``banned`` is the
    member who may not answer itself."""
    chosen: list[str] = []
    name_words = {name: extract_words(name) for name in members}
    for word in extract_words(text):
        for name in members:
            if name != banned and word in name_words[name]:
                chosen.append(name)
                break
    shuffled = list(members)
    rng.shuffle(shuffled)
    chatty: list[str] = []
    for name in shuffled:
        if name == banned:
            continue
        roll = rng.random()
        chance = talkativeness.get(name, DEFAULT_TALKATIVENESS)
        if chance >= roll:
            chosen.append(name)
        if chance > 0:
            chatty.append(name)
    if not chosen and members:
        # SillyTavern's fallback pool is every member (the banned one too) when none is
        # talkative at all.
        chosen.append(rng.choice(chatty or list(members)))
    return tuple(dict.fromkeys(chosen))


def pooled(
    members: Sequence[str],
    *,
    spoken: Collection[str],
    last_speaker: str | None,
    rng: random.Random,
) -> tuple[str, ...]:
    """SillyTavern's pooled order: one member who has not spoken yet, else anyone but the
    last speaker (when there is more than one member)."""
    if not members:
        return ()
    waiting = [name for name in members if name not in spoken]
    if waiting:
        return (rng.choice(waiting),)
    pool = list(members)
    if len(members) > 1 and last_speaker is not None:
        pool = [name for name in members if name != last_speaker]
    return (rng.choice(pool),)
