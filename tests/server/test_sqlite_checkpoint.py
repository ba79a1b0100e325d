"""The SQLite store checkpoints its write-ahead log on a thread of its own, so no write
waits for the copy back into the database file; the thread ends when the store closes,
and what was written reads back from the file alone."""

from __future__ import annotations

import time
from pathlib import Path

from a2m_server import A2MServer


def test_the_log_is_checkpointed_beside_the_writes(tmp_path: Path) -> None:
    db = tmp_path / "a2m.db"
    server = A2MServer(db=db)
    connection = server.connect()
    vector = [0.5] * 384
    records = [{"content": f"note {i}", "embedding": vector} for i in range(20)]
    before = db.stat().st_size
    ids = connection.call("memory/remember", {"records": records})["ids"]
    checkpointer = server.store._checkpointer  # type: ignore[attr-defined]
    assert checkpointer is not None
    # Far below the writer's own threshold: only the thread copies pages into the file.
    deadline = time.monotonic() + 10
    while db.stat().st_size <= before + 20 * 3072 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert db.stat().st_size > before + 20 * 3072
    thread = checkpointer._thread
    assert thread is not None
    assert thread.is_alive()
    server.close()
    assert not thread.is_alive()
    # Closing removed the log; the file holds every record.
    assert not Path(f"{db}-wal").exists()
    reopened = A2MServer(db=db)
    try:
        fetched = reopened.connect().call("memory/timeline", {"limit": 100})["records"]
        assert sorted(r["id"] for r in fetched) == sorted(ids)
    finally:
        reopened.close()


def test_a_store_that_never_wrote_starts_no_thread(tmp_path: Path) -> None:
    server = A2MServer(db=tmp_path / "a2m.db")
    server.connect().call("memory/describe")
    checkpointer = server.store._checkpointer  # type: ignore[attr-defined]
    server.close()
    assert checkpointer is not None
    assert checkpointer._thread is None


def test_an_in_memory_store_has_no_checkpointer() -> None:
    server = A2MServer()
    try:
        assert server.store._checkpointer is None  # type: ignore[attr-defined]
    finally:
        server.close()
