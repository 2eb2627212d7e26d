"""Summarisers for compaction: the memory slot's model, or a deterministic offline one."""

from __future__ import annotations

from engine.memory.compaction import (
    COMPACTION_TARGET_WORDS,
    CompactionRequest,
    Summariser,
    build_compaction_request,
)
from engine.ports import ChatModel

OFFLINE_MODEL_NAME = "offline"
"""The ``ChatModel.name`` of the offline provider, which gets the offline summariser."""


async def offline_summariser(request: CompactionRequest) -> str:
    """Deterministic compaction without a model: the first sentence of each source, once each,
    cut to the tier's word budget. Used with the offline provider and in tests."""
    sentences: list[str] = []
    for text in request.texts:
        line = " ".join(text.split())
        first = line.split(". ", 1)[0].rstrip(".")
        if first and first not in sentences:
            sentences.append(first)
    words = f"Floors {request.coverage_start}-{request.coverage_end}: {'. '.join(sentences)}."
    budget = COMPACTION_TARGET_WORDS * max(1, request.tier - 1)
    return " ".join(words.split()[:budget])


def model_summariser(model: ChatModel, model_name: str) -> Summariser:
    """A :data:`Summariser` that asks the memory slot's model."""

    async def summarise(request: CompactionRequest) -> str:
        result = await model.complete(build_compaction_request(model_name, request))
        return result.text

    return summarise


def summariser_for(model: ChatModel | None, model_name: str) -> Summariser:
    """The model's summariser, or :func:`offline_summariser` for no model or the offline one."""
    if model is None or model.name == OFFLINE_MODEL_NAME:
        return offline_summariser
    return model_summariser(model, model_name)
