"""A pytest plugin that runs LangGraph's own store and checkpointer test batteries against
:class:`A2MStore`, :class:`AsyncA2MStore` and :class:`A2MSaver`, on every binding.

The batteries are the ``tests/`` of the ``langgraph-checkpoint``,
``langgraph-checkpoint-postgres`` and ``langgraph-checkpoint-sqlite`` sdists, downloaded
and unpacked by the ``tests-langgraph`` nox session (see ``run_battery.py``); nothing of
them is kept in this repository. Only their fixtures are adapted: as each test module (or
conftest) is imported, the names that make a store or saver — a fixture (``store``), a
helper the fixtures call (``_create_vector_store``), or the class a test constructs
(``InMemoryStore()``) — are replaced by ones making ours on a fresh A2M server. Every test
body and assertion runs as LangGraph wrote it.

Each test runs once per binding (``in-process``, ``http``, ``rest``). A test that reaches
into a backend's internals (SQL, migrations, private dicts) or meets a documented
difference is skipped, its reason naming the line of ``docs/langgraph.md`` that says why.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from a2m import A2MClient, AsyncA2MClient
from a2m_langchain.langgraph import A2MSaver, A2MStore, AsyncA2MStore
from a2m_server.bindings.http import create_app
from a2m_server.server import A2MServer
from a2m_testing.servers import serve_http

os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
os.environ.setdefault("LANGSMITH_TRACING", "false")

BINDINGS = ("in-process", "http", "rest")
DOCS = Path(__file__).resolve().parents[4] / "docs" / "langgraph.md"


# --- servers ------------------------------------------------------------------------------


class _Dispatch:
    """One HTTP listener for the whole run, in front of many fresh A2M servers: the path's
    first segment names the server (``/s17/…``), so each store gets an empty server of
    its own without a listener of its own."""

    def __init__(self) -> None:
        self.apps: dict[str, Any] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        name = scope["path"].split("/")[1]
        app = self.apps.get(name)
        if app is None:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"no such server"})
            return
        cut = len(name) + 1
        path = scope["path"][cut:] or "/"
        raw = scope.get("raw_path") or scope["path"].encode()
        await app(dict(scope, path=path, raw_path=raw[cut:] or b"/"), receive, send)


class _Harness:
    """The servers and clients one test made, all closed after it."""

    count = 0

    def __init__(self, binding: str, dispatch: _Dispatch, url: str | None) -> None:
        self.binding = binding
        self._dispatch = dispatch
        self._url = url
        self._servers: list[tuple[str, A2MServer]] = []
        self._clients: list[A2MClient] = []

    def _server(self) -> tuple[A2MServer, str | None]:
        server = A2MServer()
        _Harness.count += 1
        name = f"s{_Harness.count}"
        self._servers.append((name, server))
        if self.binding == "in-process":
            return server, None
        self._dispatch.apps[name] = create_app(server)
        return server, f"{self._url}{name}/"

    def sync_client(self) -> A2MClient:
        """A client of a fresh, empty server over this test's binding."""
        server, url = self._server()
        if url is None:
            client = A2MClient.in_process(server)
        elif self.binding == "http":
            client = A2MClient(url)
        else:
            client = A2MClient.rest(url, namespace="langgraph")
        self._clients.append(client)
        return client

    def async_client(self) -> AsyncA2MClient:
        """An async client of a fresh, empty server (the caller closes it on its loop)."""
        server, url = self._server()
        if url is None:
            return AsyncA2MClient.in_process(server)
        if self.binding == "http":
            return AsyncA2MClient(url)
        return AsyncA2MClient.rest(url, namespace="langgraph")

    def close(self) -> None:
        for client in self._clients:
            client.close()
        for name, server in self._servers:
            self._dispatch.apps.pop(name, None)
            server.close()


_current: list[_Harness] = []


def harness() -> _Harness:
    return _current[-1]


@pytest.fixture(scope="session")
def lg_battery_dispatch() -> Iterator[tuple[_Dispatch, str]]:
    dispatch = _Dispatch()
    with serve_http(dispatch) as url:
        yield dispatch, url


