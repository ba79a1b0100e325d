"""LangGraph's long-term memory store on A2M: :class:`A2MStore` over a synchronous client,
:class:`AsyncA2MStore` over an asynchronous one. What each batch costs in A2M calls is in
:mod:`._store_plan`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Iterable

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    IndexConfig,
    Op,
    PutOp,
    Result,
    TTLConfig,
    ensure_embeddings,
    tokenize_path,
)

from a2m import A2MClient, A2MProtocolError, AsyncA2MClient, PayloadTooLargeError
from a2m.adapter_support import settled
from a2m_types.rest import validate_namespace

from ._effects import Layout, adrive, drive
from ._items import DISTANCES
from ._store_plan import StoreSettings, check_op, plan_batch

__all__ = ["A2MStore", "AsyncA2MStore"]


class _Settings:
    """Configuration shared by both stores (no I/O: nothing is sent until a batch runs)."""

    def __init__(
        self,
        index: IndexConfig | None,
        namespace: str | None,
        source_framework: str,
        agent: str | None,
    ) -> None:
        root = tuple(validate_namespace(namespace).split("/")) if namespace else ()
        self.index_config = dict(index) if index else None
        self.embeddings: Embeddings | None = None
        fields: list[tuple[str, str | list[str]]] | None = None
        if index:
            if "embed" not in index:
                raise ValueError("an index needs 'embed': an Embeddings object or a function")
            self.embeddings = ensure_embeddings(index["embed"])
            fields = [
                (path, path if path == "$" else tokenize_path(path))
                for path in (index.get("fields") or ["$"])
            ]
            distance = index.get("distance_type", "cosine")
            if distance not in DISTANCES:
                raise ValueError(
                    f"distance_type {distance!r} is not one this store scores by; "
                    f"use one of {', '.join(DISTANCES)}"
                )
        self.settings = StoreSettings(root, fields, source_framework, agent)
        if index:
            self.settings.distance = str(index.get("distance_type", "cosine"))


class A2MStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are A2M records, readable by every other
    framework's agents.

    The namespace tuple ``("users", "alice")`` and key ``"prefs"`` are the A2M key
    ``users/alice/prefs`` (beneath ``namespace``, when given; other labels are escaped,
    see :mod:`a2m_langchain.langgraph`), so a record any adapter writes there is this item.
    ``index`` (``dims``, ``embed``, ``fields``) turns on semantic search, embedding on the
    client and storing the vectors verbatim; without it a search's ``query`` is ranked
    lexically by the server. ``ttl`` (``default_ttl`` minutes, ``refresh_on_read``) sets
    TTLs, which the server enforces. ``source_framework`` and ``agent`` are the records'
    provenance (``agent`` also owns them where the server declares scopes). The client is
    the caller's: the store never closes it, and sends nothing before the first batch.

    ``abatch`` runs the synchronous client in a worker thread; with an
    :class:`~a2m.AsyncA2MClient` use :class:`AsyncA2MStore`."""

    supports_ttl: bool = True

    def __init__(
        self,
        client: A2MClient,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        namespace: str | None = None,
        source_framework: str = "langgraph",
        agent: str | None = None,
    ) -> None:
        self.client = client
        self._config = _Settings(index, namespace, source_framework, agent)
        self.index_config = self._config.index_config
        self.embeddings = self._config.embeddings
        self.ttl_config = ttl
        self._describing = threading.Lock()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in a bounded number of A2M calls (see the module docs)."""
        settings = self._config.settings
        ops = list(ops)
        for op in ops:
            check_op(op, settings.root)  # a refused batch sends nothing, describe included
        if settings.layout is None:
            with self._describing:  # one describe, however many threads wait on it
                if settings.layout is None:
                    description = self.client.description or self.client.describe()
                    settings.layout = Layout.of(description)
        return drive(plan_batch(ops, settings, checked=True), self.client, self.embeddings)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread, so the event loop never waits on the network."""
        return await asyncio.to_thread(self.batch, list(ops))

    def start_ttl_sweeper(
        self, sweep_interval_minutes: int | None = None
    ) -> concurrent.futures.Future[None]:
        """What ``PostgresStore.start_ttl_sweeper`` starts, the server runs already: an
        expired item is gone from every read. Returns a finished future."""
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        done.set_result(None)
        return done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Nothing to stop (see :meth:`start_ttl_sweeper`); returns ``True``."""
        return True


class AsyncA2MStore(BaseStore):
    """:class:`A2MStore` over an :class:`~a2m.AsyncA2MClient`: ``abatch`` is native.

    As LangGraph's own async stores do, the single-operation methods (``aget``, ``aput``,
    ``asearch``, …) called concurrently are merged: every call made in one turn of the
    event loop joins one batch, identical reads are answered once and the last write to
    an address wins, so 60,000 concurrent calls cost tens of A2M calls, not 60,000. The
    server is described once, however many calls wait for it.

    The synchronous methods work from another thread while the store's event loop (the
    one it was made on, or last ran on) runs — as when LangGraph runs a synchronous tool in
    a worker thread of an async graph; on the loop itself they would deadlock it, and
    without a loop to run on they cannot run: both raise :class:`asyncio.InvalidStateError`,
    as LangGraph's async stores do."""

    supports_ttl: bool = True

    def __init__(
        self,
        client: AsyncA2MClient,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        namespace: str | None = None,
        source_framework: str = "langgraph",
        agent: str | None = None,
    ) -> None:
        self.client = client
        self._config = _Settings(index, namespace, source_framework, agent)
        self.index_config = self._config.index_config
        self.embeddings = self._config.embeddings
        self.ttl_config = ttl
        self._loop: asyncio.AbstractEventLoop | None = _running_loop()
        self._merger: _Merger | None = None
        self._describing: asyncio.Lock | None = None

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in a bounded number of A2M calls (see the module docs)."""
        ops = list(ops)
        for op in ops:
            check_op(op, self._config.settings.root)  # refused here, before it is merged
        return await self._merged(ops)

    async def _merged(self, ops: list[Op]) -> list[Result]:
        loop = asyncio.get_running_loop()
        merger = self._merger
        if merger is None or merger.loop is not loop:
            if merger is not None and merger.loop.is_running():
                # Another loop (another thread) still runs the first: no merging here.
                return await self._run(ops)
            merger = self._merger = _Merger(loop, self._run)
            self._describing = None
        self._loop = loop
        return await merger.submit(ops)

    async def _run(self, ops: list[Op]) -> list[Result]:
        settings = self._config.settings
        if settings.layout is None:
            merger = self._merger
            if merger is None or merger.loop is not asyncio.get_running_loop():
                # A call from a loop other than the store's: the lock belongs to that one.
                description = self.client.description or await self.client.describe()
                settings.layout = Layout.of(description)
                return await adrive(
                    plan_batch(ops, settings, checked=True), self.client, self.embeddings
                )
            # Single flight: one describe, however many batches are waiting on it.
            if self._describing is None:
                self._describing = asyncio.Lock()
            async with self._describing:
                if settings.layout is None:
                    description = self.client.description or await self.client.describe()
                    settings.layout = Layout.of(description)
        plan = plan_batch(ops, settings, checked=True)  # abatch checked each op
        run = adrive(plan, self.client, self.embeddings)
        # A batch that writes runs to its end even if its caller is cancelled meanwhile.
        return await (settled(run) if any(isinstance(op, PutOp) for op in ops) else run)

    async def start_ttl_sweeper(self, sweep_interval_minutes: int | None = None) -> None:
        """What ``AsyncPostgresStore.start_ttl_sweeper`` starts, the server runs already:
        an expired item is gone from every read."""
        return

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Nothing to stop (see :meth:`start_ttl_sweeper`); returns ``True``."""
        return True

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`abatch` on the store's running event loop, from another thread."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not None and running is self._loop:
            raise asyncio.InvalidStateError(
                "AsyncA2MStore's synchronous methods cannot run on its event loop; await "
                "the async ones (aget, aput, asearch, …), or use A2MStore"
            )
        loop = self._loop
        if loop is None or not loop.is_running():
            raise asyncio.InvalidStateError(
                "AsyncA2MStore's synchronous methods need its event loop running in another "
                "thread (they run there); use A2MStore for synchronous code"
            )
        future = asyncio.run_coroutine_threadsafe(self.abatch(list(ops)), loop)
        return future.result()


