"""Writes ``store-v1.db``: a store file as release 0.1.0 (schema version 1) leaves it, for
the migration test. Run it against that release's sources, not the current ones:

    git archive v0.1.0-or-commit packages/server/src packages/types/src | tar -x -C /tmp/v1
    PYTHONPATH=/tmp/v1/packages/server/src:/tmp/v1/packages/types/src \\
        uv run python tests/server/data/make_v1_store.py tests/server/data/store-v1.db

Every kind of content the index has to carry is in it: English inflections, accented
Latin, Cyrillic, CJK, keys, owners, tiers, metadata, vectors, a forgotten record."""

from __future__ import annotations

import sys
from pathlib import Path

from a2m_server import A2MServer
from a2m_server.store.schema import SCHEMA_VERSION

RECORDS = [
    {"content": "The production deploy key rotates every 90 days", "tier": "semantic",
     "key": "ops/deploy-key", "metadata": {"tags": ["ops"]}},
    {"content": "Maya is allergic to peanuts and shellfish", "tier": "semantic",
     "owner": "alice", "metadata": {"topic": "health"}},
    {"content": "Café crème costs 3,50 € à la gare de Lyon", "tier": "episodic",
     "session": "s1"},
    {"content": "Сервер базы данных перезагружается каждую ночь", "tier": "episodic",
     "owner": "bob"},
    {"content": "東京のオフィスは月曜日に休みです", "tier": "episodic"},
    {"content": "We bought four new GPUs for the training cluster", "tier": "working",
     "session": "s1", "embedding": [0.1, 0.2, 0.3]},
    {"content": "The staging database timestamps are stored in UTC", "tier": "procedural",
     "embedding": [0.3, 0.2, 0.1]},
    {"content": "Forget me: this record is deleted before the file is kept", "key": "tmp/gone"},
]  # fmt: skip


def main() -> None:
    assert SCHEMA_VERSION == 1, "run this against the release that wrote schema version 1"
    path = Path(sys.argv[1])
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    server = A2MServer(db=path)
    with server:
        peer = server.connect()
        peer.call("memory/remember", {"records": RECORDS})
        peer.call("memory/forget", {"key_prefix": "tmp"})
    print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
