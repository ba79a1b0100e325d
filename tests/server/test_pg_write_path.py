"""What the PostgreSQL write transaction does besides the caller's writes, kept exact when
several processes share the database: the event log keeps exactly the retained events
(each commit deletes what its own retention drops, from the oldest event still held), and
records whose time ran out are purged by the next write of any process, with an
``expired`` event, though a transaction skips the purge when nothing is due."""

from __future__ import annotations

import time

from a2m_server import A2MServer
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


def test_the_next_write_of_any_process_purges_what_expired(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.fresh_url()
    with A2MServer(db=url) as one, A2MServer(db=url) as two:
        first, second = one.connect(), two.connect()
        cursor = second.call("memory/events", {})["cursor"]
        (brief,) = first.call(
            "memory/remember", {"records": [{"content": "brief", "metadata": {"ttl_s": 1}}]}
        )["ids"]
        (lasting,) = first.call("memory/remember", {"records": [{"content": "lasting"}]})["ids"]
        # Not due yet: a write purges nothing.
        second.call("memory/remember", {"records": [{"content": "early"}]})
        assert _stored(two) == 3
        time.sleep(1.05)
        second.call("memory/remember", {"records": [{"content": "late"}]})
        assert _stored(one) == 3
        events = second.call("memory/events", {"cursor": cursor})["events"]
        expired = [e for e in events if e["kind"] == "expired"]
        assert len(expired) == 1
        assert brief in str(expired[0])
        assert lasting not in str(expired[0])


def _stored(server: A2MServer) -> int:
    """Records in the table, expired or not (reads hide the expired ones either way)."""
    store = server.store
    assert isinstance(store, PostgresStore)
    with store._connection() as conn:
        row = conn.execute("SELECT count(*) FROM records").fetchone()
    assert row is not None
    return int(row[0])
