"""A2MChatMessageHistory: every message type round-trips, one call per add, one
conversation per session, and it works where LangChain expects a chat history."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_support import (
    assert_same_messages,
    counting,
    deprecated_baseline,
    every_message_type,
)

from a2m import A2MClient, AsyncA2MClient, IncompleteListing
from a2m.adapter import A2MAdapter
from a2m_langchain import A2MChatMessageHistory
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_server.server import A2MServer
from a2m_testing.servers import Servers


def in_memory() -> InMemoryChatMessageHistory:
    with deprecated_baseline():
        return InMemoryChatMessageHistory()


def test_every_message_type_round_trips_exactly(client: A2MClient) -> None:
    history = A2MChatMessageHistory("conv-1", client)
    messages = every_message_type()
    history.add_messages(messages)
    assert_same_messages(history.messages, messages)


async def test_every_message_type_round_trips_exactly_async(aclient: AsyncA2MClient) -> None:
    history = A2MChatMessageHistory("conv-1", aclient)
    messages = every_message_type()
    await history.aadd_messages(messages)
    assert_same_messages(await history.aget_messages(), messages)


def test_side_by_side_with_in_memory_history(client: A2MClient) -> None:
    ours, theirs = A2MChatMessageHistory("conv-1", client), in_memory()
    for history in (ours, theirs):
        history.add_user_message("hi")
        history.add_ai_message("hello")
        history.add_message(HumanMessage("how are you?"))
        history.add_messages([AIMessage("fine"), HumanMessage("good")])
    assert_same_messages(ours.messages, theirs.messages)
    assert str(ours) == str(theirs)
    ours.clear()
    theirs.clear()
    assert ours.messages == theirs.messages == []


def test_add_messages_is_one_remember(client: A2MClient, monkeypatch: pytest.MonkeyPatch) -> None:
    history = A2MChatMessageHistory("conv-1", client, agent="planner")
    history.add_messages([HumanMessage("warm-up")])  # the first call also describes
    with counting(monkeypatch, client) as calls:
        history.add_messages(every_message_type())
        assert dict(calls) == {"remember": 1}
        assert len(history.messages) == len(every_message_type()) + 1
        assert calls["timeline"] == 1
        assert sum(calls.values()) == 2
        history.clear()
        assert calls["forget"] == 1
        assert sum(calls.values()) == 3


def test_records_carry_role_session_group_and_provenance(client: A2MClient) -> None:
    history = A2MChatMessageHistory("conv-9", client, namespace="app/chat", agent="planner")
    history.add_messages([HumanMessage("ping"), AIMessage("pong")])
    history.add_messages([HumanMessage("again")])
    records = client.timeline(where={"session": "conv-9"}).records
    assert [(r.role, r.content, r.session, r.tier) for r in records] == [
        ("user", "ping", "conv-9", "episodic"),
        ("assistant", "pong", "conv-9", "episodic"),
        ("user", "again", "conv-9", "episodic"),
    ]
    assert records[0].group == records[1].group != records[2].group
    for record in records:
        meta = record.metadata or {}
        assert meta["source_framework"] == "langchain"
        assert meta["source_agent"] == "planner"
        assert meta["namespace"] == "app/chat"
        assert meta["type"] == "episodic"
        assert meta["session"] == "conv-9"
        # owners are kept where the server declares scopes (in-process; unauthenticated
        # HTTP and REST do not): the agent is in the metadata everywhere
        assert record.owner == ("planner" if client.supports("scopes") else None)


def test_a_turn_is_one_group_tool_calls_and_results_included(client: A2MClient) -> None:
    history = A2MChatMessageHistory("conv-1", client)
    history.add_messages(
        [
            HumanMessage("weather in Paris?"),
            AIMessage("", tool_calls=[{"name": "weather", "args": {}, "id": "call-1"}]),
            ToolMessage("18C", tool_call_id="call-1"),
            AIMessage("18C in Paris."),
            HumanMessage("thanks"),
            AIMessage("you are welcome"),
        ]
    )
    groups = [r.group for r in client.timeline(where={"session": "conv-1"}).records]
    assert len(set(groups[:4])) == 1
    assert len(set(groups[4:])) == 1
    assert groups[0] != groups[4]


def test_clear_removes_only_this_session_in_this_namespace(client: A2MClient) -> None:
    mine = A2MChatMessageHistory("conv-1", client, namespace="app/a")
    other_session = A2MChatMessageHistory("conv-2", client, namespace="app/a")
    other_namespace = A2MChatMessageHistory("conv-1", client, namespace="app/b")
    for history in (mine, other_session, other_namespace):
        history.add_messages([HumanMessage(f"in {history.namespace} {history.session_id}")])
    client.remember({"content": "raw note in conv-1", "session": "conv-1"})
    mine.clear()
    assert mine.messages == []
    assert [m.text for m in other_session.messages] == ["in app/a conv-2"]
    assert [m.text for m in other_namespace.messages] == ["in app/b conv-1"]
    assert [r.content for r in client.timeline(where={"session": "conv-1"}).records] == [
        "in app/b conv-1",
        "raw note in conv-1",
    ]


async def test_async_clear_and_recent(aclient: AsyncA2MClient) -> None:
    history = A2MChatMessageHistory("conv-1", aclient)
    await history.aadd_messages([HumanMessage(str(n)) for n in range(6)])
    assert [m.text for m in await history.arecent_messages(2)] == ["4", "5"]
    await history.aclear()
    assert await history.aget_messages() == []


def test_bad_input_writes_nothing(client: A2MClient) -> None:
    history = A2MChatMessageHistory("conv-1", client)
    with pytest.raises(Exception, match="LangChain messages"):
        history.add_messages([HumanMessage("fine"), "not a message"])  # type: ignore[list-item]
    assert history.messages == []


def test_a_sync_method_on_an_async_only_history_says_what_to_call() -> None:
    async_only = A2MChatMessageHistory("conv-1", AsyncA2MClient("http://127.0.0.1:9/"))
    with pytest.raises(RuntimeError, match="aadd_messages"):
        async_only.add_messages([HumanMessage("x")])
    sync_only = A2MChatMessageHistory("conv-1", A2MClient("http://127.0.0.1:9/"))
    with pytest.raises(RuntimeError, match="async_client="):
        asyncio.run(sync_only.aget_messages())


def _chain(histories: dict[str, object], factory: object) -> RunnableWithMessageHistory:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Be brief."), MessagesPlaceholder("history"), ("human", "{question}")]
    )
    model = FakeListChatModel(responses=["Paris.", "About 2.1 million people."])
    with deprecated_baseline():  # deprecated in langchain-core 1.x, still what users run
        return RunnableWithMessageHistory(
            prompt | model,  # type: ignore[arg-type]
            factory,  # type: ignore[arg-type]
            input_messages_key="question",
            history_messages_key="history",
        )


def test_runnable_with_message_history_side_by_side(client: A2MClient) -> None:
    theirs: dict[str, InMemoryChatMessageHistory] = {}

    def ours_for(session_id: str) -> A2MChatMessageHistory:
        return A2MChatMessageHistory(session_id, client)

    def theirs_for(session_id: str) -> InMemoryChatMessageHistory:
        return theirs.setdefault(session_id, in_memory())

    config = {"configurable": {"session_id": "s-1"}}
    for factory in (ours_for, theirs_for):
        chain = _chain({}, factory)
        assert chain.invoke({"question": "Capital of France?"}, config).content == "Paris."
        chain.invoke({"question": "How many live there?"}, config)
    assert_same_messages(ours_for("s-1").messages, theirs["s-1"].messages, ids=False)
    assert [m.text for m in ours_for("s-1").messages] == [
        "Capital of France?",
        "Paris.",
        "How many live there?",
        "About 2.1 million people.",
    ]


async def test_runnable_with_message_history_async(aclient: AsyncA2MClient) -> None:
    chain = _chain({}, lambda session_id: A2MChatMessageHistory(session_id, aclient))
    config = {"configurable": {"session_id": "s-1"}}
    await chain.ainvoke({"question": "Capital of France?"}, config)
    await chain.ainvoke({"question": "How many live there?"}, config)
    history = await A2MChatMessageHistory("s-1", aclient).aget_messages()
    assert [m.type for m in history] == ["human", "ai", "human", "ai"]


def test_other_frameworks_read_the_conversation_as_entries(client: A2MClient) -> None:
    A2MChatMessageHistory("conv-1", client, namespace="app/chat").add_messages(
        [HumanMessage("the launch moved to friday"), AIMessage("noted, friday")]
    )
    crew = A2MAdapter(client, "crew/planning", source_framework="crewai")
    (hit,) = crew.query(text="launch friday", top_k=1)
    assert hit.entry.namespace == "app/chat"
    assert hit.entry.type == "episodic"
    assert hit.entry.value == "the launch moved to friday"
    assert hit.entry.meta.source_framework == "langchain"
    listed = crew.list(namespace="app/chat", recursive=True).entries
    assert [e.value for e in listed] == ["the launch moved to friday", "noted, friday"]


def test_over_authenticated_http_the_principal_owns_the_conversation(
    servers: Servers, server: A2MServer
) -> None:
    url = servers.http_url(server, tokens={"alice-token": "alice", "bob-token": "bob"})
    with A2MClient(url, token="alice-token") as alice, A2MClient(url, token="bob-token") as bob:
        A2MChatMessageHistory("conv-1", alice).add_messages([HumanMessage("alice here")])
        A2MChatMessageHistory("conv-1", bob).add_messages([HumanMessage("bob here")])
        assert [r.owner for r in alice.timeline(where={"session": "conv-1"}).records] == ["alice"]
        assert [m.text for m in A2MChatMessageHistory("conv-1", alice).messages] == ["alice here"]
        A2MChatMessageHistory("conv-1", bob).clear()
        assert [m.text for m in A2MChatMessageHistory("conv-1", alice).messages] == ["alice here"]


@pytest.mark.parametrize("paging", [True, False])
async def test_a_long_conversation_reads_back_whole_by_cursor(
    servers: Servers, monkeypatch: pytest.MonkeyPatch, paging: bool
) -> None:
    config = ServerConfig(limits=LimitsConfig(max_recall_limit=5), timeline_cursor=paging)
    server = servers.server(config)
    said = [HumanMessage(f"message {n}") for n in range(12)]
    with A2MClient.in_process(server) as client:
        history = A2MChatMessageHistory("conv-1", client)
        history.add_messages(said)
        # with a cursor, every page of 5; without, the newest 5, and a warning saying so
        capped = contextlib.nullcontext() if paging else pytest.warns(IncompleteListing)
        with counting(monkeypatch, client) as calls, capped:
            got = history.messages
        assert [m.text for m in got] == [m.text for m in (said if paging else said[-5:])]
        assert calls["timeline"] == (3 if paging else 1)
        assert [m.text for m in history.recent_messages(2)] == ["message 10", "message 11"]
    async with AsyncA2MClient.in_process(server) as aclient:
        capped = contextlib.nullcontext() if paging else pytest.warns(IncompleteListing)
        with capped:
            got = await A2MChatMessageHistory("conv-1", aclient).aget_messages()
        assert len(got) == (12 if paging else 5)
