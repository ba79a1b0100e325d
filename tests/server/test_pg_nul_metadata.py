"""Metadata holding U+0000 on PostgreSQL: jsonb cannot hold NUL, and a store of schema
version 2 kept each string's jsonb copy without it ("a\\u0000b" equal to "ab" in a
filter). Opening such a store rewrites the copies of just the rows holding a NUL, after
which its filters match as the client's matching does."""

from __future__ import annotations

import itertools
from typing import Any

import psycopg

from a2m_server import A2MServer
from a2m_server.store._pg_schema import SCHEMA_VERSION
from a2m_types.filters import matches
from store_backends import PostgresServer

VALUES: list[Any] = ["a\x00b", "ab", "a", "a\x00", "\x00", "", "a\\u0000", "a\\\x00", 7]
METADATA: list[dict[str, Any]] = [
    *({"v": v, "deep": {"v": [v]}} for v in VALUES),
    {"k\x00": 1},
    {"k": 1},
]


def _old_copy(value: Any) -> Any:
    """Metadata as schema version 2 kept it in jsonb: every NUL dropped."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, list):
        return [_old_copy(item) for item in value]
    if isinstance(value, dict):
        return {_old_copy(k): _old_copy(v) for k, v in value.items()}
    return value


def _wheres() -> list[dict[str, Any]]:
    wheres: list[dict[str, Any]] = [{"k": 1}, {"k\x00": 1}, {"k": {"$exists": True}}]
    for operand, op in itertools.product(
        [v for v in VALUES if isinstance(v, str)], ["$eq", "$ne", "$gt", "$lte"]
    ):
        wheres.append({"v": {op: operand}})
    return wheres


def _mismatches(server: A2MServer) -> list[dict[str, Any]]:
    with server.connect() as connection:
        stored = connection.call("memory/timeline", {})["records"]
        wrong = []
        for where in _wheres():
            expected = {r["id"] for r in stored if matches(where, r)}
            found = connection.call("memory/timeline", {"where": where})["records"]
            if {r["id"] for r in found} != expected:
                wrong.append(where)
        return wrong


def test_a_version_2_store_is_rewritten_to_compare_nul_exactly(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.fresh_url()
    with A2MServer(db=url) as server, server.connect() as connection:
        records = [{"content": f"r{n}", "metadata": m} for n, m in enumerate(METADATA)]
        connection.call("memory/remember", {"records": records})
        assert _mismatches(server) == []
    with postgres_server.sql(url) as conn:
        with conn.transaction():
            for n, metadata in enumerate(METADATA):
                conn.execute(
                    "UPDATE records SET meta = %s::jsonb WHERE content = %s",
                    (psycopg.types.json.Jsonb(_old_copy(metadata)), f"r{n}"),
                )
            conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
        # The old copy confuses "a\u0000b" with "ab" (and the NUL key with "k").
        rows = conn.execute("SELECT count(*) FROM records WHERE meta ->> 'v' = 'ab'").fetchone()
        assert rows == (2,)
    with A2MServer(db=url) as server:
        assert _mismatches(server) == []
    with postgres_server.sql(url) as conn:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        assert version == (str(SCHEMA_VERSION),)  # on up to the current version
        rows = conn.execute("SELECT count(*) FROM records WHERE meta ->> 'v' = 'ab'").fetchone()
        assert rows == (1,)
