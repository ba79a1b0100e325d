"""A2MSession's own promises: concurrency without loss, all-or-nothing writes, damaged
records stepped over, bad items refused before anything is written, no network in the
constructor, and a conversation other frameworks read with its provenance."""

from __future__ import annotations

import asyncio
import logging

import pytest
from agents import SQLiteSession
from agents.memory import SessionABC
from oai_items import every_kind_of_item

from a2m import A2MClient, AsyncA2MClient
from a2m.errors import A2MConnectionError, InvalidParams, QuotaExceeded
from a2m_openai_agents import A2MSession, IncompleteHistoryWarning
from a2m_server import A2MServer
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_testing import DelayedTransport

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("store_backend")]


async def test_twenty_tasks_adding_and_popping_lose_and_duplicate_nothing(
    a2m_async_client: AsyncA2MClient,
) -> None:
    session = A2MSession("busy", a2m_async_client)
    added = [f"t{task}-m{n}" for task in range(20) for n in range(5)]

    async def add(task: int) -> None:
        for n in range(5):
            await session.add_items([{"role": "user", "content": f"t{task}-m{n}"}])

    async def pop() -> list[str]:
        popped = []
        for _ in range(3):
            item = await session.pop_item()
            if item is not None:
                popped.append(item["content"])
        return popped

    await asyncio.gather(*(add(task) for task in range(20)))
    pops = await asyncio.gather(*(pop() for _ in range(20)))
    popped = [content for batch in pops for content in batch]
    remaining = [item["content"] for item in await session.get_items()]
    assert len(popped) == len(set(popped)) == 60
    assert sorted(popped + remaining) == sorted(added)
    for task in range(20):  # each task's own items stay in the order it added them
        mine = [c for c in remaining if c.startswith(f"t{task}-")]
        assert mine == sorted(mine)


async def test_a_failed_add_items_writes_nothing(a2m_http_server_factory) -> None:  # type: ignore[no-untyped-def]
    config = ServerConfig(limits=LimitsConfig(max_records_per_call=2, max_content_length=40))
    url = a2m_http_server_factory(config=config)
    async with AsyncA2MClient(url) as client:
        session = A2MSession("atomic", client)
        await session.add_items([{"role": "user", "content": "kept"}])
        items = [{"role": "user", "content": f"short {n}"} for n in range(3)]
        items.append({"role": "user", "content": "far too long for this server " * 3})
        with pytest.raises(QuotaExceeded):
            await session.add_items(items)  # the first call of two was written, then taken back
        assert await session.get_items() == [{"role": "user", "content": "kept"}]


@pytest.mark.parametrize("backend", ["SQLiteSession", "A2MSession"])
async def test_add_items_cancelled_midway_is_finished_then_cancelled(backend: str) -> None:
    """The SDK's own sessions finish a write they began when the caller is cancelled
    (``SQLiteSession``); A2MSession's three calls go to their end the same way, where
    cancelling between two left the first batch alone stored."""
    items = [{"role": "user", "content": f"m{n}"} for n in range(250)]
    config = ServerConfig(limits=LimitsConfig(max_records_per_call=100))
    with A2MServer(config) as server:
        transport = DelayedTransport(server, delay=0.05)
        async with AsyncA2MClient(transport=transport) as client:
            session: SessionABC = (
                SQLiteSession("cancelled") if backend == "SQLiteSession"
                else A2MSession("cancelled", client)
            )  # fmt: skip
            task = asyncio.ensure_future(session.add_items(items))  # type: ignore[arg-type]
            # SQLite's write is one step: cancel it once begun; A2M's during its second call.
            await asyncio.sleep(0 if backend == "SQLiteSession" else 0.08)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await session.get_items() == items


