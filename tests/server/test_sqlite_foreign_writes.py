"""Two servers on one SQLite file: each keeps an in-memory vector index, and a commit by
the other must drop it, however the commits interleave with its own writes. The file's
``PRAGMA data_version`` is read once per write, inside the transaction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from a2m import A2MClient
from a2m_server.server import A2MServer
from a2m_server.store.sqlite import SQLiteStore

DIMS = 8


def _vector(n: int) -> list[float]:
    return [1.0 if i == n else 0.0 for i in range(DIMS)]


def _nearest_key(client: A2MClient, vector: list[float]) -> str | None:
    records = client.recall(embedding=vector, limit=1).records
    return records[0].key if records else None


class _CommitBeforeBegin:
    """The writer connection of one store, letting another store commit just before its
    next ``BEGIN IMMEDIATE``: the moment a check made before BEGIN would miss."""

    def __init__(self, conn: Any, commit: Any) -> None:
        self._conn = conn
        self._commit = commit

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "BEGIN IMMEDIATE" and self._commit is not None:
            commit, self._commit = self._commit, None
            commit()
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_a_write_by_another_server_is_seen_by_the_next_search(tmp_path: Path) -> None:
    db = str(tmp_path / "shared.db")
    with (
        A2MServer(db=db) as first,
        A2MServer(db=db) as second,
        A2MClient.in_process(first) as one,
        A2MClient.in_process(second) as two,
    ):
        one.remember([{"content": "first", "key": "k/first", "embedding": _vector(0)}])
        assert _nearest_key(one, _vector(0)) == "k/first"  # the index is loaded now
        two.remember([{"content": "second", "key": "k/second", "embedding": _vector(1)}])
        one.remember([{"content": "third", "key": "k/third", "embedding": _vector(2)}])
        assert _nearest_key(one, _vector(1)) == "k/second"
        assert _nearest_key(one, _vector(2)) == "k/third"


def test_a_commit_just_before_a_write_begins_is_not_missed(tmp_path: Path) -> None:
    db = str(tmp_path / "shared.db")
    with (
        A2MServer(db=db) as first,
        A2MServer(db=db) as second,
        A2MClient.in_process(first) as one,
        A2MClient.in_process(second) as two,
    ):
        one.remember([{"content": "first", "key": "k/first", "embedding": _vector(0)}])
        assert _nearest_key(one, _vector(0)) == "k/first"
        store = first.store
        assert isinstance(store, SQLiteStore)

        def commit() -> None:
            two.remember([{"content": "second", "key": "k/second", "embedding": _vector(1)}])

        store._writer = _CommitBeforeBegin(store._writer, commit)  # type: ignore[assignment]
        one.remember([{"content": "third", "key": "k/third", "embedding": _vector(2)}])
        assert _nearest_key(one, _vector(1)) == "k/second"
        assert _nearest_key(one, _vector(2)) == "k/third"
