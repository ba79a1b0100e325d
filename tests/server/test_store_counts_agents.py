"""The per-(owner, agent, framework, tier) counts the memory page's agents index reads
(schema v5) are kept by both stores in the writing transaction: they must equal a count
taken the slow way, from the records themselves, for each of two principals and for no
principal, after writes, key replacements that change a record's agent, deletes, tier
moves (promote, spill), expiry before and after its purge, and an import; and a file of
schema version 4 gets them on opening."""

from __future__ import annotations

import io
import json
import random
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from a2m_server import A2MServer
from a2m_server.config import ServerConfig, TierConfig
from a2m_server.store import _pg_schema
from a2m_server.store._agents import agent_of, framework_of
from store_backends import PostgresServer, resolve_db

TIERS = (
    TierConfig("working", kind="working", capacity=4, spill_to="episodic", per_session=True),
    TierConfig("episodic", kind="episodic", capacity=10, spill_to="semantic", promote_to="semantic",
               promote_after=1),
    TierConfig("semantic", kind="semantic", shared=True),
)  # fmt: skip
PRINCIPALS = ("alice", "bob")
# Names no store can count as they are (a NUL, or the text \u0000) stand for no name.
AGENTS: tuple[Any, ...] = ("planner", "coder", "", None, 7, "a\x00b", "back\\u0000slash", "é😀")
FRAMEWORKS: tuple[Any, ...] = ("crewai", "langgraph", "", None, ["x"], "c\x00", "\ue000")

Counts = dict[tuple[str, str, str | None], int]


def _records(db: Path | str) -> list[tuple[str | None, str | None, str | None, int | None]]:
    """(owner, tier, metadata JSON, expires_at) of every row, from whichever store."""
    query = "SELECT owner, tier, metadata, expires_at FROM records"
    where = resolve_db(db)
    if isinstance(where, str) and where.startswith("postgresql://"):
        import psycopg

        plain = where.replace("schema=", "options=-csearch_path%3D")
        from a2m_server.store._pg_adapt import configure

        with psycopg.connect(plain) as pg:
            configure(pg)  # text read back as the store wrote it (NUL and U+E000 unescaped)
            return list(pg.execute(query).fetchall())  # type: ignore[arg-type]
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return list(conn.execute(query).fetchall())
    finally:
        conn.close()


def slow_counts(db: Path | str, viewer: str | None) -> Counts:
    """Counted from the records, with the read rules of ``memory/recall``: a principal
    sees its own records, unowned ones and the shared tier; no principal sees all."""
    now = time.time_ns() // 1_000_000
    counts: Counter[tuple[str, str, str | None]] = Counter()
    for owner, tier, metadata, expires_at in _records(db):
        if expires_at is not None and expires_at <= now:
            continue
        if viewer is not None and owner not in (viewer, None) and tier != "semantic":
            continue
        meta = None if metadata is None else json.loads(metadata)
        counts[(agent_of(meta, owner), framework_of(meta), tier)] += 1
    return dict(counts)


def kept_counts(server: A2MServer, viewer: str | None) -> Counts:
    proto = server.protocol
    with proto.store.reading() as reader:
        found = reader.count_by_agent(proto.read_scope(viewer))
    assert all(c.n > 0 for c in found)
    assert len({(c.agent, c.framework, c.tier) for c in found}) == len(found)
    return {(c.agent, c.framework, c.tier): c.n for c in found}


def assert_exact(server: A2MServer, db: Path | str, context: object) -> None:
    """The kept counts equal slow ones for each viewer; read between two slow counts, so a
    record expiring meanwhile retakes the pair rather than failing."""
    for viewer in (*PRINCIPALS, None):
        for _ in range(5):
            before = slow_counts(db, viewer)
            seen = kept_counts(server, viewer)
            after = slow_counts(db, viewer)
            if before == after:
                assert seen == after, (context, viewer)
                break
        else:
            pytest.fail(f"records kept expiring while the counts were read: {context}")


def _metadata(rng: random.Random) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    agent = rng.choice(AGENTS)
    if agent is not None:
        metadata["source_agent"] = agent
    if rng.random() < 0.3:
        metadata["observation_agent"] = rng.choice(["tenant-a", "", 3])
    framework = rng.choice(FRAMEWORKS)
    if framework is not None:
        metadata["source_framework"] = framework
    return metadata


