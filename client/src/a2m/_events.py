"""Following a store's events: :class:`Subscription` for push (§4.13) and :class:`Watcher`
for polling the log with a cursor (§4.12), each with an asyncio twin.

A watcher surfaces ``reset`` (its cursor fell out of the retained window, so events may have
been missed) by calling ``on_reset``; without one it logs a WARNING and carries on from the
oldest retained event. Its ``cursor`` is the position after the last fully delivered poll,
so a watch resumed from it never loses an event (it may repeat a few)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import inspect
import queue
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from types import TracebackType
from typing import Any

from typing_extensions import Self

from a2m_types import Event, EventsResult

from ._core import log

__all__ = ["AsyncSubscription", "AsyncWatcher", "EventCallback", "Subscription", "Watcher"]

EventCallback = Callable[[Event], object]
"""Receives each pushed event; on the async client it may also be a coroutine function."""

_END = object()


class Subscription:
    """Events pushed on this connection after ``subscribe()``, delivered to the callback
    given there, or else queued for iteration: ``for event in subscription`` blocks until
    the subscription ends; :meth:`iter_events` also stops after ``timeout`` idle seconds.

    A callback runs, in order, on a thread of its own, never on the transport's reader, so
    it may call the client itself."""

    def __init__(self, close: Callable[[Subscription], object], callback: EventCallback | None):
        self._close = close
        self._callback = callback
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.active = True
        """False once unsubscribed, replaced by a newer subscription, or the client closed."""
        if callback is not None:
            threading.Thread(
                target=self._dispatch, args=(callback,), name="a2m-subscription", daemon=True
            ).start()

    def _deliver(self, event: Event) -> None:
        if self.active:
            self._queue.put(event)

    def _dispatch(self, callback: EventCallback) -> None:
        while (event := self._queue.get()) is not _END:
            try:
                callback(event)
            except Exception:
                log.exception("the subscription callback failed on %s", event.kind)

    def _end(self) -> None:
        if self.active:
            self.active = False
            self._queue.put(_END)

    def iter_events(self, timeout: float | None = None) -> Iterator[Event]:
        """Yield events as they arrive; stop when the subscription ends or, with ``timeout``,
        when no event arrives for that many seconds."""
        if self._callback is not None:
            raise TypeError("this subscription delivers to its callback; it cannot be iterated")
        while True:
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                return
            if item is _END:
                self._queue.put(_END)  # every later iteration ends too
                return
            yield item

    def __iter__(self) -> Iterator[Event]:
        return self.iter_events()

    def close(self) -> None:
        """Unsubscribe (a no-op once the subscription has ended)."""
        try:
            if self.active:
                self._close(self)
        finally:
            self._end()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncSubscription:
    """The asyncio twin of :class:`Subscription`: ``async for event in subscription``.

    Notifications may arrive on any thread; they reach an :class:`asyncio.Queue` (or the
    callback) on the subscriber's event loop through ``call_soon_threadsafe``."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        close: Callable[[AsyncSubscription], Awaitable[object]],
        callback: EventCallback | None,
    ):
        self._loop = loop
        self._close = close
        self._callback = callback
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._tasks: set[asyncio.Future[Any]] = set()
        self._ended = False
        self.active = True
        """False once unsubscribed, replaced by a newer subscription, or the client closed."""

    def _deliver(self, event: Event) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is listening any more
            self._loop.call_soon_threadsafe(self._on_loop, event)

    def _on_loop(self, event: Event) -> None:
        if self._ended:
            return
        if self._callback is None:
            self._queue.put_nowait(event)
            return
        try:
            outcome = self._callback(event)
        except Exception:
            log.exception("the subscription callback failed on %s", event.kind)
            return
        if inspect.isawaitable(outcome):
            task = asyncio.ensure_future(outcome)
            self._tasks.add(task)
            task.add_done_callback(self._callback_done)

    def _callback_done(self, task: asyncio.Future[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("the subscription callback failed", exc_info=task.exception())

    def _end(self) -> None:
        self.active = False
        # Through the loop, so events scheduled before the end are still delivered.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._on_end)

    def _on_end(self) -> None:
        if not self._ended:
            self._ended = True
            self._queue.put_nowait(_END)

    async def iter_events(self, timeout: float | None = None) -> AsyncIterator[Event]:
        """Yield events as they arrive; stop when the subscription ends or, with ``timeout``,
        when no event arrives for that many seconds."""
        if self._callback is not None:
            raise TypeError("this subscription delivers to its callback; it cannot be iterated")
        while True:
            try:
                item = await asyncio.wait_for(self._queue.get(), timeout)
            except asyncio.TimeoutError:
                return
            if item is _END:
                self._queue.put_nowait(_END)
                return
            yield item

    def __aiter__(self) -> AsyncIterator[Event]:
        return self.iter_events()

    async def aclose(self) -> None:
        """Unsubscribe (a no-op once the subscription has ended)."""
        try:
            if self.active:
                await self._close(self)
        finally:
            self._end()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _reset_warning(on_reset: Callable[[], object] | None) -> object:
    if on_reset is not None:
        return on_reset()
    log.warning(
        "memory/events: the cursor fell out of the server's retained window; events may have "
        "been missed (pass on_reset= to watch() to re-read your state)"
    )
    return None


class Watcher:
    """Follows the event log by polling ``memory/events`` (§4.12): yields every event in
    order, polls again at once while the server says ``more``, and sleeps ``poll_interval``
    after a poll that returned nothing. Iterate it; read :attr:`cursor` to resume later."""

    def __init__(
        self,
        poll: Callable[[str | None], EventsResult],
        sleep: Callable[[float], object],
        *,
        cursor: str | None,
        poll_interval: float,
        on_reset: Callable[[], object] | None,
    ) -> None:
        self._poll = poll
        self._sleep = sleep
        self.cursor = cursor
        """Where the next poll reads from; ``None`` until the first poll fixes "now"."""
        self.poll_interval = poll_interval
        self._on_reset = on_reset

    def __iter__(self) -> Iterator[Event]:
        if self.cursor is None:
            self.cursor = self._poll(None).cursor  # no cursor means "from now" (§4.12)
        while True:
            result = self._poll(self.cursor)
            if result.reset:
                _reset_warning(self._on_reset)
            yield from result.events
            self.cursor = result.cursor
            if not result.more and not result.events:
                self._sleep(self.poll_interval)


class AsyncWatcher:
    """The async twin of :class:`Watcher`: ``async for event in client.watch()``.

    An iterator object rather than an async generator, so leaving the loop early leaves
    nothing for an event loop to finalize (trio warns about such generators)."""

    def __init__(
        self,
        poll: Callable[[str | None], Awaitable[EventsResult]],
        sleep: Callable[[float], Awaitable[object]],
        *,
        cursor: str | None,
        poll_interval: float,
        on_reset: Callable[[], object] | None,
    ) -> None:
        self._poll = poll
        self._sleep = sleep
        self.cursor = cursor
        """Where the next poll reads from; ``None`` until the first poll fixes "now"."""
        self.poll_interval = poll_interval
        self._on_reset = on_reset
        self._pending: collections.deque[Event] = collections.deque()
        self._after_pending: str | None = None
        """The cursor past the pending events: :attr:`cursor` moves there only once they
        have all been handed out, so resuming from it never skips one."""

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Event:
        while not self._pending:
            if self._after_pending is not None:
                self.cursor, self._after_pending = self._after_pending, None
            if self.cursor is None:
                self.cursor = (await self._poll(None)).cursor
            result = await self._poll(self.cursor)
            if result.reset:
                outcome = _reset_warning(self._on_reset)
                if inspect.isawaitable(outcome):
                    await outcome
            if result.events:
                self._pending.extend(result.events)
                self._after_pending = result.cursor
                break
            self.cursor = result.cursor
            if not result.more:
                await self._sleep(self.poll_interval)
        return self._pending.popleft()
