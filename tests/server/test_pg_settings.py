"""The session settings docs/postgres.md states: statements time out after 30 s unless the
URL says otherwise (``?options=-c%20statement_timeout%3D5000``), and ``schema=NAME`` puts
the store in that schema, created if missing, so one database holds independent stores."""

from __future__ import annotations

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
