"""``A2EMemoryPlugin`` and ``AsyncA2EMemoryPlugin``: the A2E ``MemoryPlugin`` host, answering
the eight memory messages as dicts or JSON text over an A2M client of any binding."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from typing_extensions import Self

from a2m import A2MClient, A2MError, AsyncA2MClient
from a2m.adapter_support import drive, drive_async

from ._host import HostCore, HostLimits, request_id
from ._messages import CAPABILITY, ErrorCode, error_message

__all__ = ["A2EMemoryPlugin", "AsyncA2EMemoryPlugin"]


def _parse(text: str | bytes, limits: HostLimits) -> tuple[Any, dict[str, Any] | None]:
    """The message ``text`` holds, or the error answering it."""
    if len(text) > limits.max_message_bytes:
        refusal = f"a message may be at most {limits.max_message_bytes} bytes"
        return None, error_message("", ErrorCode.INVALID_MESSAGE, refusal)
    try:
        return json.loads(text), None
    except (ValueError, RecursionError):
        return None, error_message("", ErrorCode.INVALID_MESSAGE, "a message must be JSON text")


def _dump(response: dict[str, Any]) -> str:
    try:
        return json.dumps(response, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (ValueError, RecursionError):
        # Only a record another writer nested beyond JSON's reach can get here.
        refusal = "the response cannot be written as JSON"
        failed = error_message(response.get("req_id", ""), ErrorCode.BACKEND_ERROR, refusal)
        return json.dumps(failed, separators=(",", ":"))


class _PluginBase:
    capability = CAPABILITY
    """``A2ECapability.MEMORY``."""

    def __init__(
        self,
        *,
        semantic_writers: Iterable[str] = (),
        principal: str | None = None,
        limits: HostLimits | None = None,
    ) -> None:
        self._core = HostCore(
            limits=limits or HostLimits(),
            semantic_writers=frozenset(semantic_writers),
            principal=principal,
        )

    @property
    def limits(self) -> HostLimits:
        """What this host refuses."""
        return self._core.limits

    def open_memories(self) -> list[str]:
        """The ``memory_id`` of every memory session not yet ended."""
        return [mid for mid, session in self._core.sessions.items() if session.open]


class A2EMemoryPlugin(_PluginBase):
    """An A2E ``MemoryPlugin`` whose backend is A2M, over a synchronous client.

    ``semantic_writers`` are the agents allowed to write (and forget in) the shared
    ``semantic`` tier (``"*"``: all); ``principal`` is the authenticated agent when the
    agent reaches this host over a network, and then the only ``scope.agent`` accepted.
    Ending the plugin (:meth:`close`, the end of a ``with`` block) ends every memory
    session it opened, deleting their working entries. The client is the caller's: never
    closed here. A2M calls per message: see :mod:`a2m_a2e` (at most a handful each)."""

    def __init__(
        self,
        client: A2MClient,
        *,
        semantic_writers: Iterable[str] = (),
        principal: str | None = None,
        limits: HostLimits | None = None,
    ) -> None:
        super().__init__(semantic_writers=semantic_writers, principal=principal, limits=limits)
        self.client = client

    def handle(self, message: Mapping[str, Any] | Any) -> dict[str, Any]:
        """The response to one request message (a dict): its ``…/resp``, or a
        ``memory/error``; never raises for what the message holds."""
        try:
            return drive(self._core.handle(message), self.client)
        except RecursionError:
            return error_message(request_id(message), ErrorCode.INVALID_MESSAGE, "too deep")

    def handle_json(self, text: str | bytes) -> str:
        """The response to one request as JSON text, as JSON text."""
        message, refused = _parse(text, self.limits)
        return _dump(refused if refused is not None else self.handle(message))

    def end_memory(self, memory_id: str) -> int:
        """End one memory session (its working entries are deleted, its A2M session
        closed); returns how many working entries went. Ending twice is a no-op."""
        return drive(self._core.end(memory_id), self.client)

    def close(self) -> None:
        """End every open memory session, as a disconnect does; the client stays open.
        A store that cannot be reached leaves the rest to TTL and session close."""
        for memory_id in self.open_memories():
            try:
                self.end_memory(memory_id)
            except A2MError:
                continue

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncA2EMemoryPlugin(_PluginBase):
    """:class:`A2EMemoryPlugin` over an :class:`~a2m.AsyncA2MClient`: the same messages and
    rules, every call awaited."""

    def __init__(
        self,
        client: AsyncA2MClient,
        *,
        semantic_writers: Iterable[str] = (),
        principal: str | None = None,
        limits: HostLimits | None = None,
    ) -> None:
        super().__init__(semantic_writers=semantic_writers, principal=principal, limits=limits)
        self.client = client

    async def handle(self, message: Mapping[str, Any] | Any) -> dict[str, Any]:
        """The response to one request message (a dict)."""
        try:
            return await drive_async(self._core.handle(message), self.client)
        except RecursionError:
            return error_message(request_id(message), ErrorCode.INVALID_MESSAGE, "too deep")

    async def handle_json(self, text: str | bytes) -> str:
        """The response to one request as JSON text, as JSON text."""
        message, refused = _parse(text, self.limits)
        return _dump(refused if refused is not None else await self.handle(message))

    async def end_memory(self, memory_id: str) -> int:
        """End one memory session; see :meth:`A2EMemoryPlugin.end_memory`."""
        return await drive_async(self._core.end(memory_id), self.client)

    async def aclose(self) -> None:
        """End every open memory session; the client stays open."""
        for memory_id in self.open_memories():
            try:
                await self.end_memory(memory_id)
            except A2MError:
                continue

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