@pytest.fixture(autouse=True, params=BINDINGS)
def lg_battery_binding(
    request: pytest.FixtureRequest, lg_battery_dispatch: tuple[_Dispatch, str]
) -> Iterator[str]:
    """The binding this run of the test uses; its servers are torn down after it."""
    binding = str(request.param)
    made = _Harness(binding, *lg_battery_dispatch)
    _current.append(made)
    try:
        yield binding
    finally:
        _current.remove(made)
        made.close()


# --- what replaces LangGraph's stores and savers ------------------------------------------


def _index(index: Any) -> Any:
    """A LangGraph index config as ours reads it (SqliteStore spells ``fields``
    ``text_fields``; other keys, such as PostgreSQL's ``ann_index_config``, are kept in
    ``index_config`` and otherwise unread)."""
    if not index:
        return None
    config = dict(index)
    if index.get("text_fields") is not None and config.get("fields") is None:
        config["fields"] = index["text_fields"]
    if config.get("fields") is None:
        config.pop("fields", None)
    return config


class BatteryStore(A2MStore):
    """``InMemoryStore()`` as the checkpoint battery constructs it: an A2MStore on a
    fresh server."""

    def __init__(self, *, index: Any = None, ttl: Any = None, **_: Any) -> None:
        super().__init__(harness().sync_client(), index=_index(index), ttl=ttl)


class BatterySaver(A2MSaver):
    """``InMemorySaver()`` as the checkpoint battery constructs it."""

    def __init__(self, *, serde: Any = None, **_: Any) -> None:
        super().__init__(harness().sync_client(), serde=serde)


class _FromConnString:
    """``SqliteStore`` / ``PostgresStore`` where a test calls ``from_conn_string`` itself."""

    def __init__(self, asynchronous: bool) -> None:
        self.asynchronous = asynchronous

    def from_conn_string(self, _conn: str, *, index: Any = None, ttl: Any = None, **_: Any) -> Any:
        if self.asynchronous:
            return _async_store(index=index, ttl=ttl)
        return _sync_store(index=index, ttl=ttl)


@contextlib.contextmanager
def _sync_store(*, index: Any = None, ttl: Any = None) -> Iterator[A2MStore]:
    store = A2MStore(harness().sync_client(), index=_index(index), ttl=ttl)
    store.setup = lambda: None  # type: ignore[attr-defined]
    yield store


@contextlib.asynccontextmanager
async def _async_store(*, index: Any = None, ttl: Any = None) -> AsyncIterator[AsyncA2MStore]:
    client = harness().async_client()
    try:
        store = AsyncA2MStore(client, index=_index(index), ttl=ttl)

        async def setup() -> None:
            return None

        store.setup = setup  # type: ignore[attr-defined]
        yield store
    finally:
        await client.aclose()


def _vector_index(embeddings: Any, distance_type: str, fields: Any) -> dict[str, Any]:
    return {
        "dims": embeddings.dims,
        "embed": embeddings,
        "distance_type": distance_type,
        "fields": fields,
    }


def _sqlite_index(
    embeddings: Any, text_fields: Any, distance_type: str | None = None
) -> dict[str, Any]:
    """The index config SqliteStore's battery builds (``text_fields``, not ``fields``)."""
    index = {"dims": embeddings.dims, "embed": embeddings, "text_fields": text_fields}
    if distance_type is not None:
        index["distance_type"] = distance_type
    return index


def _ttl(module: ModuleType, enable: bool = True) -> Any:
    minutes = getattr(module, "TTL_MINUTES", None)
    if not enable or minutes is None:
        return None
    return {"default_ttl": minutes, "refresh_on_read": True}


