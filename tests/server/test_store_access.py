"""When a recall's access counts reach the store, as docs/postgres.md states it for both
stores: buffered by the server that served the recall, and written with its next write,
with its next recall once they are older than the buffer's age limit, or when it closes;
another server on the same store sees them once written, and the serving one at once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from a2m_server import A2MServer
from a2m_server.store import _access


def _accesses(connection: Any, key: str) -> int:
    record = connection.call("memory/fetch", {"key": key})["record"]
    count: int = record["access_count"]
    return count


def test_access_counts_are_written_by_a_write_a_later_recall_or_closing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_backend: str
) -> None:
    monkeypatch.setattr(_access, "FLUSH_SECONDS", 0.2)
    db = tmp_path / "shared.db"  # one schema per path under PostgreSQL
    serving = A2MServer(db=db)
    with A2MServer(db=db) as other:
        reader, writer = serving.connect(), other.connect()
        reader.call("memory/remember", {"records": [{"content": "ada lives in lyon", "key": "k"}]})

        assert reader.call("memory/recall", {"query": "lyon"})["records"]
        assert _accesses(reader, "k") == 1  # the serving server shows its pending counts
        assert _accesses(writer, "k") == 0  # not written yet

        reader.call("memory/remember", {"records": [{"content": "an unrelated note"}]})
        assert _accesses(writer, "k") == 1  # written with the next write

        assert reader.call("memory/recall", {"query": "lyon"})["records"]
        assert _accesses(writer, "k") == 1
        # No timer writes them: only a later access, once the pending counts are old.
        time.sleep(0.3)
        assert _accesses(writer, "k") == 1
        assert reader.call("memory/recall", {"query": "lyon"})["records"]
        assert _accesses(writer, "k") == 3  # both pending recalls, applied by the later one

        assert reader.call("memory/recall", {"query": "lyon"})["records"]
        assert _accesses(writer, "k") == 3
        serving.close()
        assert _accesses(writer, "k") == 4  # closing writes what was pending
