"""Reads never wait for writers, as docs/postgres.md states for PostgreSQL (snapshots on
a connection pool) and as WAL gives SQLite: while one server holds its store's write
transaction open, another server on the same store answers recalls, timelines and fetches
from what was committed before, and sees the write once it commits. On both stores."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from a2m_server import A2MServer

WAIT_S = 20.0


def test_reads_are_answered_while_another_server_holds_the_write(
    tmp_path: Path, store_backend: str
) -> None:
    db = tmp_path / "shared.db"  # one schema per path under PostgreSQL
    with A2MServer(db=db) as writer_server, A2MServer(db=db) as reader_server:
        writer, reader = writer_server.connect(), reader_server.connect()
        writer.call("memory/remember", {"records": [{"content": "committed", "key": "k/one"}]})
        reader.call("memory/timeline", {})  # the reader's connection is open and warm

        holding, release = threading.Event(), threading.Event()
        failures: list[BaseException] = []

        def hold_the_write() -> None:
            try:
                store: Any = writer_server.store
                with store.writing():
                    holding.set()
                    release.wait(WAIT_S)
            except BaseException as exc:  # reported by the test below
                failures.append(exc)
                holding.set()

        holder = threading.Thread(target=hold_the_write)
        holder.start()
        try:
            assert holding.wait(WAIT_S)
            assert failures == []
            answers: dict[str, Any] = {}

            def read() -> None:
                answers["timeline"] = reader.call("memory/timeline", {})["records"]
                answers["fetch"] = reader.call("memory/fetch", {"key": "k/one"})["record"]
                answers["recall"] = reader.call("memory/recall", {"query": "committed"})

            reading = threading.Thread(target=read)
            reading.start()
            reading.join(WAIT_S)
            assert not reading.is_alive(), "a read waited for the writer"
            assert not release.is_set()  # the write was held all along
            assert [r["content"] for r in answers["timeline"]] == ["committed"]
            assert answers["fetch"]["content"] == "committed"
            assert [r["key"] for r in answers["recall"]["records"]] == ["k/one"]
        finally:
            release.set()
            holder.join(WAIT_S)
        assert failures == []
        writer.call("memory/remember", {"records": [{"content": "later", "key": "k/two"}]})
        assert reader.call("memory/fetch", {"key": "k/two"})["record"]["content"] == "later"
