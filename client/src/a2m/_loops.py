"""State an async client keeps per event loop. Frameworks run async code through
``asyncio.run`` on worker threads, so one :class:`~a2m.AsyncA2MClient` may be awaited from
several loops, at once or one after another; a lock or a connection pool belongs to the
loop it was made on, so each loop gets its own, and a pool is closed when its loop ends
(``asyncio.run`` and ``trio.run`` finalise it) or when the client is closed from it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Generic, TypeVar

import sniffio

from .errors import A2MEventLoopError

__all__ = ["PerLoop", "close_at_end", "current_loop", "loop_is_over"]

T = TypeVar("T")


def current_loop(what: str = "AsyncA2MClient", *, method: str | None = None) -> Any:
    """The running event loop: the asyncio loop, or trio's token for this run; refused,
    typed, outside any loop or under a library the client does not run on."""
    try:
        library = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        library = None
    if library == "asyncio":
        return asyncio.get_running_loop()
    if library == "trio":
        import trio

        return trio.lowlevel.current_trio_token()
    raise A2MEventLoopError(
        f"{what} runs on asyncio or trio, not on {library or 'no event loop'}; await it from "
        "a coroutine run by one of them (asyncio.run(...))",
        method=method,
    )


def loop_is_over(loop: Any) -> bool:
    """Whether ``loop`` can run nothing more: an asyncio loop that is closed (a trio run's
    end cannot be seen from outside; it is never reported over)."""
    return isinstance(loop, asyncio.AbstractEventLoop) and loop.is_closed()


async def close_at_end(close: Callable[[], Awaitable[object]]) -> AsyncGenerator[None, None]:
    """Started (``await closer.asend(None)``) on an asyncio loop, it stays suspended for
    the loop's life; ``asyncio.run`` finalises it (``shutdown_asyncgens``) before closing
    the loop, which runs ``close`` on that loop, where it must run."""
    try:
        yield
    finally:
        await close()


async def _close_on_cancel(close: Callable[[], Awaitable[object]]) -> None:
    import trio

    try:
        await trio.sleep_forever()
    finally:
        with trio.CancelScope(shield=True):
            await close()


class _Entry(Generic[T]):
    __slots__ = ("closer", "item")

    def __init__(self, item: T) -> None:
        self.item = item
        self.closer: AsyncGenerator[None, None] | None = None


class PerLoop(Generic[T]):
    """One ``T`` per event loop, made by ``factory`` at its loop's first :meth:`get`.
    Thread-safe. With ``close``, each item is closed on its loop: when that loop ends
    (registered at :meth:`get`), or by :meth:`aclose_current`."""

    def __init__(
        self,
        factory: Callable[[], T],
        close: Callable[[T], Awaitable[object]] | None = None,
    ) -> None:
        self._factory = factory
        self._close = close
        self._entries: dict[Any, _Entry[T]] = {}
        self._lock = threading.Lock()

    def _entry(self, loop: Any) -> tuple[_Entry[T], bool]:
        with self._lock:
            for stale in [other for other in self._entries if loop_is_over(other)]:
                del self._entries[stale]  # closed at its loop's end
            entry = self._entries.get(loop)
            if entry is not None:
                return entry, False
            entry = self._entries[loop] = _Entry(self._factory())
            return entry, True

    def get(self) -> T:
        """This loop's item (no closing registered: for items with nothing to close)."""
        return self._entry(current_loop())[0].item

    async def aget(self) -> T:
        """This loop's item; the first time on a loop, its closing at the loop's end is
        registered too."""
        loop = current_loop()
        entry, new = self._entry(loop)
        if new and self._close is not None:
            close = self._close
            item = entry.item

            async def close_item() -> None:
                await close(item)

            if isinstance(loop, asyncio.AbstractEventLoop):
                closer = close_at_end(close_item)
                await closer.asend(None)  # now the loop finalises it at its end
                entry.closer = closer
            else:
                import trio

                trio.lowlevel.spawn_system_task(_close_on_cancel, close_item)
        return entry.item

    def items(self) -> list[T]:
        """Every loop's item, for closing what needs no loop."""
        with self._lock:
            return [entry.item for entry in self._entries.values()]

    async def aclose_current(self) -> None:
        """Close this loop's item, if it has one; the other loops' are closed when their
        loops end (an item must be closed on its own loop)."""
        try:
            loop = current_loop()
        except A2MEventLoopError:
            return
        with self._lock:
            entry = self._entries.pop(loop, None)
        if entry is None or self._close is None:
            return
        if entry.closer is not None:
            await entry.closer.aclose()  # runs the close, and unregisters it
        else:
            await self._close(entry.item)