def _postgres_sync(module: ModuleType) -> dict[str, Any]:
    @pytest.fixture(name="store")
    def store() -> Iterator[A2MStore]:
        with _sync_store(ttl=_ttl(module)) as made:
            yield made

    @contextlib.contextmanager
    def _create_vector_store(
        vector_type: str,
        distance_type: str,
        fake_embeddings: Any,
        text_fields: list[str] | None = None,
        enable_ttl: bool = True,
    ) -> Iterator[A2MStore]:
        ttl = {"default_ttl": 2, "refresh_on_read": True} if enable_ttl else None
        index = _vector_index(fake_embeddings, distance_type, text_fields)
        with _sync_store(index=index, ttl=ttl) as made:
            yield made

    return {"store": store, "_create_vector_store": _create_vector_store}


def _postgres_async(module: ModuleType) -> dict[str, Any]:
    @pytest.fixture(name="store")
    async def store() -> AsyncIterator[AsyncA2MStore]:
        async with _async_store(ttl=_ttl(module)) as made:
            yield made

    @contextlib.asynccontextmanager
    async def _create_vector_store(
        vector_type: str,
        distance_type: str,
        fake_embeddings: Any,
        text_fields: list[str] | None = None,
    ) -> AsyncIterator[AsyncA2MStore]:
        index = _vector_index(fake_embeddings, distance_type, text_fields)
        async with _async_store(index=index) as made:
            yield made

    return {"store": store, "_create_vector_store": _create_vector_store}


def _sqlite_sync(module: ModuleType) -> dict[str, Any]:
    @pytest.fixture(name="store")
    def store() -> Iterator[A2MStore]:
        with _sync_store() as made:
            yield made

    @contextlib.contextmanager
    def create_vector_store(
        fake_embeddings: Any,
        text_fields: list[str] | None = None,
        distance_type: str = "cosine",
        conn_type: str = "memory",
    ) -> Iterator[A2MStore]:
        index = _sqlite_index(fake_embeddings, text_fields, distance_type)
        with _sync_store(index=index) as made:
            yield made

    return {
        "store": store,
        "create_vector_store": create_vector_store,
        "SqliteStore": _FromConnString(asynchronous=False),
    }


def _sqlite_async(module: ModuleType) -> dict[str, Any]:
    @pytest.fixture(name="store")
    async def store() -> AsyncIterator[AsyncA2MStore]:
        async with _async_store() as made:
            yield made

    @contextlib.asynccontextmanager
    async def create_vector_store(
        fake_embeddings: Any, conn_string: str = ":memory:", text_fields: list[str] | None = None
    ) -> AsyncIterator[AsyncA2MStore]:
        index = _sqlite_index(fake_embeddings, text_fields)
        async with _async_store(index=index) as made:
            yield made

    return {
        "store": store,
        "create_vector_store": create_vector_store,
        "AsyncSqliteStore": _FromConnString(asynchronous=True),
    }


def _postgres_conftest(module: ModuleType) -> dict[str, Any]:
    # Their autouse fixture empties PostgreSQL's tables; each store here has a fresh server.
    @pytest.fixture(name="clear_test_db")
    def clear_test_db() -> None:
        return None

    @pytest.fixture(name="conn")
    def conn() -> None:
        return None

    return {"clear_test_db": clear_test_db, "conn": conn}


def _checkpoint_store(module: ModuleType) -> dict[str, Any]:
    return {"InMemoryStore": BatteryStore}


def _checkpoint_memory(module: ModuleType) -> dict[str, Any]:
    return {"InMemorySaver": BatterySaver}


# (distribution directory prefix, file name) -> the replacements for that module.
ADAPTERS = {
    ("langgraph_checkpoint-", "test_store.py"): _checkpoint_store,
    ("langgraph_checkpoint-", "test_memory.py"): _checkpoint_memory,
    ("langgraph_checkpoint_postgres-", "conftest.py"): _postgres_conftest,
    ("langgraph_checkpoint_postgres-", "test_store.py"): _postgres_sync,
    ("langgraph_checkpoint_postgres-", "test_async_store.py"): _postgres_async,
    ("langgraph_checkpoint_sqlite-", "test_store.py"): _sqlite_sync,
    ("langgraph_checkpoint_sqlite-", "test_async_store.py"): _sqlite_async,
}


