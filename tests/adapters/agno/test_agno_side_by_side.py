"""The same memories in Agno's InMemoryDb, Agno's SqliteDb and A2MDb (over HTTP): every
filter, sort and page Agno passes answers alike. Where Agno's two backends disagree with
each other, A2MDb follows SqliteDb, and the test says so."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from agno.db.base import BaseDb
from agno.db.in_memory import InMemoryDb
from agno.db.in_memory import in_memory_db as in_memory_module
from agno.db.schemas.memory import UserMemory
from agno.db.sqlite import SqliteDb
from agno.db.sqlite import sqlite as sqlite_module

from a2m import A2MClient
from a2m_agno import A2MDb
from a2m_agno import _records as records_module
from a2m_testing.servers import Servers

pytestmark = pytest.mark.filterwarnings(
    # Agno's SqliteDb filters a JSON column with ILIKE, which SQLAlchemy 2.1 deprecates.
    "ignore::sqlalchemy.exc.SADeprecationWarning"
)

USERS = ["ada", "bob", "cy", None]
AGENTS = ["scribe", "reader", None]
TEAMS = ["crew", None]
TOPICS = [["food"], ["food", "travel"], ["travel"], ["work"], None, []]
WORDS = ["apple pie", "Apple cider", "train to Porto", "standup at nine", "likes tea", "pear"]


class Clock:
    """Agno stamps ``updated_at`` with ``time.time()``: one clock for all three databases,
    ticking a second per write, so their stamps can be compared."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def time(self) -> float:
        return self.now

    def tick(self) -> None:
        self.now += 1


def memories(count: int = 36) -> list[UserMemory]:
    chooser = random.Random(7)
    created = chooser.sample(range(1_700_000_000, 1_700_100_000, 17), count)
    return [
        UserMemory(
            memory=f"{WORDS[i % len(WORDS)]} #{i:02d}",
            memory_id=f"m-{i:02d}",
            topics=None if TOPICS[i % 6] is None else list(TOPICS[i % 6] or []),
            user_id=USERS[i % 4],
            input=f"input {i}" if i % 3 else None,
            created_at=created[i],
            feedback="useful" if i % 5 == 0 else None,
            agent_id=AGENTS[i % 3],
            team_id=TEAMS[i % 2],
        )
        for i in range(count)
    ]


def _patched(monkeypatch: pytest.MonkeyPatch) -> Clock:
    ticking = Clock()
    for module in (in_memory_module, sqlite_module, records_module):
        monkeypatch.setattr(module, "time", ticking)
    return ticking


def _filled(client: A2MClient, folder: Path, clock: Clock) -> dict[str, BaseDb]:
    everything: dict[str, BaseDb] = {
        "in_memory": InMemoryDb(),
        "sqlite": SqliteDb(db_file=str(folder / "agno.db")),
        "a2m": A2MDb(client, namespace="side-by-side"),
    }
    data = memories()
    # Written once, then rewritten in another order, each rewrite a tick later: every
    # backend then holds the same created_at (kept) and updated_at (the rewrite's).
    for db in everything.values():
        db.upsert_memories([replace(memory) for memory in data])
    for memory in random.Random(3).sample(data, len(data)):
        clock.tick()
        for db in everything.values():
            db.upsert_user_memory(replace(memory))
    return everything


def _close(dbs: dict[str, BaseDb]) -> None:
    sqlite = dbs["sqlite"]
    assert isinstance(sqlite, SqliteDb)
    sqlite.db_engine.dispose()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, BaseDb]]:
    """Read-only tests share one filled trio (on its own server)."""
    with pytest.MonkeyPatch.context() as monkeypatch, Servers() as servers:
        clock = _patched(monkeypatch)
        with A2MClient(servers.http_url(servers.server())) as client:
            dbs = _filled(client, tmp_path_factory.mktemp("side-by-side"), clock)
            yield dbs
            _close(dbs)


@pytest.fixture
def dbs(
    client: A2MClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, BaseDb]]:
    """A trio of its own, for a test that changes it."""
    filled = _filled(client, tmp_path, _patched(monkeypatch))
    yield filled
    _close(filled)


QUERIES: list[dict[str, Any]] = [
    {},
    {"user_id": "ada"},
    {"user_id": "nobody"},
    {"agent_id": "scribe"},
    {"team_id": "crew"},
    {"user_id": "bob", "team_id": "crew"},
    {"topics": ["food"]},
    {"topics": ["travel"], "user_id": "cy"},
    {"search_content": "apple"},
    {"search_content": "APPLE C"},
    {"search_content": "porto", "agent_id": "reader"},
    {"limit": 5},
    {"limit": 5, "page": 3},
    {"limit": 7, "page": 6},
    {"sort_by": "created_at"},
    {"sort_by": "created_at", "sort_order": "asc", "limit": 10, "page": 2},
    {"sort_by": "updated_at", "sort_order": "desc", "limit": 4},
    {"sort_by": "updated_at", "sort_order": "asc"},
    {"sort_by": "memory", "sort_order": "asc", "limit": 6, "page": 2},
    {"sort_by": "memory_id"},
    {"sort_by": "no_such_column", "limit": 3},
    {"user_id": "ada", "sort_by": "updated_at", "limit": 2, "page": 2},
]


