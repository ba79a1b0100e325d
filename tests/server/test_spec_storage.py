"""Storage (issue 2): everything survives a restart, a batch is atomic, one file store takes
concurrent writers and readers, and dropped records are really gone from the file."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spec_support import (
    InProcessPeer,
    Peer,
    PeerFactory,
    RpcFailure,
    json_identical,
    rpc_error,
    timeline_ids,
    uid,
)

from a2m_server import A2MServer, LimitsConfig, ServerConfig, TierConfig

VOLATILE = ("accessed_at", "access_count")


def _stable(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in records]


@contextlib.contextmanager
def _life(directory: Path) -> Iterator[PeerFactory]:
    """One run of a server: everything it started is stopped on leaving the block."""
    factory = PeerFactory(directory)
    try:
        yield factory
    finally:
        factory.close()


@contextlib.contextmanager
def _inspect(path: str) -> Iterator[sqlite3.Connection]:
    """The database file opened read-only, beside the running server."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        yield conn
    finally:
        conn.close()


# --- persistence -----------------------------------------------------------------------------


@pytest.mark.spec("3.6")
def test_everything_survives_a_restart(binding: str, tmp_path: Path) -> None:
    """Write, stop, start again on the same file: records, metadata, keys, revisions,
    vectors, sessions and the events cursor all survive."""
    db = str(tmp_path / "persist.db")
    tag = uid("tag")
    key = f"{uid('persist')}/fact"
    session = uid("session")
    with _life(tmp_path) as first_life:
        peer = first_life(binding, db=db)
        before_writes = peer.events_head()
        peer.remember(
            {"content": "persisted one", "metadata": {"tag": tag, "nested": {"a": [1, None]}}},
            {
                "content": "persisted two",
                "key": key,
                "embedding": [0.1, 0.2, 0.3],
                "metadata": {"tag": tag},
            },
            session=session,
        )
        peer.remember(
            {
                "content": "persisted two, revised",
                "key": key,
                "embedding": [0.3, 0.2, 0.1],
                "metadata": {"tag": tag},
            }
        )
        peer.remember({"content": "episodic one", "tier": "episodic", "metadata": {"tag": tag}})
        records = peer.timeline(where={"tag": tag}, embeddings=True)
        events, after_writes = peer.events_since(before_writes)
        sessions = [
            s for s in peer.call("memory/session/list")["sessions"] if s["session"] == session
        ]
    assert len(records) == 3
    assert len(events) == 4

    with _life(tmp_path) as second_life:
        peer = second_life(binding, db=db)
        again = peer.timeline(where={"tag": tag}, embeddings=True)
        assert len(again) == 3
        for old, new in zip(_stable(records), _stable(again), strict=True):
            assert json_identical(old, new), (old, new)
        fetched = peer.call("memory/fetch", {"key": key, "embeddings": True})["record"]
        assert fetched["revision"] == 1
        assert fetched["embedding"] == [0.3, 0.2, 0.1]
        assert peer.describe()["embeddings"]["dimensions"] == 3
        assert (
            rpc_error(
                peer, "memory/remember", {"records": [{"content": "x", "embedding": [1.0]}]}
            ).code
            == -32008
        )
        assert [
            s for s in peer.call("memory/session/list")["sessions"] if s["session"] == session
        ] == sessions
        # Cursors issued before the restart still work, exactly once and in order.
        replay, cursor = peer.events_since(before_writes)
        assert replay == events
        assert cursor == after_writes
        assert peer.call("memory/events", {"cursor": after_writes})["events"] == []
        (late,) = peer.remember({"content": "after the restart", "metadata": {"tag": tag}})
        tail, _ = peer.events_since(after_writes)
        assert [e.get("id") for e in tail] == [late]
        # The key is still occupied, so writing it replaces again.
        peer.remember({"content": "third revision", "key": key})
        assert peer.call("memory/fetch", {"key": key})["record"]["revision"] == 2


# --- batch atomicity -------------------------------------------------------------------------

WIDTH = 3


@pytest.fixture(scope="module")
def atomic(binding: str, module_peer_factory: PeerFactory) -> Peer:
    peer = module_peer_factory(binding, ServerConfig(limits=LimitsConfig(max_content_length=50)))
    peer.remember({"content": "fixes the vector width", "embedding": [1.0] * WIDTH})
    return peer


