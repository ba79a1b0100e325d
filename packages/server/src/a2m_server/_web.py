"""What the HTTP and REST bindings share, kept apart from both so neither imports the
other's package: the authenticated principal the HTTP gate leaves on a connection, and
JSON text as the bytes a response carries."""

from __future__ import annotations

import json

from starlette.requests import HTTPConnection

__all__ = ["PRINCIPAL_SCOPE_KEY", "principal_of", "utf8"]

PRINCIPAL_SCOPE_KEY = "a2m.principal"
"""Where the HTTP gate puts the authenticated principal in the ASGI scope."""


def principal_of(request: HTTPConnection) -> str | None:
    """The authenticated principal of a request or WebSocket that passed the gate (``None``
    without auth)."""
    principal = request.scope.get(PRINCIPAL_SCOPE_KEY)
    return principal if isinstance(principal, str) else None


def utf8(text: str) -> bytes:
    """``text`` (one JSON message) as UTF-8 bytes, even when it holds a lone surrogate.

    JSON may escape a surrogate half (``"\\ud800"``) that UTF-8 cannot encode; such a
    message is re-serialised with ASCII escapes, which is the same JSON value."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        value = json.loads(text)
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")
