"""``a2m-server export`` / ``import`` (issue 15): SQLite → PostgreSQL → SQLite gives back
every record exactly; re-importing is a no-op; a bad line is named and nothing of the
file is written."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from a2m_server import A2MServer
from a2m_server.store import open_store
from store_backends import PostgresServer


@contextmanager
def _server(db: str) -> Iterator[A2MServer]:
    """A server on exactly ``db`` (a SQLite file here stays a SQLite file)."""
    store = open_store(db)
    try:
        with A2MServer(store=store) as server:
            yield server
    finally:
        store.close()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "a2m_server", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def _export(db: str, path: Path) -> list[str]:
    done = _cli("export", "--db", db)
    assert done.returncode == 0, done.stderr
    path.write_text(done.stdout, encoding="utf-8")
    header, *records = done.stdout.splitlines()
    assert json.loads(header)["format"] == "a2m-export/1"
    return records


def _import(db: str, path: Path) -> subprocess.CompletedProcess[str]:
    return _cli("import", "--db", db, str(path))


def _fill(db: str) -> None:
    with _server(db) as server:
        peer = server.connect()
        peer.call(
            "memory/remember",
            {
                "records": [
                    {
                        "content": "Ångström café in Zürich",
                        "key": "places/zurich",
                        "owner": "alice",
                        "session": "s1",
                        "metadata": {"z": 1, "a": [1.0, -0.0, {"deep": None}], "tags": ["x"]},
                        "embedding": [0.1, 1e-310, -2.5e300, 3.0],
                        "salience": 0.75,
                    },
                    {"content": "東京タワー", "tier": "semantic", "embedding": [1, 0, 0, 0]},
                    {"content": "Привет", "group": "g1", "owner": "bob", "role": "user"},
                    {"content": "ephemeral", "metadata": {"ttl_s": 86400}},
                    {
                        "content": "doc",
                        "uri": "https://example.invalid/d",
                        "media_type": "text/plain",
                    },
                ]
            },
        )
        peer.call(
            "memory/remember",
            {"records": [{"content": "Zürich again", "key": "places/zurich", "owner": "alice"}]},
        )
        peer.call("memory/recall", {"query": "zurich", "owner": "alice"})
        for start in (0, 600):  # more than one export page
            bulk = [{"content": f"bulk {n}"} for n in range(start, start + 600)]
            peer.call("memory/remember", {"records": bulk})


def test_sqlite_to_postgres_to_sqlite_round_trips_exactly(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    source = str(tmp_path / "source.db")
    _fill(source)
    original = _export(source, tmp_path / "one.jsonl")
    assert len(original) == 1205
    pg = postgres_server.fresh_url()
    done = _import(pg, tmp_path / "one.jsonl")
    assert done.returncode == 0, done.stderr
    assert "imported 1205 of 1205" in done.stderr
    via_postgres = _export(pg, tmp_path / "two.jsonl")
    assert via_postgres == original
    back = str(tmp_path / "back.db")
    assert _import(back, tmp_path / "two.jsonl").returncode == 0
    assert _export(back, tmp_path / "three.jsonl") == original
    # The imported store serves the records: keys, owners, vectors, full text.
    with A2MServer(db=pg) as server:
        peer = server.connect()
        found = peer.call("memory/fetch", {"key": "places/zurich", "owner": "alice"})["record"]
        assert (found["content"], found["revision"]) == ("Zürich again", 1)
        hits = peer.call("memory/recall", {"query": "東京"})["records"]
        assert hits[0]["content"] == "東京タワー"
        nearest = peer.call("memory/recall", {"embedding": [1, 0, 0, 0], "limit": 1})["records"]
        assert nearest[0]["content"] == "東京タワー"


def test_importing_the_same_dump_twice_adds_nothing_the_second_time(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    source = str(tmp_path / "source.db")
    with _server(source) as server:
        server.connect().call(
            "memory/remember", {"records": [{"content": f"r{n}"} for n in range(7)]}
        )
    _export(source, tmp_path / "dump.jsonl")
    pg = postgres_server.fresh_url()
    assert "imported 7 of 7" in _import(pg, tmp_path / "dump.jsonl").stderr
    again = _import(pg, tmp_path / "dump.jsonl")
    assert again.returncode == 0
    assert "imported 0 of 7 records (7 already present)" in again.stderr
    assert len(_export(pg, tmp_path / "check.jsonl")) == 7


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda line: line[: len(line) // 2], "line 3: not JSON"),
        (lambda line: line.replace('"content"', '"contents"'), "line 3: content must be a string"),
        (
            lambda line: line.replace('"created_at":', '"created_at":"soon","x":'),
            "line 3: created_at",
        ),
    ],
    ids=["truncated", "missing-field", "bad-time"],
)
def test_a_damaged_line_is_named_and_nothing_is_imported(
    postgres_server: PostgresServer, tmp_path: Path, damage: object, expected: str
) -> None:
    source = str(tmp_path / "source.db")
    with _server(source) as server:
        server.connect().call(
            "memory/remember", {"records": [{"content": f"r{n}"} for n in range(4)]}
        )
    assert len(_export(source, tmp_path / "dump.jsonl")) == 4
    dump = (tmp_path / "dump.jsonl").read_text(encoding="utf-8").splitlines()
    assert callable(damage)
    dump[2] = damage(dump[2])
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(dump) + "\n", encoding="utf-8")
    pg = postgres_server.fresh_url()
    done = _import(pg, broken)
    assert done.returncode == 1
    assert expected in done.stderr
    assert "nothing was imported" in done.stderr
    assert _export(pg, tmp_path / "empty.jsonl") == []


@pytest.fixture(autouse=True)
def _postgres_only(store_backend: str) -> None:
    assert store_backend == "postgres"
