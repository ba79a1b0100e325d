"""LangGraph's long-term memory store on A2M: :class:`A2MStore` over a synchronous client,
:class:`AsyncA2MStore` over an asynchronous one. What each batch costs in A2M calls is in
:mod:`._store_plan`."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    IndexConfig,
    Op,
    Result,
    TTLConfig,
    ensure_embeddings,
    tokenize_path,
)

from a2m import A2MClient, AsyncA2MClient
from a2m_types.rest import validate_namespace

from ._effects import adrive, drive
from ._store_plan import StoreSettings, plan_batch

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
        self.settings = StoreSettings(root, fields, source_framework, agent)


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

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in a bounded number of A2M calls (see the module docs)."""
        return drive(plan_batch(ops, self._config.settings), self.client, self.embeddings)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread, so the event loop never waits on the network."""
        return await asyncio.to_thread(self.batch, list(ops))


class AsyncA2MStore(BaseStore):
    """:class:`A2MStore` over an :class:`~a2m.AsyncA2MClient`: ``abatch`` is native.

    The synchronous methods work from another thread while the store's event loop (the
    one it was made on, or last ran on) runs — as when LangGraph runs a synchronous tool in
    a worker thread of an async graph; called on the loop itself they would deadlock it,
    so they raise instead."""

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

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in a bounded number of A2M calls (see the module docs)."""
        self._loop = asyncio.get_running_loop()
        return await adrive(plan_batch(ops, self._config.settings), self.client, self.embeddings)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`abatch` on the store's running event loop, from another thread."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                "AsyncA2MStore's synchronous methods cannot run on its event loop; await "
                "the async ones (aget, aput, asearch, …), or use A2MStore"
            )
        loop = self._loop
        if loop is None or not loop.is_running():
            raise RuntimeError(
                "AsyncA2MStore's synchronous methods need its event loop running in another "
                "thread (they run there); use A2MStore for synchronous code"
            )
        future = asyncio.run_coroutine_threadsafe(self.abatch(list(ops)), loop)
        return future.result()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The loop a constructor runs on, if any: synchronous calls from worker threads are
    sent there (only looked at, never started)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
