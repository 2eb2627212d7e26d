"""native mode: a prompt graph compiled to the same Prompt IR.

A :class:`PromptGraph` is an ordered list of typed nodes (static text, markers, chat history,
character fields, persona, world info, examples, memory, tool results, variable templates).
Unlike compat mode it has no SillyTavern quirks: every enabled node is placed where it stands,
a node with a ``depth`` goes into the chat, and world info outlets with no node of their own
are placed as explicit sections before the history instead of being dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from engine.errors import FormatError
from engine.formats.preset import Preset
from engine.prompt.compat import add_controls, add_memory, anchor_note, format_world_info
from engine.prompt.inchat import InChatPrompt, section
from engine.prompt.inputs import GAME_MASTER
from engine.prompt.ir import IRMessage, Role, Section
from engine.prompt.plan import Plan, Slot
from engine.prompt.prepare import Prepared

NodeKind = Literal[
    "static_text",
    "marker",
    "chat_history",
    "character",
    "persona",
    "worldbook",
    "example_dialogue",
    "memory",
    "tool_result",
    "variable_template",
]
NODE_KINDS: tuple[NodeKind, ...] = get_args(NodeKind)
"""Every node kind, in the order :data:`NodeKind` lists them."""
CHARACTER_FIELDS = (
    "description",
    "personality",
    "scenario",
    "system_prompt",
    "post_history_instructions",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphNode:
    """One node. ``field`` selects what a ``character`` node shows, or ``before``/``after``/
    ``outlet:<name>`` for a ``worldbook`` node; ``depth`` (when set) puts the node in the chat."""

    id: str
    kind: NodeKind
    role: Role = "system"
    text: str = ""
    field: str = ""
    enabled: bool = True
    depth: int | None = None
    order: int = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptGraph:
    """An ordered prompt graph."""

    nodes: tuple[GraphNode, ...]

    def to_json(self) -> list[dict[str, Any]]:
        """Plain JSON."""
        return [
            {
                k: getattr(n, k)
                for k in ("id", "kind", "role", "text", "field", "enabled", "depth", "order")
            }
            for n in self.nodes
        ]

    @classmethod
    def from_json(cls, data: object, *, source: str) -> PromptGraph:
        """Read :meth:`to_json` output; malformed nodes raise :class:`FormatError`."""
        if not isinstance(data, list):
            raise FormatError("expected a list of nodes", source=source)
        nodes: list[GraphNode] = []
        for index, item in enumerate(data):
            where = f"nodes[{index}]"
            if not isinstance(item, Mapping):
                raise FormatError("expected an object", source=source, field=where)
            kind = item.get("kind")
            if kind not in NODE_KINDS:
                raise FormatError(
                    f"unknown node kind {kind!r:.30}", source=source, field=f"{where}.kind"
                )
            role = item.get("role", "system")
            if role not in ("system", "user", "assistant"):
                raise FormatError("bad role", source=source, field=f"{where}.role")
            depth = item.get("depth")
            if depth is not None and (not isinstance(depth, int) or depth < 0):
                raise FormatError(
                    "depth must be a whole number >= 0", source=source, field=f"{where}.depth"
                )
            nodes.append(
                GraphNode(
                    id=str(item.get("id") or f"node{index}"),
                    kind=kind,
                    role=role,
                    text=str(item.get("text") or ""),
                    field=str(item.get("field") or ""),
                    enabled=bool(item.get("enabled", True)),
                    depth=depth,
                    order=int(item.get("order") or 100),
                )
            )
        return cls(nodes=tuple(nodes))


_MARKER_NODES: dict[str, tuple[NodeKind, str]] = {
    "worldInfoBefore": ("worldbook", "before"),
    "worldInfoAfter": ("worldbook", "after"),
    "charDescription": ("character", "description"),
    "charPersonality": ("character", "personality"),
    "scenario": ("character", "scenario"),
    "personaDescription": ("persona", ""),
    "dialogueExamples": ("example_dialogue", ""),
    "chatHistory": ("chat_history", ""),
}


def graph_from_preset(preset: Preset) -> PromptGraph:
    """The imported graph of a SillyTavern preset: its enabled slots in order, the card's
    system prompt after ``main``, its post-history instructions after ``jailbreak``, and a
    memory node before the chat history."""
    nodes: list[GraphNode] = []
    for slot in preset.effective_order():
        prompt = preset.prompt(slot.identifier)
        if prompt is None or not slot.enabled:
            continue
        ident = prompt.identifier
        depth = prompt.injection_depth if prompt.in_chat else None
        if ident in _MARKER_NODES:
            kind, field = _MARKER_NODES[ident]
            if kind == "chat_history":
                nodes.append(GraphNode(id="memory", kind="memory"))
            nodes.append(GraphNode(id=ident, kind=kind, field=field))
            continue
        nodes.append(
            GraphNode(
                id=ident,
                kind="static_text",
                role=prompt.role,
                text=prompt.content,
                depth=depth,
                order=prompt.injection_order,
            )
        )
        if ident == "main":
            nodes.append(
                GraphNode(id="card.system_prompt", kind="character", field="system_prompt")
            )
        if ident == "jailbreak":
            nodes.append(
                GraphNode(id="card.phi", kind="character", field="post_history_instructions")
            )
    return PromptGraph(nodes=tuple(nodes))


def _node_text(
    prep: Prepared, node: GraphNode, used_outlets: set[str]
) -> tuple[str, tuple[Section, ...]]:
    wi = prep.world_info
    kind = node.kind
    if kind in ("static_text", "variable_template"):
        text = prep.render(node.text, f"graph.{node.id}", origin=GAME_MASTER)
        return text, (section("graph", node.id, text),)
    if kind == "character":
        if node.field not in CHARACTER_FIELDS:
            prep.warnings.append(f"graph node {node.id}: unknown character field {node.field!r}")
            return "", ()
        value = prep.fields[node.field]
        if node.field in ("system_prompt", "post_history_instructions"):
            text = prep.render(value.text, f"card.{node.field}", origin=GAME_MASTER)
            return text, (section("card", node.field, text),)
        return value.text, value.sections
    if kind == "persona":
        return prep.fields["persona"].text, prep.fields["persona"].sections
    if kind == "worldbook":
        if node.field.startswith("outlet:"):
            name = node.field.removeprefix("outlet:")
            used_outlets.add(name)
            entries = wi.outlets.get(name, ())
        else:
            entries = wi.before if node.field != "after" else wi.after
        text = format_world_info("\n".join(e.content for e in entries), prep.inp.preset.wi_format)
        return text, tuple(section("world", e.key, e.content) for e in entries)
    if kind == "tool_result":
        text = "\n".join(prep.inp.tool_results)
        return text, (section("graph", node.id, text),)
    return "", ()


def plan_native(prep: Prepared, graph: PromptGraph | None) -> Plan:
    """Compile the graph (the preset's imported graph when ``None``) into a plan."""
    graph = graph or graph_from_preset(prep.inp.preset)
    plan = Plan()
    used_outlets: set[str] = set()
    for node in graph.nodes:
        if not node.enabled:
            continue
        if node.kind == "chat_history":
            plan.slots.append(Slot(identifier="chatHistory", kind="history"))
            continue
        if node.kind == "example_dialogue":
            plan.slots.append(Slot(identifier="dialogueExamples", kind="examples"))
            continue
        if node.kind == "memory":
            plan.slots.append(Slot(identifier="memory.anchor"))
            continue
        if node.kind == "marker":
            if node.field.startswith("outlet:"):
                node = GraphNode(id=node.id, kind="worldbook", field=node.field, role=node.role)
            else:
                plan.slots.append(Slot(identifier=node.id))
                continue
        text, sections = _node_text(prep, node, used_outlets)
        if node.depth is not None:
            if text:
                plan.in_chat.append(
                    InChatPrompt(
                        identifier=node.id,
                        depth=node.depth,
                        order=node.order,
                        role=node.role,
                        content=text,
                        sections=sections,
                    )
                )
            continue
        ident = "main" if node.id == "main" else node.id
        messages = (
            [IRMessage(role=node.role, content=text, sections=sections, identifier=ident)]
            if text
            else []
        )
        plan.slots.append(Slot(identifier=ident, messages=messages))
    _orphan_outlets(prep, plan, used_outlets)
    anchor_note(prep, plan)
    add_memory(prep, plan, anchor="memory.anchor")
    add_controls(prep, plan)
    return plan


def _orphan_outlets(prep: Prepared, plan: Plan, used: set[str]) -> None:
    slots: list[Slot] = []
    for name, entries in prep.world_info.outlets.items():
        if name in used:
            continue
        text = "\n".join(e.content for e in entries)
        sections = tuple(section("world", e.key, e.content) for e in entries)
        message = IRMessage(
            role="system", content=text, sections=sections, identifier=f"outlet.{name}"
        )
        slots.append(Slot(identifier=message.identifier, messages=[message]))
    index = plan.index_of("chatHistory")
    where = len(plan.slots) if index is None else index
    plan.slots[where:where] = slots