@pytest.mark.parametrize(
    ("item", "where"),
    [
        ({"role": "user", "content": "x", "score": float("nan")}, "items[1].score"),
        ({"role": "user", "content": b"bytes"}, "items[1].content"),
        ({"role": "user", "content": "x", "tags": {"a"}}, "items[1].tags"),
        ({"role": "user", "content": ("a", "b")}, "items[1].content"),
        ({"role": "user", "content": "\ud800"}, "items[1].content"),
        ({1: "x"}, "items[1]"),
    ],
)
async def test_an_item_a2m_cannot_carry_exactly_is_refused_and_nothing_written(
    a2m_async_client: AsyncA2MClient, item: dict[object, object], where: str
) -> None:
    session = A2MSession("strict", a2m_async_client)
    with pytest.raises(InvalidParams, match="nothing was written") as refused:
        await session.add_items([{"role": "user", "content": "fine"}, item])  # type: ignore[list-item]
    assert where in str(refused.value)
    assert await session.get_items() == []


async def test_deep_and_non_dict_items_are_refused(a2m_async_client: AsyncA2MClient) -> None:
    session = A2MSession("strict", a2m_async_client)
    deep: dict[str, object] = {}
    node = deep
    for _ in range(10_000):
        node["x"] = {}
        node = node["x"]  # type: ignore[assignment]
    with pytest.raises(InvalidParams, match="nests deeper"):
        await session.add_items([{"role": "user", "content": "x", "extra": deep}])
    with pytest.raises(InvalidParams, match="not an input item"):
        await session.add_items(["just text"])
    assert await session.get_items() == []


async def test_damaged_records_are_skipped_and_popped_around(
    a2m_async_client: AsyncA2MClient, caplog: pytest.LogCaptureFixture
) -> None:
    session = A2MSession("damaged", a2m_async_client)
    items = every_kind_of_item()[:3]
    await session.add_items(items)
    hand_written = {
        "content": "typed by hand",
        "session": "damaged",
        "metadata": {
            "namespace": "openai-agents",
            "source_framework": "openai-agents",
            "session": "damaged",
        },
    }
    await a2m_async_client.remember(hand_written)
    with caplog.at_level(logging.WARNING, logger="a2m_openai_agents"):
        assert await session.get_items() == items
        assert await session.get_items(limit=2) == items[-2:]
        assert await session.pop_item() == items[-1]
    assert "holds no input item" in caplog.text
    assert await session.get_items() == items[:2]
    # the hand-written record is left in place, still readable by everyone
    assert [r.content for r in (await a2m_async_client.recall("typed by hand")).records] == [
        "typed by hand"
    ]


async def test_the_constructor_touches_no_network() -> None:
    session = A2MSession("offline", url="http://127.0.0.1:9/", timeout=2)
    with pytest.raises(A2MConnectionError):
        await session.get_items()
    await session.aclose()


async def test_a_given_client_is_never_closed(a2m_http_url: str) -> None:
    async with AsyncA2MClient(a2m_http_url) as client:
        session = A2MSession("mine", client)
        await session.add_items([{"role": "user", "content": "hello"}])
        await session.aclose()
        assert await A2MSession("mine", client).get_items() == [
            {"role": "user", "content": "hello"}
        ]


async def test_bad_arguments_are_refused_plainly() -> None:
    with pytest.raises(TypeError, match="session_id must be a string"):
        A2MSession(7)  # type: ignore[arg-type]
    with pytest.raises(InvalidParams, match="namespace"):
        A2MSession("s", url="http://127.0.0.1:9/", namespace="Not A Namespace!")
    with pytest.raises(TypeError, match="AsyncA2MClient"):
        A2MSession("s", object())  # type: ignore[arg-type]


async def test_a_history_past_one_call_on_a_server_that_cannot_page_says_so(
    a2m_http_server_factory,  # type: ignore[no-untyped-def]
) -> None:
    config = ServerConfig(limits=LimitsConfig(max_recall_limit=5), timeline_cursor=False)
    url = a2m_http_server_factory(config=config)
    async with AsyncA2MClient(url) as client:
        session = A2MSession("long", client)
        await session.add_items([{"role": "user", "content": f"m{n}"} for n in range(7)])
        with pytest.warns(IncompleteHistoryWarning):
            found = await session.get_items()
        assert [item["content"] for item in found] == [f"m{n}" for n in range(2, 7)]
        assert [i["content"] for i in await session.get_items(limit=3)] == ["m4", "m5", "m6"]


