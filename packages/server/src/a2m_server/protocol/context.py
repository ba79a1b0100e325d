"""Who is calling and over what: the per-connection facts every method consults."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["CallContext"]


@dataclass(frozen=True)
class CallContext:
    """One connection's identity and what it may use."""

    connection_id: int
    transport: str
    network: bool
    """True when the peer is remote (HTTP): owner then comes only from ``principal``."""
    principal: str | None
    """The authenticated caller, when the transport authenticates."""
    capabilities: frozenset[str]
    """What this connection declares."""
    push: bool
    """Whether notifications can reach this peer."""
    notify: Callable[[dict[str, Any]], None] | None = None
