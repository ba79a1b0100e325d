"""The Agents SDK interfaces this adapter is built on, checked once at import, so a release
that moved or removed one fails loudly, naming the versions this adapter supports."""

from __future__ import annotations

from a2m.adapter_support import require_interface

__all__ = ["SUPPORTED"]

SUPPORTED = "openai-agents>=0.24,<0.25"
"""The openai-agents releases this adapter is tested against."""

require_interface(
    "a2m-openai-agents",
    "openai-agents",
    SUPPORTED,
    {
        "agents": ("FunctionTool", "SessionABC", "function_tool"),
        "agents.memory.session_settings": ("SessionSettings", "resolve_session_limit"),
    },
)
