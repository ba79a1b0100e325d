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


def assert_counts_match(peer: object, db: Path, owner: str | None, context: object) -> None:
    """describe's counts equal a full count taken at the same moment. Short-lived records
    expire while the two are read (on a loaded machine a PostgreSQL count takes tens of
    milliseconds), so describe is read between two full counts; when those agree, no
    record expired in between and describe must give the same, else the pair is retaken."""
    for _ in range(5):
        before = full_counts(db, owner)
        seen = described(peer, owner)
        after = full_counts(db, owner)
        if before == after:
            assert seen == after, context
            return
    pytest.fail(f"records kept expiring while the counts were read: {context}")


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
                assert_counts_match(peer, db, viewer, (step, action, viewer))
        time.sleep(1.05)  # the short-lived records have expired, though none is purged yet
        for viewer in OWNERS:
            assert_counts_match(peer, db, viewer, ("expired", viewer))
        peer.call("memory/remember", {"records": [{"content": "purges the expired"}]})
        for viewer in OWNERS:
            assert_counts_match(peer, db, viewer, ("purged", viewer))


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


def test_an_import_counts_only_the_records_it_adds(tmp_path: Path, store_backend: str) -> None:
    """Records restored from a dump are counted as they go in; a record the store already
    holds is skipped by the import, and so is its count."""
    import io

    from a2m_server.transfer import export_records, import_records

    source, target = tmp_path / "source.db", tmp_path / "target.db"
    with A2MServer(ServerConfig(tiers=TIERS), db=source) as server:
        peer = server.connect()
        for index, owner in enumerate(OWNERS):
            who = {} if owner is None else {"owner": owner}
            records = [{"content": f"n {index} {i}", "tier": TIERS[i % 4].name} for i in range(3)]
            peer.call("memory/remember", {"records": records, **who})
        dump = io.StringIO()
        export_records(server.store, dump)
    with A2MServer(ServerConfig(tiers=TIERS), db=target) as server:
        peer = server.connect()
        peer.call("memory/remember", {"records": [{"content": "already here", "tier": "semantic"}]})
        dump.seek(0)
        assert import_records(server.store, dump) == (9, 9)
        dump.seek(0)
        assert import_records(server.store, dump) == (9, 0)  # every record is there already
        for viewer in OWNERS:
            assert described(peer, viewer) == full_counts(target, viewer), viewer
        assert sum(described(peer, None).values()) == 10


@pytest.mark.sqlite_only("builds a SQLite file of schema version 2")
def test_a_version_2_file_keeps_exact_counts_once_its_insert_trigger_is_gone(
    tmp_path: Path,
) -> None:
    """Schema v3 counts inserts in the store, not by a trigger on every row: a v2 file
    (which counted them by trigger) opens as v3 without that trigger, and its counts stay
    exact through new writes."""
    from a2m_server.store import schema

    db = tmp_path / "v2.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for version in (1, 2):
        for statement in schema._statements(schema._MIGRATIONS[version]):
            conn.execute(statement)
    conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '2')")
    conn.execute(
        "INSERT INTO records (id, content, created_at, updated_at, tier, owner) "
        "VALUES ('old-1', 'old one', 1, 1, 'semantic', NULL), "
        "('old-2', 'old two', 1, 1, 'episodic', 'alice')"
    )
    conn.close()
    with A2MServer(ServerConfig(tiers=TIERS), db=db) as server:
        peer = server.connect()
        peer.call(
            "memory/remember",
            {"records": [{"content": "new", "tier": "episodic"}], "owner": "alice"},
        )
        peer.call("memory/forget", {"ids": ["old-1"]})
        for viewer in OWNERS:
            assert described(peer, viewer) == full_counts(db, viewer), viewer
    conn = sqlite3.connect(db)
    triggers = {
        name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    }
    (version,) = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    conn.close()
    assert "records_count_insert" not in triggers
    assert {"records_count_delete", "records_count_update"} <= triggers
    assert version == str(schema.SCHEMA_VERSION)  # and on up to the current version
