"""Budget trimming, lazy history, names behaviour, prefill, and the three modes."""

from __future__ import annotations

from collections.abc import Iterator

from engine.formats.preset import NAMES_COMPLETION, NAMES_CONTENT
from engine.prompt.assemble import assemble
from engine.prompt.budget import REPLY_PRIMING_TOKENS, TOKENS_PER_MESSAGE, Budget, EstimateCounter
from engine.prompt.inputs import (
    AssemblyInput,
    CharacterFields,
    GroupPrompt,
    HistoryLine,
    InstanceInput,
    MemoryItem,
)
from engine.prompt.native import GraphNode, PromptGraph, graph_from_preset
from engine.prompt.wi_sources import BookSource
from tests.test_prompt.helpers import chat, contents, default_preset, ids, preset, run
from tests.test_worldinfo.helpers import book, entry

HISTORY_ONLY = preset([{"identifier": "chatHistory", "marker": True}], ["chatHistory"])


class CountingHistory:
    """A long chat that records how many messages were read."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.read = 0

    @property
    def length(self) -> int:
        return self.size

    @property
    def user_messages(self) -> int:
        return self.size // 2

    def newest_first(self) -> Iterator[HistoryLine]:
        for i in range(self.size - 1, -1, -1):
            self.read += 1
            yield HistoryLine(
                text=f"message number {i} " * 3, is_user=i % 2 == 0, name="X", floor=i
            )


def test_budget_is_context_minus_response_minus_priming() -> None:
    result = run(HISTORY_ONLY, max_context=1000, max_tokens=200)
    assert result.ir.budget.available == 1000 - 200 - REPLY_PRIMING_TOKENS


def test_message_cost_includes_role_and_overhead() -> None:
    budget = Budget(EstimateCounter(), 100)
    assert budget.cost("user", "abcd") == 1 + 1 + TOKENS_PER_MESSAGE
    assert budget.cost("user", "abcd", "Ann") == 1 + 1 + TOKENS_PER_MESSAGE + 1 + 1
    assert budget.cost("user", "") == 0


def test_history_is_trimmed_from_the_oldest_and_read_lazily() -> None:
    history = CountingHistory(10_000)
    result = assemble(
        AssemblyInput(
            preset=HISTORY_ONLY,
            character=CharacterFields(name="Sera"),
            history=history,
            max_context=400,
            max_tokens=100,
        )
    )
    kept = [m for m in result.ir.messages if m.identifier.startswith("chatHistory")]
    assert result.ir.budget.history_truncated and 0 < len(kept) < 100
    assert kept[-1].content.startswith("message number 9999")
    assert history.read <= len(kept) + 2
    assert result.ir.budget.total_tokens <= result.ir.budget.available


def test_examples_take_what_is_left_in_whole_blocks() -> None:
    p = preset(
        [
            {"identifier": "dialogueExamples", "marker": True},
            {"identifier": "chatHistory", "marker": True},
        ],
        ["dialogueExamples", "chatHistory"],
    )
    blocks = "".join(f"<START>\nAnn: q{i} {'x' * 200}\nSera: a{i}\n" for i in range(10))
    card = CharacterFields(name="Sera", mes_example=blocks)
    result = run(p, chat("hi"), character=card, max_context=600, max_tokens=100)
    report = result.ir.budget
    assert 0 < report.example_blocks < report.example_blocks_total == 10
    assert contents(result).count("[Example Chat]") == report.example_blocks
    assert contents(result)[-1] == "hi"  # history first, examples get the rest
    pinned = run(p, chat("hi"), character=card, max_context=600, max_tokens=100, pin_examples=True)
    assert pinned.ir.budget.example_blocks >= report.example_blocks


def test_names_behaviour() -> None:
    content = preset(
        [{"identifier": "chatHistory", "marker": True}],
        ["chatHistory"],
        names_behavior=NAMES_CONTENT,
    )
    assert contents(run(content, chat("hi", "yo")))[1:] == ["Ann: hi", "Sera: yo"]
    completion = preset(
        [{"identifier": "chatHistory", "marker": True}],
        ["chatHistory"],
        names_behavior=NAMES_COMPLETION,
    )
    names = [m.name for m in run(completion, chat("hi", "yo"), user_name="Ann B.").ir.messages]
    assert names == [None, "Ann", "Sera"]
    assert contents(run(HISTORY_ONLY, chat("hi", "yo")))[1:] == ["hi", "yo"]


def test_prefill_and_send_if_empty() -> None:
    p = preset(
        [{"identifier": "chatHistory", "marker": True}],
        ["chatHistory"],
        assistant_prefill="Sure: ",
        send_if_empty="[continue]",
    )
    result = run(p, chat("hi", "yo"), use_prefill=True)
    assert contents(result)[-2:] == ["[continue]", "Sure:"]
    assert result.ir.prefill == "Sure:" and result.ir.messages[-1].role == "assistant"
    assert run(p, chat("hi", "yo")).ir.messages[-1].content == "[continue]"


def test_compat_plus_adds_memory_and_instances_before_history() -> None:
    memory = [MemoryItem(id="m1", text="Ann likes tea"), MemoryItem(id="m2", text="It rains")]
    instances = [InstanceInput(slot="director", text="Raise the stakes")]
    strict = run(default_preset(), chat("hi"), memory=memory, instances=instances)
    assert "memory" not in ids(strict)
    plus = run(
        default_preset(), chat("hi"), memory=memory, instances=instances, mode="compat_plus"
    )
    order = ids(plus)
    assert (
        order.index("memory") + 1 == order.index("instance.director") < order.index("newMainChat")
    )
    block = plus.ir.messages[order.index("memory")]
    assert block.content == "Ann likes tea\nIt rains"
    assert [str(s) for s in block.sources] == ["memory:m1", "memory:m2"]
    after = BookSource(book=book(entry(1, constant=True, position=1, content="AFTER")))
    after_wi = run(
        default_preset(),
        chat("hi"),
        memory=memory,
        mode="compat_plus",
        memory_position="after_worldinfo",
        books=[after],
        character=CharacterFields(name="Sera", mes_example="<START>\nAnn: a\nSera: b"),
    )
    order = ids(after_wi)
    assert order.index("worldInfoAfter") + 1 == order.index("memory") < order.index("newChat")


def test_native_mode_compiles_the_preset_graph() -> None:
    p = default_preset()
    graph = graph_from_preset(p)
    kinds = [n.kind for n in graph.nodes]
    assert kinds.index("memory") + 1 == kinds.index("chat_history")
    card = CharacterFields(name="Sera", description="DESC", system_prompt="CARD-SYS")
    native = run(
        p, chat("hi"), character=card, mode="native", memory=[MemoryItem(id="m", text="MEM")]
    )
    text = contents(native)
    assert text[:3] == [p.prompt("main").content, "CARD-SYS", "DESC"]  # type: ignore[union-attr]
    assert text.index("MEM") < text.index("hi")
    assert PromptGraph.from_json(graph.to_json(), source="g") == graph


def test_native_graph_nodes_and_orphan_outlets() -> None:
    b = book(
        entry(1, constant=True, position=7, outlet_name="inv", content="SWORD"),
        entry(2, constant=True, position=7, outlet_name="map", content="MAP"),
    )
    graph = PromptGraph(
        nodes=(
            GraphNode(id="intro", kind="static_text", text="INTRO"),
            GraphNode(id="inv", kind="marker", field="outlet:inv"),
            GraphNode(id="tools", kind="tool_result"),
            GraphNode(id="hist", kind="chat_history"),
            GraphNode(id="late", kind="static_text", text="LATE", depth=0, role="user"),
        )
    )
    result = assemble(
        AssemblyInput(
            preset=HISTORY_ONLY,
            character=CharacterFields(name="Sera"),
            history=chat("hi"),
            books=[BookSource(book=b)],
            mode="native",
            tool_results=("dice: 4",),
        ),
        graph=graph,
    )
    assert [m.content for m in result.ir.messages] == [
        "INTRO",
        "SWORD",
        "dice: 4",
        "MAP",
        "[Start a new Chat]",
        "hi",
        "LATE",
    ]


def test_prompt_regex_runs_on_history_with_depth_and_placement() -> None:
    calls: list[tuple[str, int, int | None]] = []

    def regex(text: str, *, placement: int, depth: int | None) -> str:
        calls.append((text, placement, depth))
        return text.replace("secret", "***")

    result = assemble(
        AssemblyInput(
            preset=HISTORY_ONLY,
            character=CharacterFields(name="Sera"),
            history=chat("my secret", "yo"),
            user_input="again secret",
        ),
        regex=regex,
    )
    assert contents(result)[1:] == ["my ***", "yo", "again ***"]
    assert (
        ("again secret", 1, 0) in calls and ("yo", 2, 1) in calls and ("my secret", 1, 2) in calls
    )


def test_continue_with_nudge_or_prefill() -> None:
    p = preset(
        [
            {"identifier": "chatHistory", "marker": True},
            {"identifier": "jailbreak", "content": "PHI"},
        ],
        ["chatHistory", "jailbreak"],
        continue_nudge_prompt="[Continue: {{lastChatMessage}}]",
    )

    class Last:
        def render(self, text: str, *, source: str, origin: str, env=None) -> str:  # type: ignore[no-untyped-def]
            return text.replace("{{lastChatMessage}}", str((env or {}).get("lastChatMessage", "")))

    def go(q):  # type: ignore[no-untyped-def]
        return [
            m.content
            for m in assemble(
                AssemblyInput(
                    preset=q,
                    character=CharacterFields(name="Sera"),
                    history=chat("hi", "Once upon"),
                    generation_type="continue",
                ),
                macros=Last(),
            ).ir.messages
        ]

    assert go(p) == ["[Start a new Chat]", "hi", "Once upon", "[Continue: Once upon]", "PHI"]
    prefill = preset(
        [
            {"identifier": "chatHistory", "marker": True},
            {"identifier": "jailbreak", "content": "PHI"},
        ],
        ["chatHistory", "jailbreak"],
        continue_prefill=True,
    )
    assert go(prefill) == ["[Start a new Chat]", "hi", "PHI", "Once upon"]


def test_group_nudge_follows_the_history() -> None:
    group = GroupPrompt(members=(CharacterFields(name="Sera"), CharacterFields(name="Bram")))
    result = run(HISTORY_ONLY, chat("hi"), group=group)
    assert contents(result)[-1] == "[Write the next reply only as {{char}}.]"
    assert contents(result)[0].startswith("[Start a new group chat.")