def _adapt(module: ModuleType) -> None:
    path = Path(getattr(module, "__file__", "") or "")
    if path.parent.name != "tests":
        return
    for (distribution, name), replacements in ADAPTERS.items():
        if path.name == name and path.parent.parent.name.startswith(distribution):
            for attribute, value in replacements(module).items():
                setattr(module, attribute, value)


class _AdaptedModule(pytest.Module):
    def _getobj(self) -> Any:
        module = super()._getobj()
        _adapt(module)
        return module


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Path, parent: Any) -> Any:
    if module_path.parent.name == "tests" and module_path.name.startswith("test_"):
        return _AdaptedModule.from_parent(parent, path=module_path)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_plugin_registered(plugin: Any, plugin_name: str, manager: Any) -> None:
    if isinstance(plugin, ModuleType) and (plugin.__file__ or "").endswith("conftest.py"):
        _adapt(plugin)


# --- documented skips ---------------------------------------------------------------------

# test name (or "module::name") -> a phrase that one line of docs/langgraph.md holds.
NOT_APPLICABLE = "(not applicable)"
ONE_VECTOR = "(difference: one vector per item)"
RESERVED_ROOT = "(difference: reserved root)"
DOTTED_KEYS = "(difference: dotted filter keys)"

SKIPS: dict[str, str] = {
    # PostgreSQL's rows expired by SQL, migrations, its connection pool.
    "test_omit_expired_disabled_preserves_expired_rows": NOT_APPLICABLE,
    "test_omit_expired_refresh_ttl_only_refreshes_live_rows": NOT_APPLICABLE,
    "test_omit_expired_search_pagination": NOT_APPLICABLE,
    "test_omit_expired_filters_read_paths": NOT_APPLICABLE,
    "test_nonnull_migrations": NOT_APPLICABLE,
    "test_abatch_uses_single_pool_checkout": NOT_APPLICABLE,
    # SQLite's guard on filter keys it pastes into SQL; its vector tables.
    "test_sql_injection_vulnerability": NOT_APPLICABLE,
    "langgraph_checkpoint_sqlite/test_store.py::test_vector_store_initialization": (NOT_APPLICABLE),
    # InMemorySaver's private dicts.
    "test_memory.py::TestInMemorySaverDeltaChannel": NOT_APPLICABLE,
    "test_memory.py::TestBaseFallbackGetChannelWrites": NOT_APPLICABLE,
    "test_memory.py::TestPreDeltaBlobTerminator": NOT_APPLICABLE,
    # Items indexed at several fields.
    "test_embed_with_path": ONE_VECTOR,
    "test_embed_with_path_sync": ONE_VECTOR,
    "test_embed_with_path_operation_config": ONE_VECTOR,
    "langgraph_checkpoint/test_store.py::test_cannot_put_empty_namespace": RESERVED_ROOT,
    "langgraph_checkpoint_sqlite/test_store.py::test_filter_keys_with_hyphens_and_digits": (
        DOTTED_KEYS
    ),
}


def _doc_line(phrase: str) -> str:
    for number, line in enumerate(DOCS.read_text(encoding="utf-8").splitlines(), start=1):
        if phrase in line:
            return f"docs/langgraph.md line {number}: {line.strip()}"
    raise LookupError(f"docs/langgraph.md has no line saying {phrase!r}")


def _skip_phrase(item: pytest.Item) -> str | None:
    name = re.sub(r"\[.*\]$", "", item.name)
    module = Path(str(item.fspath)).name
    dist = Path(str(item.fspath)).parent.parent.name.split("-")[0]
    for key in (f"{dist}/{module}::{name}", f"{module}::{name}", name):
        if key in SKIPS:
            return SKIPS[key]
    cls = getattr(item, "cls", None)
    if cls is not None:
        for key in (f"{dist}/{module}::{cls.__name__}", f"{module}::{cls.__name__}"):
            if key in SKIPS:
                return SKIPS[key]
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        phrase = _skip_phrase(item)
        if phrase is not None:
            item.add_marker(pytest.mark.skip(reason=_doc_line(phrase)))
