"""The PostgreSQL event log keeps exactly the retained events when several processes on one
database keep different amounts: each commit deletes what its own retention drops, from
the oldest event still held (not just the events its own writes pushed out)."""

from __future__ import annotations

from a2m_server.store.postgres import PostgresStore
from store_backends import PostgresServer


def _append(store: PostgresStore, count: int = 1) -> None:
    with store.writing() as writer:
        for _ in range(count):
            writer.append_event("written", 0, {"id": "r"}, None, None)


def _bounds(store: PostgresStore) -> tuple[int, int]:
    with store.reading() as reader:
        return reader.event_bounds()


def test_each_commit_keeps_exactly_its_retention_whoever_wrote_before(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.fresh_url()
    keeps_ten = PostgresStore(url, event_retention=10)
    keeps_three = PostgresStore(url, event_retention=3)
    try:
        _append(keeps_ten, 15)
        assert _bounds(keeps_ten) == (6, 15)
        # Drops 6..13, not only the one event its own write pushed past three.
        _append(keeps_three)
        assert _bounds(keeps_three) == (14, 16)
        # A longer retention deletes nothing the shorter one already did, nor restores it.
        _append(keeps_ten)
        assert _bounds(keeps_ten) == (14, 17)
        _append(keeps_three, 2)
        assert _bounds(keeps_three) == (17, 19)
        # A transaction that appends nothing deletes nothing.
        with keeps_three.writing():
            pass
        assert _bounds(keeps_ten) == (17, 19)
    finally:
        keeps_ten.close()
        keeps_three.close()
