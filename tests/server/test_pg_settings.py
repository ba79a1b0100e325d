"""The session settings docs/postgres.md states: statements time out after 30 s unless the
URL says otherwise (``?options=-c%20statement_timeout%3D5000``), and ``schema=NAME`` puts
the store in that schema, created if missing, so one database holds independent stores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import psycopg

from a2m_server import A2MServer
from store_backends import PostgresServer


def _setting(server: A2MServer, name: str) -> str:
    store: Any = server.store
    with store._connection() as conn:
        value: str = conn.execute(f"SHOW {name}").fetchone()[0]
        return value


def test_statements_time_out_after_30_s_unless_the_url_says(
    postgres_server: PostgresServer,
) -> None:
    with A2MServer(db=postgres_server.fresh_url()) as server:
        assert _setting(server, "statement_timeout") == "30s"
    url = postgres_server.fresh_url() + "&options=-c%20statement_timeout%3D5000"
    with A2MServer(db=url) as server:
        assert _setting(server, "statement_timeout") == "5s"
        server.connect().call("memory/remember", {"records": [{"content": "still works"}]})


def test_a_schema_parameter_keeps_stores_apart(postgres_server: PostgresServer) -> None:
    first, second = postgres_server.fresh_url(), postgres_server.fresh_url()
    with A2MServer(db=first) as one, A2MServer(db=second) as two:
        one.connect().call("memory/remember", {"records": [{"content": "in the first"}]})
        assert two.connect().call("memory/timeline", {})["records"] == []
        assert len(one.connect().call("memory/timeline", {})["records"]) == 1
    schemas = [url.rsplit("schema=", 1)[1] for url in (first, second)]
    with psycopg.connect(postgres_server.base_url) as conn:
        found = conn.execute(
            "SELECT schema_name FROM information_schema.schemata WHERE schema_name = ANY(%s)",
            (schemas,),
        ).fetchall()
    assert sorted(row[0] for row in found) == sorted(schemas)


def test_a2m_db_may_name_a_postgresql_database(postgres_server: PostgresServer) -> None:
    """``$A2M_DB`` takes a libpq URL as ``--db`` does."""
    url = postgres_server.fresh_url()
    record = {"content": "through the environment", "key": "env/k"}
    remember = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "memory/remember",
        "params": {"records": [record]},
    }
    env = {name: value for name, value in os.environ.items() if name != "A2M_DB"}
    done = subprocess.run(
        [sys.executable, "-m", "a2m_server", "stdio"],
        input=json.dumps(remember) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "A2M_DB": url},
    )
    assert done.returncode == 0, done.stderr
    assert "result" in json.loads(done.stdout.splitlines()[0])
    with A2MServer(db=url) as server:
        fetched = server.connect().call("memory/fetch", {"key": "env/k"})["record"]
    assert fetched["content"] == record["content"]
