"""The bindings that carry A2M over a wire: stdio (§8.2) and HTTP (§8.3).

In-process use needs no binding: ``A2MServer().connect()`` is the in-process peer (§8.1)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a2m_server._web import utf8

if TYPE_CHECKING:
    from .http import create_app
    from .stdio import run_stdio

__all__ = ["create_app", "run_stdio", "utf8"]


def __getattr__(name: str) -> Any:
    # Imported on first use so the stdio server starts without loading the HTTP stack.
    if name == "create_app":
        from .http import create_app

        return create_app
    if name == "run_stdio":
        from .stdio import run_stdio

        return run_stdio
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
