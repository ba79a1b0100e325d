"""Every user-memory method of A2MDb and AsyncA2MDb against the bundled server over HTTP:
exact round trips, Agno's stamping rules, batched writes, deletes scoped to the
namespace, bad input refused with nothing written, other frameworks' memories visible
to ``search_content`` with their provenance."""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
from agno.db.schemas.memory import UserMemory

from a2m import A2MClient, AsyncA2MClient, InvalidParams
from a2m.adapter import A2MAdapter
from a2m_agno import A2MDb, AsyncA2MDb, IncompleteListingError
from a2m_agno._records import COLUMNS
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_testing.plugin import HTTPServerFactory

pytestmark = pytest.mark.anyio


class Counted:
    """A database and the A2M methods its calls sent, read off the HTTP requests."""

    def __init__(self, db: A2MDb | AsyncA2MDb, methods: list[str]) -> None:
        self.db = db
        self.methods = methods

    async def __call__(self, name: str, *args: Any, **kwargs: Any) -> Any:
        result = getattr(self.db, name)(*args, **kwargs)
        return await result if inspect.isawaitable(result) else result


def _method(request: httpx.Request) -> str:
    return str(json.loads(request.content).get("method"))


@pytest.fixture(params=["sync", "async"])
async def db(request: pytest.FixtureRequest, a2m_http_url: str) -> AsyncIterator[Counted]:
    methods: list[str] = []
    if request.param == "sync":

        def hook(sent: httpx.Request) -> None:
            methods.append(_method(sent))

        with httpx.Client(event_hooks={"request": [hook]}) as http:
            client = A2MClient(a2m_http_url, http_client=http)
            yield Counted(A2MDb(client), methods)
            client.close()
    else:

        async def ahook(sent: httpx.Request) -> None:
            methods.append(_method(sent))

        async with httpx.AsyncClient(event_hooks={"request": [ahook]}) as http:
            aclient = AsyncA2MClient(a2m_http_url, http_client=http)
            yield Counted(AsyncA2MDb(aclient), methods)
            await aclient.aclose()


def full(memory_id: str = "m-1", **changes: Any) -> UserMemory:
    values: dict[str, Any] = {
        "memory": "Ada takes her coffee black",
        "memory_id": memory_id,
        "topics": ["coffee", "habits"],
        "user_id": "ada",
        "input": "I drink my coffee black",
        "created_at": 1_700_000_000,
        "updated_at": 1_700_000_500,
        "feedback": "accurate",
        "agent_id": "barista",
        "team_id": "cafe",
    }
    return UserMemory(**{**values, **changes})


async def test_a_memory_round_trips_exactly(db: Counted) -> None:
    memory = full()
    stored = await db("upsert_user_memory", replace(memory))
    assert stored == memory
    assert await db("get_user_memory", "m-1") == memory
    assert await db("get_user_memory", "m-1", user_id="ada") == memory
    assert await db("get_user_memory", "m-1", user_id="bob") is None
    assert await db("get_user_memory", "missing") is None
    assert await db("get_user_memory", "a//b") is None  # no entry key can be that
    row = await db("get_user_memory", "m-1", deserialize=False)
    assert tuple(row) == COLUMNS
    assert row["created_at"] == 1_700_000_000
    assert row["topics"] == ["coffee", "habits"]
    sparse = UserMemory(memory="bare", memory_id="m-2", created_at=5)
    assert await db("upsert_user_memory", replace(sparse)) == replace(sparse, updated_at=5)
    assert await db("get_user_memory", "m-2") == replace(sparse, updated_at=5)


async def test_an_id_is_assigned_and_a_rewrite_keeps_created_at(db: Counted) -> None:
    fresh = UserMemory(memory="Ada likes tea", user_id="ada", created_at=1_000)
    stored = await db("upsert_user_memory", fresh)
    assert fresh.memory_id  # assigned on the caller's object, as Agno's backends do
    assert stored.memory_id == fresh.memory_id
    again = UserMemory(memory="Ada likes green tea", memory_id=fresh.memory_id, user_id="ada")
    rewritten = await db("upsert_user_memory", again)
    assert rewritten.memory == "Ada likes green tea"
    assert rewritten.created_at == 1_000
    assert rewritten.updated_at is not None
    assert rewritten.updated_at > 1_000


