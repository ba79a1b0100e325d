"""The Agent Framework interfaces this adapter is built on, checked once at import, so a
release that moved or removed one fails loudly, naming the versions this adapter supports."""

from __future__ import annotations

from a2m.adapter_support import require_interface

__all__ = ["SUPPORTED"]

SUPPORTED = "agent-framework-core>=1.23,<2"
"""The Agent Framework releases this adapter is tested against."""

require_interface(
    "a2m-agent-framework",
    "agent-framework-core",
    SUPPORTED,
    {
        "agent_framework": (
            "AgentSession",
            "ContextProvider",
            "HistoryProvider",
            "Message",
            "SessionContext",
            "SessionStore",
            "tool",
        ),
        "agent_framework._sessions": ("filter_new_messages",),
    },
)