@pytest.mark.parametrize("query", QUERIES, ids=[repr(q) for q in QUERIES])
def test_get_user_memories_answers_alike(shared: dict[str, BaseDb], query: dict[str, Any]) -> None:
    answers = {name: db.get_user_memories(**query) for name, db in shared.items()}
    assert answers["a2m"] == answers["sqlite"] == answers["in_memory"]
    totals = {
        name: db.get_user_memories(**query, deserialize=False)[1] for name, db in shared.items()
    }
    assert totals["a2m"] == totals["in_memory"]
    if answers["sqlite"]:  # SqliteDb reports a total of 0 for a page past the end
        assert totals["a2m"] == totals["sqlite"]


def test_sorting_by_a_column_with_ties_orders_alike(shared: dict[str, BaseDb]) -> None:
    for order in ("asc", "desc"):
        keys = {
            name: [m.user_id for m in db.get_user_memories(sort_by="user_id", sort_order=order)]
            for name, db in shared.items()
            if name != "in_memory"  # InMemoryDb cannot sort with None among the values
        }
        assert keys["a2m"] == keys["sqlite"]


def test_several_topics_mean_all_of_them_as_in_sqlite(shared: dict[str, BaseDb]) -> None:
    query = {"topics": ["food", "travel"]}
    a2m, sqlite = (
        shared["a2m"].get_user_memories(**query),
        shared["sqlite"].get_user_memories(**query),
    )
    assert a2m == sqlite
    assert a2m
    assert all(set(query["topics"]) <= set(m.topics or []) for m in a2m)
    # InMemoryDb (and MongoDb) read several topics as "any of them" instead.
    assert len(shared["in_memory"].get_user_memories(**query)) > len(a2m)


def test_topics_stats_and_single_reads_answer_alike(shared: dict[str, BaseDb]) -> None:
    for user in (None, "ada", "nobody"):
        topics = {name: set(db.get_all_memory_topics(user_id=user)) for name, db in shared.items()}
        assert topics["a2m"] == topics["sqlite"] == topics["in_memory"]
    for limit, page in ((None, None), (2, 1), (2, 2)):
        stats = {
            name: db.get_user_memory_stats(limit=limit, page=page) for name, db in shared.items()
        }
        assert stats["a2m"] == stats["sqlite"] == stats["in_memory"]
    assert shared["a2m"].get_user_memory_stats(user_id="bob") == shared[
        "sqlite"
    ].get_user_memory_stats(user_id="bob")
    for memory_id, user in (("m-04", None), ("m-04", "ada"), ("m-04", "bob"), ("nope", None)):
        found = {name: db.get_user_memory(memory_id, user_id=user) for name, db in shared.items()}
        assert found["a2m"] == found["sqlite"] == found["in_memory"]


def test_deletes_and_clear_answer_alike(dbs: dict[str, BaseDb]) -> None:
    for db in dbs.values():
        db.delete_user_memory("m-01", user_id="ada")  # m-01 is bob's: stays
        db.delete_user_memory("m-02")
        db.delete_user_memories(["m-03", "m-04", "m-05", "missing"], user_id="ada")
        db.delete_user_memories(["m-06", "m-07"])
    answers = {name: db.get_user_memories(sort_by="memory_id") for name, db in dbs.items()}
    assert answers["a2m"] == answers["sqlite"] == answers["in_memory"]
    assert {m.memory_id for m in answers["a2m"]} >= {"m-01", "m-03", "m-05"}
    assert not {"m-02", "m-04", "m-06", "m-07"} & {m.memory_id for m in answers["a2m"]}
    for db in dbs.values():
        db.clear_memories()
        assert db.get_user_memories() == []


@pytest.mark.parametrize("query", [{"limit": -1}, {"limit": -1, "page": 2}], ids=repr)
def test_a_negative_limit_means_no_limit_as_in_sqlite(
    shared: dict[str, BaseDb], query: dict[str, Any]
) -> None:
    """SQLite's ``LIMIT -1`` is no limit, and ``SqliteDb`` passes it on: every memory."""
    ours = shared["a2m"].get_user_memories(**query)
    assert ours == shared["sqlite"].get_user_memories(**query)
    assert len(ours) == shared["a2m"].get_user_memories(deserialize=False)[1] > 0


def test_an_integer_memory_id_is_stored_as_its_digits_as_in_sqlite(
    dbs: dict[str, BaseDb],
) -> None:
    from a2m import InvalidParams

    for name in ("a2m", "sqlite"):
        db = dbs[name]
        db.upsert_user_memory(UserMemory(memory="likes tea", memory_id=5, user_id="ada"))  # type: ignore[arg-type]
        for asked in (5, "5"):
            found = db.get_user_memory(asked)  # type: ignore[arg-type]
            assert isinstance(found, UserMemory), name
            assert (found.memory_id, found.memory) == ("5", "likes tea"), name
        db.delete_user_memory(5)  # type: ignore[arg-type]
        assert db.get_user_memory("5") is None, name
    before = dbs["a2m"].get_user_memories(deserialize=False)[1]
    with pytest.raises(InvalidParams, match="memory_id must be a string"):
        dbs["a2m"].upsert_user_memory(UserMemory(memory="x", memory_id=2.5))  # type: ignore[arg-type]
    assert dbs["a2m"].get_user_memories(deserialize=False)[1] == before
