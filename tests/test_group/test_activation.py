"""Who answers a group turn: SillyTavern's four strategies, reproducible from a seed."""

from __future__ import annotations

import pytest

from engine.errors import ConfigurationError, NotFoundError
from engine.group.activation import activate, extract_words
from engine.group.settings import MAX_GROUP_MEMBERS, GroupSettings

QUIET = {"Mira": 0.0, "Bram": 0.0, "Cole Stone": 0.0}
"""Nobody answers on talkativeness alone: only mentions (or the fallback) decide."""


def group(*members: str, **kw: object) -> GroupSettings:
    return GroupSettings(members=members or ("Mira", "Bram", "Cole Stone"), **kw)  # type: ignore[arg-type]


def test_words_are_ascii_runs_lowercased_as_sillytavern_reads_them() -> None:
    assert extract_words("Mira-Vale, what's up? Zoë") == ["mira", "vale", "what", "s", "up", "zo"]


def test_natural_answers_in_mention_order() -> None:
    settings = group()
    spoken = activate(settings, talkativeness=QUIET, user_input="bram, and you MIRA?", seed=1)
    assert spoken == ("Bram", "Mira")


def test_natural_matches_any_word_of_a_multi_word_name() -> None:
    spoken = activate(group(), talkativeness=QUIET, user_input="Mr. Stone?", seed=1)
    assert spoken == ("Cole Stone",)
    # A word matches whole: "stonemason" names nobody, so the fallback picks one member at
    # random among all (none is talkative); across seeds it is not always Cole Stone.
    picks = {
        activate(group(), talkativeness=QUIET, user_input="stonemason", seed=s) for s in range(30)
    }
    assert all(len(p) == 1 for p in picks) and len(picks) > 1


def test_a_mention_counts_once() -> None:
    spoken = activate(group(), talkativeness=QUIET, user_input="Mira? Mira! Bram", seed=5)
    assert spoken == ("Mira", "Bram")


def test_talkativeness_one_always_speaks_after_the_mentioned() -> None:
    chatty = {"Mira": 0.0, "Bram": 1.0, "Cole Stone": 0.0}
    for seed in range(20):
        assert activate(group(), talkativeness=chatty, user_input="Mira?", seed=seed) == (
            "Mira",
            "Bram",
        )


def test_same_seed_same_speakers_and_seeds_differ() -> None:
    even = {"Mira": 0.5, "Bram": 0.5, "Cole Stone": 0.5}
    runs = {
        seed: activate(group(), talkativeness=even, user_input="hello", seed=seed)
        for seed in range(40)
    }
    for seed, spoken in runs.items():
        assert activate(group(), talkativeness=even, user_input="hello", seed=seed) == spoken
    assert len(set(runs.values())) > 1


def test_nobody_talkative_gives_one_member_among_the_talkative() -> None:
    odds = {"Mira": 0.0, "Bram": 0.000001, "Cole Stone": 0.0}
    for seed in range(20):
        spoken = activate(group(), talkativeness=odds, user_input="hello", seed=seed)
        assert spoken == ("Bram",)


def test_missing_talkativeness_is_sillytaverns_half() -> None:
    spoken = {
        activate(group("Mira", "Bram"), talkativeness={}, user_input="hi", seed=s)
        for s in range(40)
    }
    assert ("Mira", "Bram") in spoken or ("Bram", "Mira") in spoken
    assert ("Mira",) in spoken or ("Bram",) in spoken


def test_muted_members_never_speak_on_their_own() -> None:
    settings = group(muted=("Mira",), strategy="natural")
    loud = {"Mira": 1.0, "Bram": 1.0, "Cole Stone": 1.0}
    for seed in range(20):
        spoken = activate(settings, talkativeness=loud, user_input="Mira!", seed=seed)
        assert "Mira" not in spoken
    for strategy in ("list", "pooled", "manual"):
        muted = group(muted=("Mira",), strategy=strategy)
        for seed in range(10):
            assert "Mira" not in activate(
                muted, talkativeness=loud, user_input=None, last_message="Mira?", seed=seed
            )


