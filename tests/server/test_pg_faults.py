"""Bad URLs and database faults on the PostgreSQL store (issue 15): each is a clear error,
a failed call is a JSON-RPC error that changed nothing, and the pool recovers."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from typing import Any

import psycopg
import pytest

from a2m_server import A2MServer
from a2m_server.store import StoreError
from store_backends import PostgresServer


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "a2m_server", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_a_malformed_url_is_a_clear_error(postgres_server: PostgresServer) -> None:
    with pytest.raises(StoreError, match="not a usable PostgreSQL URL"):
        A2MServer(db=postgres_server.base_url + "&no_such_option=1")
    done = _cli("stdio", "--db", "postgresql://localhost/a2m?no_such_option=1")
    assert done.returncode == 2
    assert "not a usable PostgreSQL URL" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "url",
    ["postgresql://a2m:secret@127.0.0.1:1/a2m", "postgresql://a2m@127.0.0.1:1/a2m?password=secret"],
    ids=["in-the-address", "as-a-parameter"],
)
def test_a_refused_connection_is_a_clear_error(url: str) -> None:
    # Port 1 on loopback: nothing listens there, so the connection is refused at once.
    with pytest.raises(
        StoreError, match=r"cannot connect to PostgreSQL at .*127\.0\.0\.1"
    ) as caught:
        A2MServer(db=url)
    assert "secret" not in str(caught.value)
    done = _cli("stdio", "--db", url)
    assert done.returncode == 2
    assert "cannot connect to PostgreSQL" in done.stderr
    assert "secret" not in done.stderr  # the password is never echoed


def test_a_database_without_pgvector_names_the_extension(postgres_server: PostgresServer) -> None:
    with psycopg.connect(postgres_server.base_url, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS a2m_novector")
        admin.execute("DROP ROLE IF EXISTS a2m_plain")
        admin.execute("CREATE ROLE a2m_plain LOGIN")
        admin.execute("CREATE DATABASE a2m_novector OWNER a2m_plain")
    plain = postgres_server.base_url.replace("postgres:@/postgres", "a2m_plain@/a2m_novector")
    try:
        with pytest.raises(StoreError, match=r"'vector' extension \(pgvector\)"):
            A2MServer(db=plain)
    finally:
        with psycopg.connect(postgres_server.base_url, autocommit=True) as admin:
            admin.execute("DROP DATABASE IF EXISTS a2m_novector WITH (FORCE)")
            admin.execute("DROP ROLE IF EXISTS a2m_plain")


def _blocked_backend(admin: psycopg.Connection[Any], statement: str) -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        row = admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s",
            (statement + "%",),
        ).fetchone()
        if row is not None:
            return int(row[0])
        time.sleep(0.02)
    raise AssertionError(f"no backend blocked on {statement!r}")


def _remember_in_thread(
    server: A2MServer, contents: list[str]
) -> tuple[threading.Thread, list[Any]]:
    answers: list[Any] = []
    message = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "memory/remember",
            "params": {"records": [{"content": c} for c in contents]},
        }
    )

    def run() -> None:
        answers.append(json.loads(server.connect().handle(message) or "null"))

    thread = threading.Thread(target=run)
    thread.start()
    return thread, answers


def test_a_connection_dropped_mid_batch_fails_the_call_writes_nothing_and_the_pool_recovers(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.fresh_url()
    with (
        A2MServer(db=url) as server,
        psycopg.connect(url.replace("schema=", "options=-csearch_path%3D")) as admin,
    ):
        # Hold the event log's head: the batch's rows are inserted, then it waits there.
        admin.execute("SELECT value FROM meta WHERE key = 'event_head' FOR UPDATE")
        thread, answers = _remember_in_thread(server, [f"lost {n}" for n in range(50)])
        # Activity is read outside any transaction: within one it is a frozen snapshot.
        with psycopg.connect(postgres_server.base_url, autocommit=True) as killer:
            victim = _blocked_backend(killer, "UPDATE meta")
            killer.execute("SELECT pg_terminate_backend(%s)", (victim,))
        thread.join(30)
        admin.rollback()
        (answer,) = answers
        assert answer["error"]["code"] == -32603
        assert "failed in the store and changed nothing" in answer["error"]["message"]
        connection = server.connect()
        assert connection.call("memory/timeline", {"limit": 0})["records"] == []
        connection.call("memory/remember", {"records": [{"content": "after the fault"}]})
        contents = [r["content"] for r in connection.call("memory/timeline")["records"]]
    assert contents == ["after the fault"]


def test_a_statement_timeout_fails_the_call_and_writes_nothing(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.fresh_url()
    timed = url + "&options=-c%20statement_timeout%3D300"
    with (
        A2MServer(db=timed) as server,
        psycopg.connect(url.replace("schema=", "options=-csearch_path%3D")) as admin,
    ):
        admin.execute("SELECT value FROM meta WHERE key = 'event_head' FOR UPDATE")
        thread, answers = _remember_in_thread(server, ["too slow"])
        thread.join(30)
        admin.rollback()
        (answer,) = answers
        assert answer["error"]["code"] == -32603
        assert "cancel" in answer["error"]["message"]
        connection = server.connect()
        assert connection.call("memory/timeline")["records"] == []
        connection.call("memory/remember", {"records": [{"content": "in time"}]})
        assert len(connection.call("memory/timeline")["records"]) == 1


def test_the_pool_replaces_connections_the_server_dropped_between_calls(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.fresh_url()
    with A2MServer(db=url) as server:
        connection = server.connect()
        connection.call("memory/remember", {"records": [{"content": "before"}]})
        with psycopg.connect(postgres_server.base_url, autocommit=True) as killer:
            killed = [
                pid
                for (pid,) in killer.execute(
                    "SELECT pid FROM pg_stat_activity "
                    "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'"
                ).fetchall()
            ]
            killer.execute(
                "SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", [killed]
            )
            # Dropped means gone: the pool lends a quiet connection without a round trip,
            # and one whose backend has exited has its end of file to read.
            deadline = time.monotonic() + 10
            while killer.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", [killed]
            ).fetchone() != (0,):
                assert time.monotonic() < deadline, "the terminated backends did not exit"
                time.sleep(0.01)
        connection.call("memory/remember", {"records": [{"content": "after"}]})
        contents = [r["content"] for r in connection.call("memory/timeline")["records"]]
    assert contents == ["before", "after"]


def test_the_schema_is_versioned_and_a_newer_one_is_refused(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.fresh_url()
    A2MServer(db=url).close()
    plain = url.replace("schema=", "options=-csearch_path%3D")
    with psycopg.connect(plain, autocommit=True) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        assert row is not None
        assert int(row[0]) >= 1
        conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    with pytest.raises(RuntimeError, match="schema version 999, newer than this server"):
        A2MServer(db=url)


@pytest.fixture(autouse=True)
def _postgres_only(store_backend: str) -> None:
    assert store_backend == "postgres"