BAD_RECORDS: dict[str, tuple[dict[str, Any], int]] = {
    "wrong-type": ({"content": ["not", "a", "string"]}, -32602),
    "too-long": ({"content": "x" * 51}, -32006),
    "wrong-width": ({"content": "x", "embedding": [1.0] * (WIDTH + 1)}, -32008),
    "unknown-tier": ({"content": "x", "tier": "nowhere"}, -32002),
    "bad-metadata": ({"content": "x", "metadata": ["not", "an", "object"]}, -32602),
}


@pytest.mark.spec("4.2")
@pytest.mark.parametrize("bad", sorted(BAD_RECORDS))
@pytest.mark.parametrize("position", [0, 3, 5])
def test_4_2_one_bad_record_and_nothing_in_the_batch_is_written(
    atomic: Peer, bad: str, position: int
) -> None:
    """§4.2 (SHOULD, and issue 2's MUST): a batch is atomic. Nothing from it lands: no new
    record, no key replacement, no consumed client id, no event."""
    tag = uid("tag")
    key = f"{uid('atomic')}/k"
    atomic.remember({"content": "original", "key": key})
    client_id = uid("client")
    cursor = atomic.events_head()
    good: list[dict[str, Any]] = [
        {"content": "good one", "metadata": {"tag": tag}},
        {"content": "replacing", "key": key, "metadata": {"tag": tag}},
        {"content": "with an id", "id": client_id, "metadata": {"tag": tag}},
        {"content": "with a vector", "embedding": [0.5] * WIDTH, "metadata": {"tag": tag}},
        {"content": "episodic", "tier": "episodic", "metadata": {"tag": tag}},
    ]
    record, code = BAD_RECORDS[bad]
    batch = [*good[:position], record, *good[position:]]
    assert rpc_error(atomic, "memory/remember", {"records": batch}).code == code
    assert timeline_ids(atomic, tag=tag) == []
    fetched = atomic.call("memory/fetch", {"key": key})["record"]
    assert fetched["content"] == "original"
    assert fetched["revision"] == 0
    assert atomic.call("memory/events", {"cursor": cursor})["events"] == []
    assert atomic.remember({"content": "the id is still free", "id": client_id}) == [client_id]
    assert atomic.timeline(where={"id": client_id})[0]["content"] == "the id is still free"


@pytest.mark.spec("4.2")
def test_4_2_a_record_refused_after_others_were_written_rolls_the_batch_back(atomic: Peer) -> None:
    """A refusal that can only be found while writing (a group living in another tier than
    a record names) still leaves nothing behind."""
    tag = uid("tag")
    group = uid("group")
    atomic.remember({"content": "the group lives here", "group": group, "tier": "episodic"})
    cursor = atomic.events_head()
    batch = [
        {"content": "written first", "metadata": {"tag": tag}},
        {"content": "written second", "metadata": {"tag": tag}, "tier": "semantic"},
        {
            "content": "split the group",
            "group": group,
            "tier": "semantic",
            "metadata": {"tag": tag},
        },
    ]
    with pytest.raises(RpcFailure):
        atomic.call("memory/remember", {"records": batch})
    assert timeline_ids(atomic, tag=tag) == []
    assert atomic.call("memory/events", {"cursor": cursor})["events"] == []


# --- concurrency --------------------------------------------------------------------------------

WRITERS = READERS = 8
BATCHES, PER_BATCH = 8, 10