def test_agent_counts_are_exact_through_every_kind_of_change(
    tmp_path: Path, store_backend: str
) -> None:
    db = tmp_path / "agents.db"
    rng = random.Random(26)
    with A2MServer(ServerConfig(tiers=TIERS), db=db) as server:
        # Each principal's own connection, and one acting for no principal.
        peers = {p: server.connect(principal=p) for p in PRINCIPALS}
        admin = server.connect()
        for step in range(50):
            action = rng.choice(["write", "write", "write", "upsert", "forget", "promote",
                                 "consolidate", "expire", "unowned"])  # fmt: skip
            who = rng.choice(PRINCIPALS)
            peer = peers[who]
            if action == "write":
                records = [
                    {
                        "content": f"note {step} {i}",
                        "tier": rng.choice([t.name for t in TIERS]),
                        "session": rng.choice(["s1", "s2", None]),
                        "metadata": _metadata(rng),
                    }
                    for i in range(rng.randint(1, 6))
                ]
                peer.call("memory/remember", {"records": records})
            elif action == "upsert":
                # The same key again: the record is replaced in place, its agent,
                # framework and tier may all change.
                peer.call(
                    "memory/remember",
                    {"records": [{"content": f"keyed {step}", "key": f"k/{step % 2}",
                                  "tier": rng.choice(["episodic", "semantic"]),
                                  "metadata": _metadata(rng)}]},
                )  # fmt: skip
            elif action == "forget":
                peer.call("memory/forget", {"query": f"note {rng.randint(0, step)}"})
            elif action == "promote":
                found = peer.call("memory/timeline", {"tier": "episodic", "limit": 2})
                owned = [r["id"] for r in found["records"] if r.get("owner") == who]
                if owned:
                    peer.call("memory/promote", {"ids": owned, "tier": "semantic"})
            elif action == "consolidate":
                admin.call("memory/consolidate", {})
            elif action == "unowned":
                admin.call(
                    "memory/remember",
                    {"records": [{"content": f"for all {step}", "tier": "episodic",
                                  "metadata": _metadata(rng)}]},
                )  # fmt: skip
            else:
                peer.call(
                    "memory/remember",
                    {"records": [{"content": "brief", "tier": "episodic",
                                  "metadata": {"ttl_s": 1, **_metadata(rng)}}]},
                )  # fmt: skip
            assert_exact(server, db, (step, action, who))
        assert kept_counts(server, "alice") != kept_counts(server, "bob")
        time.sleep(1.05)  # the short-lived records have expired, none purged yet
        assert_exact(server, db, "expired")
        admin.call("memory/remember", {"records": [{"content": "purges the expired"}]})
        assert_exact(server, db, "purged")


def test_an_import_counts_what_it_adds(tmp_path: Path, store_backend: str) -> None:
    from a2m_server.transfer import export_records, import_records

    source, target = tmp_path / "source.db", tmp_path / "target.db"
    with A2MServer(ServerConfig(tiers=TIERS), db=source) as server:
        for owner in PRINCIPALS:
            records = [
                {"content": f"n {owner} {i}", "tier": TIERS[i % 3].name,
                 "metadata": {"source_agent": AGENTS[i % 3], "source_framework": "agno"}}
                for i in range(4)
            ]  # fmt: skip
            server.connect(principal=owner).call("memory/remember", {"records": records})
        dump = io.StringIO()
        export_records(server.store, dump)
    with A2MServer(ServerConfig(tiers=TIERS), db=target) as server:
        server.connect(principal="bob").call(
            "memory/remember", {"records": [{"content": "here before", "tier": "semantic"}]}
        )
        dump.seek(0)
        assert import_records(server.store, dump) == (8, 8)
        dump.seek(0)
        assert import_records(server.store, dump) == (8, 0)  # nothing added twice
        assert_exact(server, target, "imported")
        assert kept_counts(server, "alice")[("planner", "agno", "working")] == 2
        assert sum(kept_counts(server, None).values()) == 9


