"""Two edges of vector search docs/postgres.md states: with ``--vector-index hnsw`` a
vector wider than HNSW's 2000 dimensions is still stored and searched, exactly; and a
vector float32 cannot hold is stored verbatim but never ranks, as on SQLite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from a2m_server import A2MServer
from a2m_server.store import open_store
from store_backends import PostgresServer


def _unit(width: int, at: int) -> list[float]:
    vector = [0.0] * width
    vector[at] = 1.0
    return vector


def test_vectors_wider_than_hnsw_takes_are_searched_exactly(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.fresh_url()
    width = 2001
    with A2MServer(db=url, vector_index="hnsw") as server:
        peer = server.connect()
        records = [{"content": f"axis {i}", "embedding": _unit(width, i)} for i in range(5)]
        peer.call("memory/remember", {"records": records})
        probe = _unit(width, 3)
        probe[4] = 0.5
        found = peer.call("memory/recall", {"embedding": probe, "rank": "similarity", "limit": 2})[
            "records"
        ]
        assert [r["content"] for r in found] == ["axis 3", "axis 4"]


def _beyond_float32(server: A2MServer) -> tuple[list[str], Any]:
    peer = server.connect()
    huge = [1e39, 1.0]  # finite in float64, infinite in float32
    peer.call(
        "memory/remember",
        {
            "records": [
                {"content": "huge", "embedding": huge},
                {"content": "fine", "embedding": [1.0, 1.0]},
            ]
        },
    )
    found = peer.call("memory/recall", {"embedding": [1.0, 1.0], "limit": 10})["records"]
    stored = peer.call("memory/timeline", {"embeddings": True})["records"]
    return [r["content"] for r in found], {r["content"]: r["embedding"] for r in stored}


def test_a_vector_float32_cannot_hold_is_kept_but_never_ranks_on_either_store(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    with A2MServer(db=postgres_server.fresh_url()) as on_postgres:
        pg_found, pg_stored = _beyond_float32(on_postgres)
    sqlite = open_store(str(tmp_path / "huge.db"))
    try:
        with A2MServer(store=sqlite) as on_sqlite:
            sqlite_found, sqlite_stored = _beyond_float32(on_sqlite)
    finally:
        sqlite.close()
    assert pg_found == sqlite_found == ["fine"]
    assert pg_stored == sqlite_stored == {"huge": [1e39, 1.0], "fine": [1.0, 1.0]}