def test_eight_writers_and_eight_readers_share_one_file_store(tmp_path: Path) -> None:
    """Issue 2: 8 threads writing and 8 reading one file store through in-process
    connections: no "database is locked", nothing lost, the count exact."""
    config = ServerConfig(limits=LimitsConfig(max_recall_limit=100_000))
    tag = uid("tag")
    failures: list[BaseException] = []
    written: list[str] = []
    lock = threading.Lock()
    done = threading.Event()
    start = threading.Barrier(WRITERS + READERS)
    with A2MServer(config, db=str(tmp_path / "concurrent.db")) as server:

        def write(n: int) -> None:
            peer = InProcessPeer(server)
            try:
                start.wait()
                for b in range(BATCHES):
                    records = [
                        {
                            "id": f"w{n}-b{b}-r{i}",
                            "content": f"concurrent writer {n} batch {b} record {i}",
                            "key": f"conc/{n}/{b}/{i}",
                            "metadata": {"tag": tag, "writer": n},
                        }
                        for i in range(PER_BATCH)
                    ]
                    ids = peer.remember(*records, session=f"{tag}-{n}")
                    assert ids == [r["id"] for r in records]
                    with lock:
                        written.extend(ids)
            except BaseException as exc:
                failures.append(exc)
            finally:
                peer.close()

        def read(n: int) -> None:
            peer = InProcessPeer(server)
            try:
                start.wait()
                cursor = peer.events_head()
                while not done.is_set():
                    peer.recall(query="concurrent writer record", where={"tag": tag}, limit=20)
                    peer.timeline(where={"tag": tag}, limit=20)
                    peer.call("memory/fetch", {"key": f"conc/{n}/0/0"})
                    result = peer.call("memory/events", {"cursor": cursor, "limit": 50})
                    cursor = result["cursor"]
                    peer.describe()
            except BaseException as exc:
                failures.append(exc)
            finally:
                peer.close()

        writers = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
        readers = [threading.Thread(target=read, args=(n,)) for n in range(READERS)]
        for thread in writers + readers:
            thread.start()
        for thread in writers:
            thread.join(120)
        done.set()
        for thread in readers:
            thread.join(120)
        assert not any(t.is_alive() for t in writers + readers), "a thread hung"
        assert not failures, failures[:3]

        expected = WRITERS * BATCHES * PER_BATCH
        assert len(written) == len(set(written)) == expected
        checker = InProcessPeer(server)
        stored = timeline_ids(checker, tag=tag)
        assert len(stored) == expected
        assert set(stored) == set(written)
        for n in range(WRITERS):
            for b in range(BATCHES):
                for i in range(PER_BATCH):
                    record = checker.call("memory/fetch", {"key": f"conc/{n}/{b}/{i}"})["record"]
                    assert record is not None
                    assert record["id"] == f"w{n}-b{b}-r{i}"
        checker.close()


OPENERS, ROUNDS = 4, 200


@pytest.mark.sqlite_only("opens SQLite files")
def test_servers_opening_one_new_file_together_all_start(tmp_path: Path) -> None:
    """Servers started at once on one new file all open it: switching the file to WAL
    meets "database is locked" without SQLite's busy handler when another opener holds a
    lock, and is retried rather than failing the start (several rounds in a hundred failed)."""
    for round_ in range(ROUNDS):
        path = str(tmp_path / f"new-{round_}.db")
        start = threading.Barrier(OPENERS)
        failures: list[BaseException] = []

        def open_it(
            path: str = path,
            start: threading.Barrier = start,
            failures: list[BaseException] = failures,
        ) -> None:
            start.wait()
            try:
                A2MServer(db=path).close()
            except BaseException as exc:
                failures.append(exc)

        openers = [threading.Thread(target=open_it) for _ in range(OPENERS)]
        for thread in openers:
            thread.start()
        for thread in openers:
            thread.join(60)
        assert not failures, (round_, failures)
        with _inspect(path) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.sqlite_only("two servers on one SQLite file")
def test_a_vector_another_process_wrote_during_a_read_is_found_after_it(tmp_path: Path) -> None:
    """The vector index is dropped when another process commits, and built again: built
    inside a read that began before that commit (its snapshot older than the change just
    noted), it missed the new vector and was still taken as current, so vector recall
    never found that record until yet another process wrote."""
    path = str(tmp_path / "shared.db")
    with A2MServer(db=path) as first, A2MServer(db=path) as second:
        writer, reader = first.connect(), second.connect()
        writer.call("memory/remember", {"records": [{"content": "old", "embedding": [1, 0, 0]}]})
        query = {"query": "", "embedding": [0, 1, 0], "limit": 1, "rank": "similarity"}
        assert [r["content"] for r in reader.call("memory/recall", query)["records"]] == ["old"]
        store = second.protocol.store
        with store.reading() as read:
            read.dimensions()  # the read's snapshot begins here
            new = {"content": "new", "embedding": [0, 1, 0]}
            writer.call("memory/remember", {"records": [new]})
            store.loaded_vector_index()  # the commit is noticed inside the older read
        found = reader.call("memory/recall", query)["records"]
        assert [r["content"] for r in found] == ["new"]


@pytest.mark.sqlite_only("two servers on one SQLite file")
def test_push_reaches_a_subscriber_of_another_server_on_the_same_file(tmp_path: Path) -> None:
    """Nothing tells a process that another committed to the file: each server watches the
    file's data_version and pushes what the other logged, as on PostgreSQL (the events
    waited for a write of the subscriber's own process)."""
    path = str(tmp_path / "shared.db")
    heard: list[dict[str, Any]] = []
    arrived = threading.Event()

    def notify(message: dict[str, Any]) -> None:
        heard.append(message)
        if len(heard) == 3:
            arrived.set()

    with A2MServer(db=path) as subscriber_side, A2MServer(db=path) as writer_side:
        connection = subscriber_side.connect(notify=notify)
        connection.call("memory/events/subscribe", {"kinds": ["written"]})
        writer = writer_side.connect()
        ids = [
            writer.call("memory/remember", {"records": [{"content": f"far {n}"}]})["ids"][0]
            for n in range(3)
        ]
        assert arrived.wait(10), f"{len(heard)} of 3 notifications arrived"
        connection.close()
    assert [m["params"]["id"] for m in heard] == ids


