"""A2M memory for Microsoft Agent Framework: :class:`A2MContextProvider` brings what every
framework remembered into a run, :class:`A2MHistoryProvider` keeps the conversation, and
:class:`A2MSessionStore` keeps session snapshots — all in the one shared A2M store."""

from __future__ import annotations

from . import _compat  # noqa: F401  (fails loudly on an unsupported agent-framework)
from ._compat import SUPPORTED
from ._context import DEFAULT_MEMORY_NAMESPACE, DEFAULT_SCORE_THRESHOLD, A2MContextProvider
from ._history import DEFAULT_NAMESPACE, A2MHistoryProvider, IncompleteHistoryWarning
from ._messages import SOURCE_FRAMEWORK, readable_text
from ._session_store import DEFAULT_SESSIONS_NAMESPACE, A2MSessionStore

__all__ = [
    "DEFAULT_MEMORY_NAMESPACE",
    "DEFAULT_NAMESPACE",
    "DEFAULT_SCORE_THRESHOLD",
    "DEFAULT_SESSIONS_NAMESPACE",
    "SOURCE_FRAMEWORK",
    "SUPPORTED",
    "A2MContextProvider",
    "A2MHistoryProvider",
    "A2MSessionStore",
    "IncompleteHistoryWarning",
    "readable_text",
]
