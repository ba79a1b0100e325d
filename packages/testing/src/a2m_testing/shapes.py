"""The kinds of conformant A2M server an adapter must work on, not only the bundled one's
defaults, each as the ``ServerConfig`` fields that make the bundled server play it: a
plain 0.1 server, one declaring no ``max_recall_limit``, one returning 3 records a call,
one taking 2 records a ``memory/remember``, one lacking an optional capability.

Each is a mapping of keyword arguments: ``A2MServer(ServerConfig(**SMALL_RECALL))``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from a2m import A2MClient, AsyncA2MClient
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_server.server import A2MServer
from a2m_types import CAPABILITIES

from .servers import MethodLog

__all__ = [
    "EVERY_CAPABILITY",
    "PLAIN",
    "SERVER_SHAPES",
    "SMALL_BATCHES",
    "SMALL_RECALL",
    "SMALL_RECALL_NO_CURSOR",
    "UNDECLARED_LIMIT",
    "Shape",
    "lacking",
]

Shape = Mapping[str, Any]

EVERY_CAPABILITY = frozenset(CAPABILITIES)
"""Every capability of the spec, which the bundled server declares by default."""

PLAIN: Shape = {
    "timeline_cursor": False,
    "where_operators": False,
    "capabilities": EVERY_CAPABILITY - {"events"},
}
"""A plain 0.1 server: no timeline cursor, §5.2 equality only, no event log."""

UNDECLARED_LIMIT: Shape = {"timeline_cursor": False, "declare_recall_limit": False}
"""No cursor and no ``max_recall_limit``: a timeline without ``limit`` is whole (§4.4)."""

SMALL_RECALL: Shape = {"limits": LimitsConfig(max_recall_limit=3)}
"""At most 3 records a read (more is refused with QUOTA_EXCEEDED), paging by cursor."""

SMALL_RECALL_NO_CURSOR: Shape = {
    "timeline_cursor": False,
    "limits": LimitsConfig(max_recall_limit=3),
}
"""At most 3 records a read and no cursor: a longer listing cannot be read whole."""

SMALL_BATCHES: Shape = {"limits": LimitsConfig(max_records_per_call=2)}
"""At most 2 records a ``memory/remember``."""

SERVER_SHAPES: Mapping[str, Shape] = {
    "plain 0.1": PLAIN,
    "plain 0.1, no max_recall_limit": UNDECLARED_LIMIT,
    "cursor, max_recall_limit 3": SMALL_RECALL,
    "max_records_per_call 2": SMALL_BATCHES,
}
"""The shapes on which an adapter must answer as on the default server, by name (test
ids). :data:`SMALL_RECALL_NO_CURSOR` is not one: there a long listing says it is short."""


def lacking(*capabilities: str) -> dict[str, Shape]:
    """A shape per capability, each declaring every other one, by name (``"no keys"``)."""
    return {f"no {name}": {"capabilities": EVERY_CAPABILITY - {name}} for name in capabilities}


@contextmanager
def client_on(**config: Any) -> Iterator[tuple[A2MClient, MethodLog]]:
    """A client of a fresh in-process server configured as ``config`` (a shape, or any
    ``ServerConfig`` fields), and the log of the A2M methods called on it."""
    with A2MServer(ServerConfig(**config)) as server:
        log = MethodLog(server)
        with A2MClient.in_process(log) as client:
            yield client, log


@asynccontextmanager
async def async_client_on(**config: Any) -> AsyncIterator[tuple[AsyncA2MClient, MethodLog]]:
    """:func:`client_on` with an :class:`~a2m.AsyncA2MClient`."""
    with A2MServer(ServerConfig(**config)) as server:
        log = MethodLog(server)
        async with AsyncA2MClient.in_process(log) as client:
            yield client, log
