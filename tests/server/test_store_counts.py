"""The per-tier counts describe and capacity checks read are kept by triggers, on both
stores; they must equal a full count after every kind of change (writes, upserts, forget,
promote, spill, expiry, owners and shared tiers), and on PostgreSQL with several server
processes writing at once."""

from __future__ import annotations

import random
import sqlite3
import time
from pathlib import Path

import pytest

from a2m_server import A2MServer
from a2m_server.config import ServerConfig, TierConfig
from store_backends import resolve_db

TIERS = (
    TierConfig("working", kind="working", capacity=5, spill_to="episodic", per_session=True),
    TierConfig("episodic", kind="episodic", capacity=12, spill_to="semantic", promote_to="semantic",
               promote_after=1),
    TierConfig("semantic", kind="semantic", shared=True),
    TierConfig("procedural", kind="procedural", capacity=4),
)  # fmt: skip
OWNERS = ["alice", "bob", None]


def full_counts(db: Path | str, owner: str | None) -> dict[str, int]:
    """Counted the slow way, from the records themselves, in whichever store holds them."""
    now = time.time_ns() // 1_000_000
    scope = "" if owner is None else "AND (owner = ? OR owner IS NULL OR tier = 'semantic')"
    query = (
        "SELECT tier, count(*) FROM records WHERE (expires_at IS NULL OR expires_at > ?) "
        f"{scope} GROUP BY tier"
    )
    params = (now, owner) if owner is not None else (now,)
    where = resolve_db(db)
    if isinstance(where, str) and where.startswith("postgresql://"):
        import psycopg

        plain = where.replace("schema=", "options=-csearch_path%3D")
        with psycopg.connect(plain) as pg:
            return dict(pg.execute(query.replace("?", "%s"), params).fetchall())  # type: ignore[arg-type]
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return dict(conn.execute(query, params).fetchall())
    finally:
        conn.close()


def described(peer: object, owner: str | None) -> dict[str, int]:
    params = {} if owner is None else {"owner": owner}
    result = peer.call("memory/describe", params)  # type: ignore[attr-defined]
    return {t["name"]: t["count"] for t in result["tiers"] if t["count"]}


def test_kept_counts_equal_a_full_count_through_every_kind_of_change(
    tmp_path: Path, store_backend: str
) -> None:
    db = tmp_path / "counts.db"
    rng = random.Random(5)
    with A2MServer(ServerConfig(tiers=TIERS), db=db) as server:
        peer = server.connect()
        for step in range(60):
            action = rng.choice(["write", "write", "write", "forget", "promote", "recall",
                                 "consolidate", "expire", "upsert"])  # fmt: skip
            owner = rng.choice(OWNERS)
            who = {} if owner is None else {"owner": owner}
            if action == "write":
                records = [
                    {
                        "content": f"note {step} {i}",
                        "tier": rng.choice([t.name for t in TIERS]),
                        "session": rng.choice(["s1", "s2", None]),
                    }
                    for i in range(rng.randint(1, 6))
                ]
                peer.call("memory/remember", {"records": records, **who})
            elif action == "upsert":
                peer.call(
                    "memory/remember",
                    {"records": [{"content": f"keyed {step}", "key": f"k/{step % 3}",
                                  "tier": rng.choice(["episodic", "procedural"])}], **who},
                )  # fmt: skip
            elif action == "forget":
                peer.call("memory/forget", {"query": f"note {rng.randint(0, step)}", **who})
            elif action == "promote":
                found = peer.call("memory/timeline", {"tier": "episodic", "limit": 2, **who})
                ids = [r["id"] for r in found["records"]]
                if ids:
                    peer.call("memory/promote", {"ids": ids, "tier": "procedural", **who})
            elif action == "recall":
                peer.call("memory/recall", {"query": "note", "limit": 3, **who})
            elif action == "consolidate":
                peer.call("memory/consolidate", {})
            else:
                peer.call(
                    "memory/remember",
                    {"records": [{"content": "brief", "tier": "episodic",
                                  "metadata": {"ttl_s": 1}}], **who},
                )  # fmt: skip
            for viewer in OWNERS:
                assert described(peer, viewer) == full_counts(db, viewer), (step, action, viewer)
        time.sleep(1.05)  # the short-lived records have expired, though none is purged yet
        for viewer in OWNERS:
            assert described(peer, viewer) == full_counts(db, viewer), ("expired", viewer)
        peer.call("memory/remember", {"records": [{"content": "purges the expired"}]})
        for viewer in OWNERS:
            assert described(peer, viewer) == full_counts(db, viewer), ("purged", viewer)


@pytest.mark.sqlite_only("opens a SQLite file of schema version 1")
def test_a_version_1_file_gets_counts_on_opening(tmp_path: Path) -> None:
    import shutil

    db = tmp_path / "old.db"
    shutil.copy(Path(__file__).parent / "data" / "store-v1.db", db)
    with A2MServer(db=db) as server:
        peer = server.connect()
        for viewer in ("alice", "bob", None):
            assert described(peer, viewer) == full_counts(db, viewer)
        assert sum(described(peer, None).values()) == 7
