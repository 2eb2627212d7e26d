"""The readable layout of a prompt dry run, shared by ``tavernbot prompt dry-run`` and the
console's ``/dryrun`` and ``/tokens``: each message with its sources, then one line with the
message count, the tokens against the budget and the world entries, then the warnings.

It reads the dry-run JSON object (``messages``, ``world_info``, ``budget``, ``warnings``) that
both produce, so the two show a prompt the same way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["dry_run_text", "tokens_text"]


def _sources(message: Mapping[str, Any]) -> str:
    return ", ".join(
        f"{s['kind']}:{s['ref']}" if s.get("ref") else str(s["kind"])
        for s in message.get("sources", ())
    )


def dry_run_text(data: Mapping[str, Any]) -> str:
    """The dry run ``data`` as text: ``--- role [sources]`` then the content, per message;
    ``=== N messages, T of A tokens; W world entries``; a ``warning:`` line per warning."""
    parts = [
        f"--- {message['role']} [{_sources(message)}]\n{message['content']}\n"
        for message in data["messages"]
    ]
    budget = data["budget"]
    parts.append(
        f"=== {len(data['messages'])} messages, {budget['total_tokens']} of "
        f"{budget['available']} tokens; {len(data['world_info'])} world entries\n"
    )
    parts.extend(f"warning: {warning}\n" for warning in data.get("warnings", ()))
    return "".join(parts)


def tokens_text(budget: Mapping[str, Any]) -> str:
    """The budget figures of a dry run in two lines: the prompt's tokens against what the
    context leaves for it, and where they go."""
    return (
        f"prompt {budget['total_tokens']} of {budget['available']} tokens "
        f"(context {budget['max_context']}, {budget['response_tokens']} kept for the reply)\n"
        f"history {budget['history_tokens']} tokens in {budget['history_messages']} messages"
        f"{' (older ones left out)' if budget.get('history_truncated') else ''}, "
        f"world info {budget['world_info_tokens']} of {budget['world_info_budget']}"
    )