async def test_a_long_history_pages_where_the_server_pages(a2m_http_server_factory) -> None:  # type: ignore[no-untyped-def]
    config = ServerConfig(limits=LimitsConfig(max_recall_limit=5))
    url = a2m_http_server_factory(config=config)
    async with AsyncA2MClient(url) as client:
        session = A2MSession("long", client)
        await session.add_items([{"role": "user", "content": f"m{n}"} for n in range(12)])
        assert [i["content"] for i in await session.get_items()] == [f"m{n}" for n in range(12)]
        assert [i["content"] for i in await session.get_items(limit=8)] == [
            f"m{n}" for n in range(4, 12)
        ]


async def test_another_framework_reads_the_conversation_with_its_provenance(
    a2m_http_url: str,
) -> None:
    from a2m_langchain import A2MRetriever

    async with AsyncA2MClient(a2m_http_url) as client:
        session = A2MSession("trip", client, agent="concierge")
        await session.add_items(every_kind_of_item())
    with A2MClient(a2m_http_url) as reader:
        documents = A2MRetriever(client=reader, k=5).invoke("weather Lyon sunny")
    by_text = {doc.page_content: doc.metadata for doc in documents}
    answer = by_text["It is sunny in Lyon, 24°C."]
    assert answer["source_framework"] == "openai-agents"
    assert answer["source_agent"] == "concierge"
    assert answer["role"] == "assistant"
    assert answer["session"] == "trip"
    assert by_text['get_weather({"city": "Lyon"})']["role"] == "assistant"
    assert by_text["Sunny, 24°C"]["role"] == "tool"


def test_one_session_serves_several_event_loops(a2m_http_url: str) -> None:
    """Sync callers run each call on a loop of their own (``asyncio.run``, worker threads):
    the session, and the client it opened, serve them in turn and at once."""
    from concurrent.futures import ThreadPoolExecutor

    from agents import Agent, Runner
    from oai_fake_model import ScriptedModel, said

    model = ScriptedModel([[said("one")], [said("two")]])
    agent = Agent(name="looper", model=model)
    session = A2MSession("loops", url=a2m_http_url)
    for text in ("first", "second"):
        asyncio.run(Runner.run(agent, text, session=session))

    def add(n: int) -> None:
        asyncio.run(session.add_items([{"role": "user", "content": f"thread {n}"}]))

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(add, range(4)))
    stored = asyncio.run(session.get_items())
    texts = [
        item["content"] if isinstance(item["content"], str) else item["content"][0]["text"]
        for item in stored
    ]
    assert texts[:4] == ["first", "one", "second", "two"]
    assert sorted(texts[4:]) == [f"thread {n}" for n in range(4)]
    asyncio.run(session.aclose())


async def test_principals_with_one_session_id_keep_their_own_items(
    a2m_http_server_factory,  # type: ignore[no-untyped-def]
) -> None:
    # Over an authenticated connection a session id names each principal's own
    # conversation: bob's items, and bob's pops and clears, never reach alice's.
    url = a2m_http_server_factory(tokens={"alice-token": "alice", "bob-token": "bob"})
    async with (
        AsyncA2MClient(url, token="alice-token") as alice,
        AsyncA2MClient(url, token="bob-token") as bob,
    ):
        mine, theirs = A2MSession("s1", alice), A2MSession("s1", bob)
        await mine.add_items([{"role": "user", "content": "alice says hi"}])
        await theirs.add_items([{"role": "user", "content": "bob says hi"}])
        assert [i["content"] for i in await mine.get_items()] == ["alice says hi"]
        assert [i["content"] for i in await theirs.get_items()] == ["bob says hi"]
        assert (await theirs.pop_item())["content"] == "bob says hi"  # type: ignore[index]
        await theirs.clear_session()
        assert [i["content"] for i in await A2MSession("s1", alice).get_items()] == [
            "alice says hi"
        ]
