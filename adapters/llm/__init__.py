"""adapters.llm: chat models for the engine (owns the ``openai`` library).

:func:`build_chat_model` picks the provider; :class:`OfflineChatModel` needs no network;
:class:`ChatModelPool` shares models between turns. ``OpenAIChatModel`` lives in
:mod:`adapters.llm.openai_model` (imported on demand so the offline provider starts without the
``openai`` client).
"""

from adapters.llm.factory import PROVIDERS, build_chat_model
from adapters.llm.offline import OFFLINE_ANNOUNCEMENT, OfflineChatModel
from adapters.llm.pool import ChatModelPool

__all__ = [
    "OFFLINE_ANNOUNCEMENT",
    "PROVIDERS",
    "ChatModelPool",
    "OfflineChatModel",
    "build_chat_model",
]
