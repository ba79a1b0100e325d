"""A2M memory for the OpenAI Agents SDK: :class:`A2MSession` keeps a run's conversation in
the A2M store every framework shares, and :func:`memory_tools` gives an agent long-term
memory beside it."""

from __future__ import annotations

from . import _compat  # noqa: F401  (fails loudly on an unsupported openai-agents)
from ._compat import SUPPORTED
from ._items import SOURCE_FRAMEWORK, readable_text
from ._observation_tool import remember_tool
from ._session import DEFAULT_NAMESPACE, A2MSession, IncompleteHistoryWarning
from ._tools import DEFAULT_MEMORY_NAMESPACE, memory_tools, recall_text

__all__ = [
    "DEFAULT_MEMORY_NAMESPACE",
    "DEFAULT_NAMESPACE",
    "SOURCE_FRAMEWORK",
    "SUPPORTED",
    "A2MSession",
    "IncompleteHistoryWarning",
    "memory_tools",
    "readable_text",
    "recall_text",
    "remember_tool",
]