def test_a_called_member_speaks_even_when_muted() -> None:
    settings = group(muted=("Mira",), strategy="manual")
    assert activate(settings, talkativeness=QUIET, user_input="hi", seed=1, speak="Mira") == (
        "Mira",
    )
    with pytest.raises(NotFoundError, match="Zed is not in this group"):
        activate(settings, talkativeness=QUIET, user_input="hi", seed=1, speak="Zed")


def test_the_last_speaker_does_not_answer_itself_outside_a_user_turn() -> None:
    loud = {"Mira": 1.0, "Bram": 1.0, "Cole Stone": 1.0}
    auto = {"user_input": None, "last_message": "Mira here.", "last_speaker": "Mira"}
    for seed in range(20):
        spoken = activate(group(), talkativeness=loud, seed=seed, **auto)  # type: ignore[arg-type]
        assert "Mira" not in spoken and len(spoken) == 2
    allowed = group(allow_self_responses=True)
    spoken = activate(allowed, talkativeness=QUIET, seed=2, **auto)  # type: ignore[arg-type]
    assert spoken == ("Mira",)  # named in the newest message, and allowed to answer itself
    # In a user's turn the last speaker may answer.
    spoken = activate(
        group(), talkativeness=QUIET, user_input="Mira?", last_speaker="Mira", seed=2
    )
    assert spoken == ("Mira",)


def test_list_is_every_unmuted_member_in_order() -> None:
    settings = group(muted=("Bram",), strategy="list")
    assert activate(settings, talkativeness=QUIET, user_input="Bram?", seed=9) == (
        "Mira",
        "Cole Stone",
    )


def test_pooled_picks_who_has_not_spoken_then_anyone_but_the_last() -> None:
    settings = group(strategy="pooled")
    for seed in range(20):
        spoken = activate(
            settings,
            talkativeness=QUIET,
            user_input=None,
            spoken_since_user=("Mira", "Bram"),
            last_speaker="Bram",
            seed=seed,
        )
        assert spoken == ("Cole Stone",)
    after_all = {
        activate(
            settings,
            talkativeness=QUIET,
            user_input=None,
            spoken_since_user=("Mira", "Bram", "Cole Stone"),
            last_speaker="Bram",
            seed=seed,
        )
        for seed in range(40)
    }
    assert after_all == {("Mira",), ("Cole Stone",)}
    # A user's message starts a new round: everyone may be picked again.
    fresh = {
        activate(
            settings,
            talkativeness=QUIET,
            user_input="hi",
            spoken_since_user=("Mira", "Bram"),
            seed=seed,
        )
        for seed in range(40)
    }
    assert fresh == {("Mira",), ("Bram",), ("Cole Stone",)}


def test_manual_answers_no_user_message_but_fills_a_turn_without_one() -> None:
    settings = group(strategy="manual", muted=("Bram",))
    assert activate(settings, talkativeness=QUIET, user_input="Mira?", seed=1) == ()
    picks = {
        activate(settings, talkativeness=QUIET, user_input=None, seed=seed) for seed in range(30)
    }
    assert picks == {("Mira",), ("Cole Stone",)}


def test_settings_refuse_bad_groups_with_one_line() -> None:
    with pytest.raises(ConfigurationError, match="at least one character"):
        GroupSettings(members=())
    with pytest.raises(ConfigurationError, match="Mira is in the group twice"):
        GroupSettings(members=("Mira", "Mira"))
    with pytest.raises(ConfigurationError, match="Zed is muted but not in the group"):
        GroupSettings(members=("Mira",), muted=("Zed",))
    with pytest.raises(ConfigurationError, match="unknown group strategy"):
        GroupSettings(members=("Mira",), strategy="loud")  # type: ignore[arg-type]


def test_max_group_members_is_enforced() -> None:
    names = tuple(f"C{i}" for i in range(MAX_GROUP_MEMBERS))
    assert GroupSettings(members=names).members == names
    with pytest.raises(ConfigurationError, match="MAX_GROUP_MEMBERS"):
        GroupSettings(members=(*names, "extra"))