# --- dropped records are gone ----------------------------------------------------------------------

DROPPING = ServerConfig(
    tiers=(
        TierConfig("scratch", kind="working", capacity=2),  # no spill_to: what overflows is dropped
        TierConfig("kept", kind="semantic"),
    )
)
_FTS_INTERNALS = (
    "records_fts_data",
    "records_fts_idx",
    "records_fts_config",
    "records_fts_docsize",
)


@pytest.mark.spec("4.7")
@pytest.mark.sqlite_only("reads the SQLite file's pages")
def test_4_7_dropped_records_are_really_gone_from_the_file(
    binding: str, make_peer: PeerFactory, tmp_path: Path
) -> None:
    """A tier with capacity and nowhere below drops what overflows: the record's id and
    content are then absent from every table of the SQLite file, and the full-text index
    no longer finds it."""
    db = str(tmp_path / "drop.db")
    peer = make_peer(binding, DROPPING, db=db)
    secret = f"zanzibarsecret{uid('s').replace('-', '')}"
    cursor = peer.events_head()
    (doomed,) = peer.remember({"content": f"the {secret} passphrase", "metadata": {"s": secret}})
    survivors = [peer.remember({"content": f"filler {i}"})[0] for i in range(2)]
    assert timeline_ids(peer) == survivors
    assert peer.recall(query=secret) == []
    events, _ = peer.events_since(cursor)
    assert [e.get("dropped") for e in events if e["kind"] == "consolidated"] == [1]
    with _inspect(db) as conn:
        assert conn.execute("SELECT count(*) FROM records WHERE id = ?", (doomed,)).fetchone() == (
            0,
        )
        assert conn.execute(
            "SELECT count(*) FROM write_ids WHERE record_id = ?", (doomed,)
        ).fetchone() == (0,)
        tables = [
            row[0]
            for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if row[0] not in _FTS_INTERNALS and not row[0].startswith("sqlite_")
        ]
        assert "records_fts_content" in tables
        for table in tables:
            columns = [row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')]
            for column in columns:
                hits = conn.execute(
                    f'SELECT count(*) FROM "{table}" WHERE instr(CAST("{column}" AS TEXT), ?) > 0',
                    (secret,),
                ).fetchone()[0]
                assert hits == 0, f"the dropped content is still in {table}.{column}"
        assert conn.execute(
            "SELECT count(*) FROM records_fts WHERE records_fts MATCH ?", (secret,)
        ).fetchone() == (0,)


@pytest.mark.spec("4.7")
@pytest.mark.parametrize("how", ["dropped", "forgotten"])
@pytest.mark.sqlite_only("reads the SQLite file's bytes")
def test_deleted_content_does_not_linger_in_the_file_bytes(tmp_path: Path, how: str) -> None:
    """A stricter reading of issue 2's "really gone": once the server has closed the file,
    its bytes (pages on the freelist, full-text index segments) no longer hold the
    content. ``PRAGMA secure_delete`` plus an FTS5 merge is enough for that."""
    db = str(tmp_path / "bytes.db")
    secret = f"quixoticsecret{uid('s').replace('-', '')}"
    with A2MServer(DROPPING, db=db) as server:
        peer = InProcessPeer(server)
        (doomed,) = peer.remember({"content": f"the {secret} passphrase"})
        if how == "dropped":
            peer.remember({"content": "filler one"}, {"content": "filler two"})
        else:
            assert peer.call("memory/forget", {"ids": [doomed]}) == {"forgotten": 1}
        assert peer.recall(query=secret) == []
        peer.close()
    data = b"".join(
        Path(db + suffix).read_bytes() for suffix in ("", "-wal") if Path(db + suffix).exists()
    )
    assert secret.encode() not in data


@pytest.mark.sqlite_only("reads the SQLite file's meta table; test_pg_faults covers PostgreSQL")
def test_the_database_carries_a_schema_version(tmp_path: Path) -> None:
    """Issue 2: the file records its schema version so later releases can migrate it."""
    db = str(tmp_path / "version.db")
    A2MServer(db=db).close()
    with _inspect(db) as conn:
        (version,) = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert int(version) >= 1