async def test_upsert_memories_is_one_remember_and_atomic(db: Counted) -> None:
    batch = [full(f"m-{i}", memory=f"fact {i}", created_at=100 + i) for i in range(50)]
    db.methods.clear()
    stored = await db("upsert_memories", [replace(m) for m in batch], preserve_updated_at=True)
    assert db.methods.count("memory/remember") == 1
    assert len([m for m in db.methods if m != "memory/describe"]) <= 4
    assert sorted(stored, key=lambda m: m.created_at) == batch
    kept = await db("get_user_memories", sort_by="created_at", sort_order="asc")
    assert kept == batch

    stamped = await db("upsert_memories", [replace(batch[0], memory="changed")])
    assert stamped[0].created_at == batch[0].created_at
    assert stamped[0].updated_at != batch[0].updated_at

    bad = [full("ok-1"), full("bad\x00id"), full("ok-2")]
    with pytest.raises(InvalidParams):
        await db("upsert_memories", bad)
    assert await db("get_user_memory", "ok-1") is None
    assert await db("upsert_memories", []) == []


async def test_listing_is_complete_past_the_servers_limit(db: Counted) -> None:
    batch = [full(f"m-{i:04d}", memory=f"fact {i}") for i in range(1_050)]
    await db("upsert_memories", batch)
    everything = await db("get_user_memories")
    assert len(everything) == 1_050
    rows, total = await db(
        "get_user_memories", limit=100, page=11, sort_by="memory_id", deserialize=False
    )
    assert total == 1_050
    assert [r["memory_id"] for r in rows] == [f"m-{i:04d}" for i in range(49, -1, -1)]


@pytest.mark.parametrize("cursor", [True, False])
async def test_a_server_without_cursors_gets_an_error_never_a_short_answer(
    a2m_http_server_factory: HTTPServerFactory, cursor: bool
) -> None:
    config = ServerConfig(limits=LimitsConfig(max_recall_limit=40), timeline_cursor=cursor)
    url = a2m_http_server_factory(config=config)
    memories = [full(f"m-{i:03d}", user_id="ada" if i < 30 else "bob") for i in range(60)]
    with A2MClient(url) as client:
        sync = A2MDb(client)
        sync.upsert_memories([replace(m) for m in memories])
        assert len(sync.get_user_memories(user_id="ada")) == 30  # under the limit: exact
        if cursor:
            assert len(sync.get_user_memories()) == 60
        else:
            with pytest.raises(IncompleteListingError):
                sync.get_user_memories()
    async with AsyncA2MClient(url) as aclient:
        adb = AsyncA2MDb(aclient)
        assert len(await adb.get_user_memories(user_id="bob")) == 30
        if cursor:
            assert len(await adb.get_user_memories()) == 60
        else:
            with pytest.raises(IncompleteListingError):
                await adb.get_user_memory_stats()


async def test_filters_pages_and_bad_pages(db: Counted) -> None:
    await db(
        "upsert_memories",
        [
            full("a", user_id="ada", topics=["x"], memory="Apple pie"),
            full("b", user_id="ada", topics=["x", "y"], agent_id="other", memory="pear"),
            full("c", user_id="bob", topics=None, team_id=None, memory="apple"),
        ],
    )

    async def ids(**query: Any) -> list[str]:
        return [m.memory_id for m in await db("get_user_memories", **query)]

    assert await ids() == ["a", "b", "c"]
    assert await ids(user_id="ada") == ["a", "b"]
    assert await ids(agent_id="other") == ["b"]
    assert await ids(team_id="cafe") == ["a", "b"]
    assert await ids(topics=["x", "y"]) == ["b"]
    assert await ids(search_content="APPLE") == ["a", "c"]
    assert await ids(limit=2, page=2) == ["c"]
    assert await ids(sort_by="memory", sort_order="asc") == ["a", "c", "b"]
    with pytest.raises(ValueError, match="page"):
        await db("get_user_memories", page=2)
    with pytest.raises(ValueError, match="page"):
        await db("get_user_memory_stats", limit=1, page=0)


