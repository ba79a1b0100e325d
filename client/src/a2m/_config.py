"""Client configuration from arguments, else the environment: ``A2M_URL``, ``A2M_TOKEN``
and ``A2M_TIMEOUT`` (seconds; ``none`` for no timeout)."""

from __future__ import annotations

import os

from ._types import NotGiven

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "resolve_timeout",
    "resolve_token",
    "resolve_url",
]

DEFAULT_TIMEOUT = 30.0
"""Seconds every call may take unless told otherwise."""

DEFAULT_MAX_RETRIES = 2
"""Retries after the first attempt, for failures that retrying can fix."""


def resolve_url(url: str | None) -> str:
    """``url``, else ``A2M_URL``; a clear error when neither says where the server is."""
    resolved = url or os.environ.get("A2M_URL")
    if not resolved:
        raise ValueError(
            "no A2M server given: pass a URL (A2MClient('http://127.0.0.1:8765/')), set "
            "A2M_URL, or use A2MClient.stdio(…) / A2MClient.in_process(…)"
        )
    return resolved


def resolve_token(token: str | None) -> str | None:
    """``token``, else ``A2M_TOKEN``, else none."""
    return token if token is not None else (os.environ.get("A2M_TOKEN") or None)


def resolve_timeout(timeout: float | NotGiven | None) -> float | None:
    """``timeout``, else ``A2M_TIMEOUT``, else 30 seconds; ``None`` means wait for ever."""
    if not isinstance(timeout, NotGiven):
        return _check(timeout, "timeout")
    raw = os.environ.get("A2M_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    if raw.lower() in ("none", "inf", "infinite"):
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(
            f"A2M_TIMEOUT must be a number of seconds or 'none', not {raw!r}"
        ) from None
    return _check(value, "A2M_TIMEOUT")


def _check(value: float | None, name: str) -> float | None:
    if value is not None and not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds or None, not {value!r}")
    return value
