"""The world info budget counts what SillyTavern counts, and character filters name the card's
file (SillyTavern's avatar), falling back to the character's name."""

from __future__ import annotations

from engine.formats.worldbook import CharacterFilter
from engine.prompt.assemble import assemble
from engine.prompt.inputs import AssemblyInput, CharacterFields
from engine.prompt.wi_sources import BookSource, ListWindow, WorldInfoSettings
from engine.prompt.worldinfo import WorldInfoRequest, filter_name, scan_world_info
from tests.test_prompt.helpers import chat, default_preset
from tests.test_worldinfo.helpers import book, entry, scan, uids


def quarter_tokens(text: str) -> int:
    """Like a real tokenizer, not additive: counting pieces apart gives more than the whole."""
    return (len(text) + 3) // 4


def test_budget_counts_the_joined_text_not_a_sum_per_entry() -> None:
    b = book(*(entry(uid, constant=True, content="abcd", order=400 - uid) for uid in (1, 2, 3)))
    # Budget = round(25% of 20) = 5 tokens. Entry by entry, "abcd\n" costs 2 each: 2, 4, 6 would
    # drop the third. SillyTavern counts the joined text: "abcd\n" * 3 is 15 chars = 4 tokens.
    assert sum(quarter_tokens("abcd\n") for _ in range(3)) >= 5
    assert quarter_tokens("abcd\n" * 3) < 5
    request = WorldInfoRequest(
        books=[BookSource(book=b)], window=ListWindow(["x"]), max_context=20
    )
    result = scan_world_info(request, count_tokens=quarter_tokens)
    assert result.budget == 5
    assert uids(result) == {1, 2, 3} and not result.overflowed
    assert result.used_tokens == 4
    # One more entry makes the joined text 20 chars = 5 tokens: at the budget, so dropped.
    more = book(*b.entries, entry(4, constant=True, content="abcd", order=1))
    full = scan_world_info(
        WorldInfoRequest(books=[BookSource(book=more)], window=ListWindow(["x"]), max_context=20),
        count_tokens=quarter_tokens,
    )
    assert uids(full) == {1, 2, 3} and full.overflowed


def test_later_passes_count_only_the_recursion_text_before_them() -> None:
    # Pass 1: a big constant that prevents recursion, and "key" which recurses into entry 3.
    # SillyTavern's base for pass 2 is the recursion text ("key"), not everything activated.
    b = book(
        entry(1, constant=True, prevent_recursion=True, content="x" * 40, order=300),
        entry(2, constant=True, content="key", order=200),
        entry(3, "key", content="abcdefgh", order=100),
    )
    request = WorldInfoRequest(
        books=[BookSource(book=b)],
        window=ListWindow(["zzz"]),
        settings=WorldInfoSettings(recursive=True),
        max_context=52,  # 25% -> 13 tokens
    )
    result = scan_world_info(request, count_tokens=quarter_tokens)
    assert result.budget == 13
    # Pass 1 counts 45 chars = 12 < 13; pass 2 counts "key" (1) + "abcdefgh\n" (3) = 4.
    # A running sum over every activated entry (11 + 1 + 3 = 15) would have dropped entry 3.
    assert uids(result) == {1, 2, 3} and not result.overflowed


def test_filter_name_is_the_file_name_without_its_extension() -> None:
    assert filter_name("Seraphina.png", "Sera") == "Seraphina"
    assert filter_name("a.b.png", "x") == "a.b"
    assert filter_name("noext", "x") == "noext"
    assert filter_name("", "Sera") == "Sera"


def test_character_filter_compares_the_avatar_when_known() -> None:
    by_file = entry(1, constant=True, character_filter=CharacterFilter(names=("sera_v2",)))
    by_name = entry(2, constant=True, character_filter=CharacterFilter(names=("Seraphina",)))
    not_file = entry(
        3, constant=True, character_filter=CharacterFilter(names=("sera_v2",), is_exclude=True)
    )
    b = book(by_file, by_name, not_file)
    with_avatar = scan(b, ["x"], character_name="Seraphina", character_avatar="sera_v2.png")
    assert uids(with_avatar) == {1}
    # No file name known (a native character): the name stands in for it.
    assert uids(scan(b, ["x"], character_name="Seraphina")) == {2, 3}


def test_assembly_passes_the_card_file_name_to_the_filters() -> None:
    b = book(
        entry(
            1,
            constant=True,
            content="ONLY-FOR-FILE",
            character_filter=CharacterFilter(names=("sera_v2",)),
        )
    )

    def prompt(character: CharacterFields) -> str:
        result = assemble(
            AssemblyInput(
                preset=default_preset(),
                character=character,
                history=chat("hello"),
                books=[BookSource(book=b)],
            )
        )
        return "\n".join(m.content for m in result.ir.messages)

    assert "ONLY-FOR-FILE" in prompt(CharacterFields(name="Sera", avatar="sera_v2.png"))
    assert "ONLY-FOR-FILE" not in prompt(CharacterFields(name="Sera"))