@pytest.mark.sqlite_only("builds a SQLite file of schema version 4")
def test_a_version_4_file_gets_agent_counts_on_opening(tmp_path: Path) -> None:
    from a2m_server.store import schema

    db = tmp_path / "v4.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for version in range(1, 5):
        for statement in schema._statements(schema._MIGRATIONS[version]):
            conn.execute(statement)
    conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '4')")
    rows = [
        ("a", "alice", "episodic", {"source_agent": "planner", "source_framework": "crewai"}),
        ("b", "alice", "episodic", {"source_agent": "planner", "source_framework": "crewai"}),
        ("c", "bob", "semantic", {"observation_agent": "tenant", "source_framework": 5}),
        ("d", None, None, None),
        ("e", "bob", "episodic", {"source_agent": ""}),
    ]
    conn.executemany(
        "INSERT INTO records (id, content, created_at, updated_at, tier, owner, metadata) "
        "VALUES (?, 'old', 1, 1, ?, ?, ?)",
        [(i, tier, owner, None if m is None else json.dumps(m)) for i, owner, tier, m in rows],
    )
    conn.close()
    with A2MServer(ServerConfig(tiers=TIERS), db=db) as server:
        assert kept_counts(server, None) == {
            ("planner", "crewai", "episodic"): 2,
            ("tenant", "", "semantic"): 1,
            ("", "", None): 1,
            ("bob", "", "episodic"): 1,
        }
        assert kept_counts(server, "alice") == {
            ("planner", "crewai", "episodic"): 2,
            ("tenant", "", "semantic"): 1,
            ("", "", None): 1,
        }
        peer = server.connect()
        peer.call("memory/forget", {"ids": ["a", "e"]})
        peer.call(
            "memory/remember",
            {"records": [{"content": "new", "tier": "episodic", "metadata": {"source_agent": "x"}}],
             "owner": "bob"},
        )  # fmt: skip
        assert_exact(server, db, "after migration")
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("5",)
    conn.close()


def test_a_version_4_postgresql_schema_gets_agent_counts_on_opening(
    postgres_server: PostgresServer,
) -> None:
    """A store migrated before version 5 (its counts table and triggers taken away here,
    record_counts' own row trigger put back as version 2 made it) is counted on opening,
    and counts exactly after."""
    import psycopg

    url = postgres_server.fresh_url()
    plain = url.replace("schema=", "options=-csearch_path%3D")
    with A2MServer(ServerConfig(tiers=TIERS), db=url) as server:
        for owner in PRINCIPALS:
            records = [
                {"content": f"{owner} {i}", "tier": TIERS[i % 3].name,
                 "metadata": {"source_agent": AGENTS[i % 4], "source_framework": "agno"}}
                for i in range(6)
            ]  # fmt: skip
            server.connect(principal=owner).call("memory/remember", {"records": records})
        expected = {viewer: kept_counts(server, viewer) for viewer in (*PRINCIPALS, None)}
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute("DROP TABLE agent_counts")
        for trigger in ("records_agents_added", "records_agents_removed", "records_count_moved"):
            conn.execute(f"DROP TRIGGER {trigger} ON records")  # type: ignore[arg-type]
        for function in ("a2m_agents_added", "a2m_agents_removed", "a2m_record_moved"):
            conn.execute(f"DROP FUNCTION {function}")  # type: ignore[arg-type]
        # record_counts' row trigger as version 2 made it
        for statement in _pg_schema._V2:
            if "a2m_record_moved()" in statement:
                conn.execute(statement)  # type: ignore[arg-type]
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    with A2MServer(ServerConfig(tiers=TIERS), db=url) as server:
        assert {v: kept_counts(server, v) for v in (*PRINCIPALS, None)} == expected
        peer = server.connect(principal="alice")
        found = peer.call("memory/timeline", {"tier": "episodic", "limit": 3})["records"]
        peer.call("memory/promote", {"ids": [r["id"] for r in found], "tier": "semantic"})
        assert_exact(server, url, "after migration")
        tiers = peer.call("memory/describe")["tiers"]
        assert sum(t["count"] for t in tiers) == sum(kept_counts(server, "alice").values())
