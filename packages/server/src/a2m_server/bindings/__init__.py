"""The bindings that carry A2M over a wire: stdio (§8.2) and HTTP (§8.3).

In-process use needs no binding: ``A2MServer().connect()`` is the in-process peer (§8.1)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .http import create_app
    from .stdio import run_stdio

__all__ = ["create_app", "run_stdio", "utf8"]


def utf8(text: str) -> bytes:
    """``text`` (one JSON message) as UTF-8 bytes, even when it holds a lone surrogate.

    JSON may escape a surrogate half (``"\\ud800"``) that UTF-8 cannot encode; such a
    message is re-serialised with ASCII escapes, which is the same JSON value."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        value = json.loads(text)
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def __getattr__(name: str) -> Any:
    # Imported on first use so the stdio server starts without loading the HTTP stack.
    if name == "create_app":
        from .http import create_app

        return create_app
    if name == "run_stdio":
        from .stdio import run_stdio

        return run_stdio
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