async def test_deletes_topics_and_stats(db: Counted) -> None:
    await db(
        "upsert_memories",
        [
            full("a", user_id="ada", topics=["x"], updated_at=10),
            full("b", user_id="ada", topics=["y"], updated_at=30),
            full("c", user_id="bob", topics=["z"], updated_at=20),
            full("d", user_id=None, topics=["w"], updated_at=40),
        ],
        preserve_updated_at=True,
    )
    assert await db("get_all_memory_topics") == ["w", "x", "y", "z"]
    assert await db("get_all_memory_topics", user_id="ada") == ["x", "y"]
    assert await db("get_user_memory_stats") == (
        [
            {"user_id": "ada", "total_memories": 2, "last_memory_updated_at": 30},
            {"user_id": "bob", "total_memories": 1, "last_memory_updated_at": 20},
        ],
        2,
    )
    assert await db("get_user_memory_stats", limit=1, page=2, user_id=None) == (
        [{"user_id": "bob", "total_memories": 1, "last_memory_updated_at": 20}],
        2,
    )
    db.methods.clear()
    await db("delete_user_memory", "c", user_id="ada")  # bob's: stays
    await db("delete_user_memories", ["a", "b", "nope"], user_id="ada")
    assert db.methods == ["memory/forget", "memory/forget"]
    assert [m.memory_id for m in await db("get_user_memories")] == ["c", "d"]
    await db("delete_user_memory", "c")
    await db("delete_user_memory", "not/../a key")  # cannot name a memory: nothing sent
    assert [m.memory_id for m in await db("get_user_memories")] == ["d"]
    await db("clear_memories")
    assert await db("get_user_memories") == []


async def test_clear_and_deletes_stay_in_the_namespace(db: Counted, a2m_http_url: str) -> None:
    with A2MClient(a2m_http_url) as client:
        neighbour = A2MDb(client, namespace="agno/other-app")
        neighbour.upsert_user_memory(full("n-1"))
        other = A2MAdapter(client, "langchain", source_framework="langchain")
        other.write("m-1", "semantic", "a LangChain fact under the same key")
        await db("upsert_user_memory", full("m-1"))
        await db("delete_user_memory", "n-1")
        await db("clear_memories")
        assert await db("get_user_memories") == []
        assert [m.memory_id for m in neighbour.get_user_memories()] == ["n-1"]
        assert other.read("m-1") is not None


async def test_other_frameworks_memories_answer_search_content(
    db: Counted, a2m_http_url: str
) -> None:
    with A2MClient(a2m_http_url) as client:
        crew = A2MAdapter(client, "crew", source_framework="crewai", agent="planner")
        crew.write("hikes", "semantic", "Ada goes hiking every Sunday", meta={"tags": ["outdoor"]})
        client.remember(
            {
                "content": "Ada plans a hiking trip to Madeira",
                "key": "raw/notes/madeira",
                "metadata": {"namespace": "raw/notes", "user_id": "ada"},
            }
        )
        client.remember("Ada bought new hiking boots")  # a raw record: no key, no metadata
        await db("upsert_user_memory", full("m-1", memory="Ada hikes fast"))

        assert [m.memory for m in await db("get_user_memories")] == ["Ada hikes fast"]
        rows, total = await db("get_user_memories", search_content="hiking", deserialize=False)
        assert total == 3
        by_text = {r["memory"]: r for r in rows}
        raw = by_text["Ada bought new hiking boots"]
        assert raw["source_framework"] is None
        assert raw["key"] is None
        assert raw["memory_id"] == raw["a2m_id"]
        assert isinstance(raw["created_at"], int)
        crewai = by_text["Ada goes hiking every Sunday"]
        assert crewai["source_framework"] == "crewai"
        assert crewai["agent_id"] == "planner"
        assert crewai["topics"] == ["outdoor"]
        assert crewai["namespace"] == "crew"
        assert by_text["Ada plans a hiking trip to Madeira"]["user_id"] == "ada"
        mine = await db("get_user_memories", search_content="hiking", user_id="ada")
        assert [m.memory for m in mine] == ["Ada plans a hiking trip to Madeira"]
        db.db.include_foreign = False
        assert await db("get_user_memories", search_content="hiking") == []


def test_constructors_touch_no_network_and_refuse_bad_namespaces() -> None:
    unreachable = A2MClient("http://127.0.0.1:9/")
    A2MDb(unreachable)
    AsyncA2MDb(AsyncA2MClient("http://127.0.0.1:9/"))
    with pytest.raises(InvalidParams):
        A2MDb(unreachable, namespace="Not A Namespace")
    unreachable.close()
