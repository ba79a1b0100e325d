"""The AutoGen components on every kind of conformant A2M server, not only the bundled
one's defaults: a plain 0.1 server (no timeline cursor, no ``where`` operators, no event
log), one declaring no ``max_recall_limit``, one with a small ``max_recall_limit`` (with
and without a cursor), one with a small ``max_records_per_call``, and ones lacking an
optional capability. Each answers as on the default server, or says why it cannot (a
transcript longer than a server without cursor returns warns). The server refuses a read
past its ``max_recall_limit`` and a batch past its ``max_records_per_call``, so a scenario
that completes asked for neither."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import MemoryQueryEvent, TextMessage
from autogen_core import CancellationToken
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.models import AssistantMessage, UserMessage
from autogen_ext.models.replay import ReplayChatCompletionClient

from a2m import A2MConnectionError, AsyncA2MClient, IncompleteListing, QuotaExceeded
from a2m_autogen import A2MChatCompletionContext, A2MMemory
from a2m_autogen.agentchat import A2MTranscript
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_server.server import A2MServer
from a2m_testing.servers import Intercepted
from a2m_testing.shapes import SERVER_SHAPES, SMALL_RECALL, SMALL_RECALL_NO_CURSOR, lacking

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("store_backend")]

SHAPES = {
    **SERVER_SHAPES,
    **lacking("keys", "tiers", "sessions", "scopes", "embeddings", "prompt"),
}

TEXT = MemoryMimeType.TEXT
# Each query below matches one fact by words no other fact holds.
FACTS = [
    "The user prefers window seats on flights",
    "The user flies with a vegetarian meal",
    "The user collects miles with one airline",
    "The user sleeps through night trains",
]
QUERIES = {
    "window seats": FACTS[0],
    "vegetarian meal": FACTS[1],
    "collects miles": FACTS[2],
}


@asynccontextmanager
async def client_of(**config: Any) -> AsyncIterator[AsyncA2MClient]:
    """An async client of an in-process server shaped ``config``."""
    with A2MServer(ServerConfig(**config)) as server:
        async with AsyncA2MClient.in_process(server) as client:
            yield client


def _message(i: int) -> UserMessage | AssistantMessage:
    if i % 2 == 0:
        return UserMessage(content=f"question {i}", source="user")
    return AssistantMessage(content=f"answer {i}", source="assistant")


async def scenario(client: AsyncA2MClient) -> dict[str, Any]:
    """Every component member, the memory inside a real AssistantAgent on a replayed
    model; what each answered."""
    seen: dict[str, Any] = {}
    memory = A2MMemory(client, namespace="travel/prefs", k=3)
    other = A2MMemory(client, namespace="travel/other")
    await memory.add(MemoryContent(content=FACTS[0], mime_type=TEXT))
    await memory.add_many(
        [
            MemoryContent(content=f, mime_type=TEXT, metadata={"rank": rank})
            for rank, f in enumerate(FACTS[1:3], 1)
        ]
    )
    await other.add(MemoryContent(content=FACTS[3], mime_type=TEXT))
    seen["best"] = {query: (await memory.query(query)).results[0].content for query in QUERIES}
    beneath = await memory.query("night trains", k=1, namespace="travel")
    seen["beneath"] = [c.content for c in beneath.results]
    # Run by the server where it declares operators, else here on its candidates.
    ranked = await memory.query("the user", where={"rank": {"$gte": 2}})
    seen["by operator"] = [c.content for c in ranked.results]
    elsewhere = await memory.query("night trains", namespace="travel/prefs")
    seen["elsewhere"] = FACTS[3] in [c.content for c in elsewhere.results]

    model = ReplayChatCompletionClient(["Booked 14A."])
    agent = AssistantAgent("travel_agent", model_client=model, memory=[memory])
    result = await agent.run(task="Book my usual window seats")
    (event,) = [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
    seen["agent recalled"] = event.content[0].content
    seen["agent answered"] = result.messages[-1].to_text()

    context = A2MChatCompletionContext(client, session="s1")
    for i in range(5):
        await context.add_message(_message(i))
    reloaded = A2MChatCompletionContext(client, session="s1")
    seen["transcript"] = [m.content for m in await reloaded.get_messages()]

    transcript = A2MTranscript(client, session="t1")
    seen["recorded"] = await transcript.record(
        [TextMessage(content=f"turn {i}", source="agent") for i in range(5)]
    )
    seen["turns"] = [m.to_text() for m in await A2MTranscript(client, session="t1").messages()]

    await memory.clear()
    seen["cleared"] = [c.content for c in (await memory.query("window seats")).results]
    seen["other kept"] = len((await other.query("night trains", k=1)).results)
    await context.clear()
    seen["context cleared"] = await A2MChatCompletionContext(client, session="s1").get_messages()
    return seen


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def on_the_default_server() -> dict[str, Any]:
    async with client_of() as client:
        return await scenario(client)


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_every_component_answers_as_on_the_default_server(
    shape: str, on_the_default_server: dict[str, Any]
) -> None:
    async with client_of(**SHAPES[shape]) as client:
        assert await scenario(client) == on_the_default_server


async def test_a_small_recall_limit_bounds_the_default_k() -> None:
    """``max_recall_limit`` 3: a memory with AutoGen's default ``k`` (5), or a query
    asking for 10, recalls the 3 the server allows, and an agent using it runs; each was
    refused with QUOTA_EXCEEDED."""
    async with client_of(**SMALL_RECALL) as client:
        memory = A2MMemory(client, namespace="travel/prefs")
        await memory.add_many([MemoryContent(content=f, mime_type=TEXT) for f in FACTS])
        assert len((await memory.query("the user")).results) == 3
        assert len((await memory.query("the user", k=10)).results) == 3
        assert len((await memory.query("the user", where={"seq": {"$gt": 0}})).results) == 0
        model = ReplayChatCompletionClient(["Booked."])
        agent = AssistantAgent("travel_agent", model_client=model, memory=[memory])
        result = await agent.run(task="What does the user prefer?")
        (event,) = [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
        assert len(event.content) == 3


async def test_a_capped_server_without_cursor_warns_where_a_transcript_is_short() -> None:
    """``max_recall_limit`` 3 and no cursor: a transcript of 5 loads its newest 3 and
    warns; one of 2 loads whole, silently; recalls answer as with a cursor."""
    async with client_of(**SMALL_RECALL_NO_CURSOR) as client:
        context = A2MChatCompletionContext(client, session="long")
        for i in range(5):
            await context.add_message(_message(i))
        with pytest.warns(IncompleteListing, match="max_recall_limit"):
            loaded = await A2MChatCompletionContext(client, session="long").get_messages()
        assert [m.content for m in loaded] == ["question 2", "answer 3", "question 4"]
        short = A2MTranscript(client, session="short")
        await short.record([TextMessage(content=f"turn {i}", source="a") for i in range(2)])
        turns = await A2MTranscript(client, session="short").messages()
        assert [m.to_text() for m in turns] == ["turn 0", "turn 1"]
        memory = A2MMemory(client, namespace="travel/prefs")
        await memory.add_many([MemoryContent(content=f, mime_type=TEXT) for f in FACTS])
        assert [c.content for c in (await memory.query("window seats")).results] == FACTS[:1]
        assert len((await memory.query("the user")).results) == 3


@pytest.mark.parametrize("per_call", [1000, 2])
async def test_add_many_the_server_refuses_writes_nothing(per_call: int) -> None:
    """A fourth content longer than the server stores: on a server taking all four in one
    call nothing is written, and on one taking 2 a call the first call's two records are
    taken back, so the memory is as it was either way."""
    limits = LimitsConfig(max_records_per_call=per_call, max_content_length=60)
    async with client_of(limits=limits) as client:
        memory = A2MMemory(client, namespace="travel/prefs")
        await memory.add(MemoryContent(content=FACTS[0], mime_type=TEXT))
        contents = [MemoryContent(content=f, mime_type=TEXT) for f in FACTS[1:]]
        with pytest.raises(QuotaExceeded, match="max_content_length"):
            await memory.add_many([*contents, MemoryContent(content="x" * 61, mime_type=TEXT)])
        stored = (await client.timeline(key_prefix="travel/prefs/")).records
        assert [r.content for r in stored] == [FACTS[0]]


async def test_a_transcript_recorded_in_several_calls_is_all_or_nothing() -> None:
    """Two messages a call and a fifth longer than the server stores: what the first two
    calls created is removed again, and ``turn 0``, recorded before and again in this
    run, stays (a message is one record by its id). Recording the run without the long
    message then stores every turn once."""
    limits = LimitsConfig(max_records_per_call=2, max_content_length=40)
    run = [TextMessage(content=f"turn {i}", source="a") for i in range(4)]
    too_long = TextMessage(content="x" * 41, source="a")
    async with client_of(limits=limits) as client:
        transcript = A2MTranscript(client, session="t")
        await transcript.record(run[:1])
        before = (await client.timeline()).records
        with pytest.raises(QuotaExceeded, match="max_content_length"):
            await transcript.record([*run, too_long])
        assert (await client.timeline()).records == before
        assert await transcript.record(run) == 4
        turns = await A2MTranscript(client, session="t").messages()
        assert [m.to_text() for m in turns] == [f"turn {i}" for i in range(4)]


async def test_loading_a_saved_context_keeps_the_old_one_until_the_new_is_written() -> None:
    """A context holding two messages is given a saved state of five, the last longer than
    the server stores, on a server taking two a call: ``load_state`` fails, what its first
    two calls wrote is taken back, and the two messages are still the context's, in the
    store and in memory. The state without the long message then replaces them."""
    limits = LimitsConfig(max_records_per_call=2, max_content_length=40)
    async with client_of(limits=limits) as client:
        source = A2MChatCompletionContext(client, session="saved")
        for i in range(4):
            await source.add_message(_message(i))
        state = dict(await source.save_state())
        too_long = UserMessage(content="x" * 41, source="user").model_dump()
        target = A2MChatCompletionContext(client, session="restored")
        for i in (7, 8):
            await target.add_message(_message(i))
        with pytest.raises(QuotaExceeded, match="max_content_length"):
            await target.load_state({**state, "messages": [*state["messages"], too_long]})
        held = [m.content for m in await target.get_messages()]
        assert held == [_message(7).content, _message(8).content]
        reloaded = A2MChatCompletionContext(client, session="restored")
        assert [m.content for m in await reloaded.get_messages()] == held
        await target.load_state(state)
        again = A2MChatCompletionContext(client, session="restored")
        assert [m.content for m in await again.get_messages()] == [
            _message(i).content for i in range(4)
        ]


class _ForgetOutage(httpx.AsyncBaseTransport):
    """Real HTTP, except that the server is unreachable for ``memory/forget`` once
    ``down`` is set: a server going away between a write and the removal after it."""

    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self.down = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.down and json.loads(request.content or b"{}").get("method") == "memory/forget":
            raise httpx.ConnectError("connection refused", request=request)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def test_a_saved_context_whose_old_records_could_not_be_removed_reads_back_alone(
    a2m_http_url: str,
) -> None:
    """``load_state`` writes the saved transcript, then the server is gone when the old
    records are to be removed: the call raises, and every context on the session reads
    the saved transcript alone, never the old messages mixed in. The next ``load_state``
    removes what was left."""
    outage = _ForgetOutage()
    async with (
        httpx.AsyncClient(transport=outage) as http,
        AsyncA2MClient(a2m_http_url, http_client=http, max_retries=0) as client,
    ):
        source = A2MChatCompletionContext(client, session="saved")
        for i in range(4):
            await source.add_message(_message(i))
        state = dict(await source.save_state())
        saved = [_message(i).content for i in range(4)]
        target = A2MChatCompletionContext(client, session="restored")
        for i in (7, 8, 9):
            await target.add_message(_message(i))
        outage.down = True
        with pytest.raises(A2MConnectionError):
            await target.load_state(state)
        outage.down = False
        assert [m.content for m in await target.get_messages()] == saved
        reloaded = A2MChatCompletionContext(client, session="restored")
        assert [m.content for m in await reloaded.get_messages()] == saved
        await reloaded.add_message(_message(10))
        saved.append(_message(10).content)
        restored = {"transcript": "restored"}
        assert len((await client.timeline(where=restored)).records) == 3 + 5
        again = A2MChatCompletionContext(client, session="restored")
        assert [m.content for m in await again.get_messages()] == saved
        await again.load_state(await again.save_state())  # removes what was left
        assert len((await client.timeline(where=restored)).records) == 5
        last = A2MChatCompletionContext(client, session="restored")
        assert [m.content for m in await last.get_messages()] == saved


async def test_add_many_cancelled_part_way_takes_back_what_the_server_stored() -> None:
    """Two contents a call; the second call is stored but its answer is slow, and the
    caller cancels meanwhile: ``add_many`` raises ``CancelledError`` and both calls'
    records are taken back, the one in flight included."""
    second_stored = threading.Event()
    remembered = 0

    def slow_second_answer(request: dict[str, Any], answer: Any) -> str | None:
        nonlocal remembered
        text = answer()
        if request.get("method") == "memory/remember":
            remembered += 1
            if remembered == 2:  # stored; its answer is slow to come back
                second_stored.set()
                time.sleep(0.5)
        return text  # type: ignore[no-any-return]

    with A2MServer(ServerConfig(limits=LimitsConfig(max_records_per_call=2))) as server:
        async with AsyncA2MClient.in_process(Intercepted(server, slow_second_answer)) as client:
            memory = A2MMemory(client, namespace="travel/prefs")
            token = CancellationToken()
            adding = asyncio.ensure_future(
                memory.add_many([MemoryContent(content=f, mime_type=TEXT) for f in FACTS], token)
            )
            assert await asyncio.to_thread(second_stored.wait, 10)
            token.cancel()
            with pytest.raises(asyncio.CancelledError):
                await adding
            assert (await client.timeline()).records == []