_REFUSALS = (A2MProtocolError, PayloadTooLargeError)
"""Failures of a merged batch that its callers' batches, sent alone, may not meet."""


class _Merger:
    """Merges the batches submitted in one turn of an event loop into one, as LangGraph's
    ``AsyncBatchedBaseStore`` does: a task started by the first submission runs, after
    every call already scheduled has queued its operations, everything queued."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        run: Callable[[list[Op]], Awaitable[list[Result]]],
    ) -> None:
        self.loop = loop
        self._run = run
        self._queued: list[tuple[list[Op], asyncio.Future[list[Result]]]] = []
        self._task: asyncio.Task[None] | None = None

    async def submit(self, ops: list[Op]) -> list[Result]:
        future: asyncio.Future[list[Result]] = self.loop.create_future()
        self._queued.append((ops, future))
        if self._task is None or self._task.done():
            self._task = self.loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._queued:
            queued, self._queued = self._queued, []
            queued = [(ops, future) for ops, future in queued if not future.done()]
            if not queued:
                continue
            merged = [op for ops, _ in queued for op in ops]
            try:
                results = await self._run(merged)
            except Exception as failed:
                if len(queued) == 1 or not isinstance(failed, _REFUSALS):
                    for _, future in queued:  # the server is away, or one batch failed
                        _settle(future, failed)
                    continue
                # A refusal may be one caller's write, or the merged request may be too
                # large where each alone is not: it must not fail the others, so each
                # batch runs again alone (puts and deletes are idempotent).
                for ops, future in queued:
                    try:
                        _settle(future, await self._run(ops))
                    except Exception as own:
                        _settle(future, own)
                continue
            start = 0
            for ops, future in queued:
                _settle(future, results[start : start + len(ops)])
                start += len(ops)


def _settle(future: asyncio.Future[list[Result]], outcome: list[Result] | BaseException) -> None:
    if future.done():  # cancelled meanwhile
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The loop a constructor runs on, if any: synchronous calls from worker threads are
    sent there (only looked at, never started)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
