"""Several ``a2m-server serve`` processes on one PostgreSQL database are one logical
server (issue 15): keys, event cursors, tier capacity and promotion hold across them,
subscribers hear writes made anywhere, and a process killed mid-batch leaves every
acknowledged batch whole and no batch in part."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from pg_support import rpc, serve_processes

from a2m_server import A2MServer
from store_backends import PostgresServer


def test_a_key_written_through_one_process_is_replaced_through_the_other(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    url = postgres_server.fresh_url()
    with serve_processes(url, tmp_path) as (one, two):
        first = one.call("memory/remember", {"records": [{"content": "v0", "key": "team/k"}]})
        second = two.call("memory/remember", {"records": [{"content": "v1", "key": "team/k"}]})
        assert second["ids"] == first["ids"]
        (record,) = one.call("memory/timeline", {"key_prefix": "team/k"})["records"]
        assert (record["content"], record["revision"]) == ("v1", 1)


def test_concurrent_keyed_writes_through_two_processes_keep_keys_unique_and_revisions_contiguous(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    url = postgres_server.fresh_url()
    keys = [f"shared/{n}" for n in range(8)]
    rounds = 15
    with serve_processes(url, tmp_path) as processes:
        errors: list[BaseException] = []

        def writer(index: int) -> None:
            process = processes[index % 2]
            with httpx.Client(base_url=f"http://127.0.0.1:{process.port}", timeout=30) as client:
                try:
                    for n in range(rounds):
                        records = [{"content": f"w{index}-{n}", "key": key} for key in keys]
                        rpc(client, "memory/remember", {"records": records})
                except BaseException as exc:
                    errors.append(exc)

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not errors, errors
        records = processes[0].call("memory/timeline", {"key_prefix": "shared", "limit": 0})[
            "records"
        ]
    assert sorted(r["key"] for r in records) == sorted(keys)  # one record per key
    # 4 writers x 15 rounds: revisions 0..59, every one taken, none twice.
    assert {r["revision"] for r in records} == {4 * rounds - 1}


def test_events_read_alternately_through_both_processes_arrive_once_in_order(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    url = postgres_server.fresh_url()
    with serve_processes(url, tmp_path) as processes:
        cursor = processes[0].call("memory/events")["cursor"]
        written: list[str] = []
        seen: list[str] = []
        for n in range(30):
            process = processes[n % 2]
            (record_id,) = process.call("memory/remember", {"records": [{"content": f"e{n}"}]})[
                "ids"
            ]
            written.append(record_id)
            if n % 3 == 2:
                page = processes[(n // 3) % 2].call(
                    "memory/events", {"cursor": cursor, "kinds": ["written"], "limit": 2}
                )
                seen += [event["id"] for event in page["events"]]
                cursor = page["cursor"]
        while True:
            page = processes[len(seen) % 2].call(
                "memory/events", {"cursor": cursor, "kinds": ["written"], "limit": 4}
            )
            seen += [event["id"] for event in page["events"]]
            cursor = page["cursor"]
            if not page.get("more"):
                break
    assert seen == written


def test_tier_capacity_and_promotion_hold_with_concurrent_writers(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    url = postgres_server.fresh_url()
    per_writer = 60
    with serve_processes(url, tmp_path) as processes:

        def write(index: int) -> None:
            process = processes[index % 2]
            with httpx.Client(base_url=f"http://127.0.0.1:{process.port}", timeout=30) as client:
                for n in range(0, per_writer, 10):
                    batch = [
                        {"content": f"p{index}-{m}", "session": "crowded"} for m in range(n, n + 10)
                    ]
                    rpc(client, "memory/remember", {"records": batch})

        threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        working = processes[0].call(
            "memory/timeline", {"tier": "working", "where": {"session": "crowded"}, "limit": 0}
        )["records"]
        everything = processes[1].call(
            "memory/timeline", {"where": {"session": "crowded"}, "limit": 0}
        )["records"]
        assert len(working) == 64  # the working tier's capacity, per session
        assert len(everything) == 4 * per_writer  # spilled to episodic, none lost
        # Earn promotion for ten episodic records, then consolidate through both at once.
        episodic = [r["id"] for r in everything if r["tier"] == "episodic"][:10]
        processes[0].call("memory/reinforce", {"ids": episodic, "amount": 5})
        results: list[dict[str, Any]] = []

        def consolidate(index: int) -> None:
            results.append(processes[index].call("memory/consolidate"))

        threads = [threading.Thread(target=consolidate, args=(i,)) for i in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sum(r["promoted"] for r in results) == 10  # none promoted twice
        semantic = processes[1].call("memory/timeline", {"tier": "semantic", "limit": 0})
        assert sorted(r["id"] for r in semantic["records"]) == sorted(episodic)


def test_a_process_killed_mid_batch_leaves_acknowledged_batches_whole_and_no_partial_batch(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    url = postgres_server.fresh_url()
    acknowledged: list[str] = []
    attempted: list[str] = []
    with serve_processes(url, tmp_path) as (victim, witness):

        def write() -> None:
            with httpx.Client(base_url=f"http://127.0.0.1:{victim.port}", timeout=30) as client:
                for n in range(10_000):
                    session = f"batch-{n}"
                    attempted.append(session)
                    records = [
                        {"content": f"{session} {m}", "session": session} for m in range(256)
                    ]
                    try:
                        rpc(client, "memory/remember", {"records": records, "tier": "episodic"})
                    except (httpx.TransportError, ValueError):
                        return
                    acknowledged.append(session)

        thread = threading.Thread(target=write)
        thread.start()
        deadline = time.monotonic() + 30
        while len(acknowledged) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.037)  # land inside some later batch
        victim.kill()
        thread.join(30)
        assert len(acknowledged) >= 5
        counts = {
            stats["session"]: stats["records"]
            for stats in witness.call("memory/session/list")["sessions"]
        }
    for session in acknowledged:
        assert counts.get(session) == 256, session
    assert set(counts.values()) == {256}  # whole batches only, acknowledged or not
    assert set(counts) <= set(attempted)


def test_subscribers_hear_writes_made_through_another_process(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    url = postgres_server.fresh_url()
    heard: list[dict[str, Any]] = []
    arrived = threading.Event()

    def notify(message: dict[str, Any]) -> None:
        heard.append(message)
        arrived.set()

    with A2MServer(db=url) as local, serve_processes(url, tmp_path, count=1) as (remote,):
        connection = local.connect(notify=notify)
        connection.call("memory/events/subscribe", {"kinds": ["written"]})
        (record_id,) = remote.call("memory/remember", {"records": [{"content": "far away"}]})["ids"]
        assert arrived.wait(10), "no notification arrived"
        connection.close()
    assert heard[0]["params"]["kind"] == "written"
    assert heard[0]["params"]["id"] == record_id


def test_tier_counts_stay_exact_with_two_processes_writing_at_once(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    """describe reads the counts the triggers keep; with four writers on two processes
    (spills, promotions, forgets and upserts among them) they equal a full count."""
    url = postgres_server.fresh_url()
    tiers = ["working", "episodic", "semantic", "procedural"]
    with serve_processes(url, tmp_path) as processes:
        errors: list[BaseException] = []

        def writer(index: int) -> None:
            process = processes[index % 2]
            with httpx.Client(base_url=f"http://127.0.0.1:{process.port}", timeout=30) as client:
                try:
                    for n in range(10):
                        records = [
                            {"content": f"w{index} n{n} m{m}", "tier": tiers[(n + m) % 4],
                             "session": f"s{index % 2}"}
                            for m in range(24)
                        ]  # fmt: skip
                        records.append({"content": f"keyed {n}", "key": f"k/{n % 3}",
                                        "tier": tiers[(index + n) % 4]})  # fmt: skip
                        ids = rpc(client, "memory/remember", {"records": records})["ids"]
                        rpc(client, "memory/forget", {"ids": ids[:3]})
                        rpc(client, "memory/promote", {"ids": ids[3:6], "tier": "procedural"})
                except BaseException as exc:
                    errors.append(exc)

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not errors, errors
        plain = url.replace("schema=", "options=-csearch_path%3D")
        with psycopg.connect(plain) as conn:
            full = dict(conn.execute("SELECT tier, count(*) FROM records GROUP BY tier").fetchall())
        assert 0 < full["working"] <= 2 * 64  # spilled to capacity, per session
        for process in processes:
            described = process.call("memory/describe")["tiers"]
            assert {t["name"]: t["count"] for t in described if t["count"]} == full


@pytest.fixture(autouse=True)
def _postgres_only(store_backend: str) -> None:
    assert store_backend == "postgres"


def test_a_store_opened_while_another_creates_its_schema_opens(
    postgres_server: PostgresServer,
) -> None:
    """Processes deployed together onto a new ``?schema=`` all start: a store waits for
    one creating the schema under the migration lock, then finds it. ``CREATE SCHEMA IF
    NOT EXISTS`` outside that lock, meeting another's uncommitted one, failed with a
    duplicate key once the other committed (about one start in ten, when they raced)."""
    from a2m_server.store._pg_schema import MIGRATION_LOCK
    from a2m_server.store.postgres import PostgresStore

    url = postgres_server.fresh_url()
    schema = url.rsplit("schema=", 1)[1]
    opened: list[BaseException | None] = []

    def open_store() -> None:
        try:
            PostgresStore(url).close()
            opened.append(None)
        except BaseException as exc:
            opened.append(exc)

    with psycopg.connect(postgres_server.base_url) as creating:  # one transaction, held
        creating.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        creating.execute(f'CREATE SCHEMA "{schema}"')  # type: ignore[arg-type]
        thread = threading.Thread(target=open_store)
        thread.start()
        time.sleep(0.5)  # the store is waiting now, on the lock (or on the schema's row)
        assert not opened
    thread.join(timeout=60)  # the block above committed
    assert opened == [None]
