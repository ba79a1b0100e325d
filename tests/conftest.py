"""Session-wide fixtures: the store backends (``store_backend``) that the server and
REST suites, and the adapter tests that ask for it, are parametrized over; see
``store_backends``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from store_backends import PostgresServer, active, current_server, resolve_db, set_active

# Modules that exercise a store; the others (CLI parsing, units) run on SQLite alone.
_STORE_MODULES = (
    "test_spec_",
    "test_rest_",
    "test_http_binding",
    "test_where_operators",
    "test_store_counts",
    "test_store_access",
    "test_store_ties",
    "test_store_readers",
    "test_store_cjk",
    "test_store_exact_recall",
    "test_store_bounded_records",
    "test_store_tenancy",
    "test_embed_",
    "test_observations",
    "test_ui_operator",
)
# Modules about PostgreSQL alone (several processes, faults, moving data).
BACKENDS = ("sqlite", "postgres")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sqlite_only(reason): inspects the SQLite file itself; skipped on PostgreSQL"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_backend" not in metafunc.fixturenames:
        return
    name = metafunc.module.__name__
    if name.startswith("test_pg_"):
        chosen: tuple[str, ...] = ("postgres",)
    elif name.startswith(_STORE_MODULES) or "adapters" in metafunc.definition.path.parts:
        # An adapter's test asks for a backend to show it behaves the same on both stores.
        chosen = BACKENDS
    else:
        chosen = ("sqlite",)
    metafunc.parametrize("store_backend", chosen, indirect=True, scope="session")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL (with pgvector) for the whole session."""
    server = PostgresServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def store_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """``sqlite`` or ``postgres``; under postgres every store the suite opens (servers in
    this process and stdio subprocesses started by the peer factory) is a PostgreSQL
    schema of its own."""
    backend: str = getattr(request, "param", "sqlite")
    if backend == "sqlite":
        set_active("sqlite", None)
        yield backend
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    import a2m_server.server as server_module

    real_open = server_module.open_store

    def open_store(db: Any = ":memory:", **options: Any) -> Any:
        return real_open(resolve_db(db), **options)

    set_active("postgres", server)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(server_module, "open_store", open_store)
        try:
            yield backend
        finally:
            set_active("sqlite", None)


@pytest.fixture(autouse=True)
def _sqlite_unless_asked(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that does not ask for a backend gets SQLite, even after a PostgreSQL-backed
    test in the same process left the session's backend on PostgreSQL."""
    if "store_backend" in request.fixturenames or active() != "postgres":
        yield
        return
    server = current_server()
    set_active("sqlite", None)
    try:
        yield
    finally:
        set_active("postgres", server)


@pytest.fixture(autouse=True)
def _skip_sqlite_only(request: pytest.FixtureRequest) -> None:
    marker = request.node.get_closest_marker("sqlite_only")
    if marker is None or "store_backend" not in request.fixturenames:
        return
    if request.getfixturevalue("store_backend") == "postgres":
        pytest.skip(marker.args[0] if marker.args else "inspects the SQLite file itself")
