"""Team memory: AutoGen teams of several AssistantAgents sharing one A2M store. What one
agent says is recorded, what one writes the others read, and after a restart (a new
server process on the same database, new clients, new agents) the transcript replays in
order from the store."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.messages import BaseChatMessage, MemoryQueryEvent
from autogen_agentchat.teams import RoundRobinGroupChat, SelectorGroupChat
from autogen_core.memory import MemoryContent
from autogen_core.models import AssistantMessage, LLMMessage, SystemMessage, UserMessage
from autogen_ext.models.replay import ReplayChatCompletionClient

from a2m import AsyncA2MClient, IncompleteListing
from a2m_autogen import PROVENANCE_KEY, A2MChatCompletionContext, A2MMemory
from a2m_autogen.agentchat import A2MTranscript
from a2m_server import A2MServer
from a2m_testing.servers import serve_http

pytestmark = pytest.mark.anyio

SESSION = "trip-1"
REPLIES = {
    "researcher": "Finding: the Lisbon tile museum is closed on mondays.",
    "planner": "Plan: monday is castle day, the tile museum waits for tuesday.",
    "writer": "Itinerary: castle on monday, tile museum on tuesday.",
}


@contextmanager
def served(db: Path) -> Iterator[str]:
    """A server process's lifetime: a server on ``db``, over HTTP, then gone."""
    with A2MServer(db=db) as server, serve_http(server) as url:
        yield url


def agent(
    client: AsyncA2MClient, name: str, replies: list[str], session: str = SESSION
) -> tuple[AssistantAgent, ReplayChatCompletionClient, A2MChatCompletionContext]:
    model = ReplayChatCompletionClient(replies)
    context = A2MChatCompletionContext(client, session=session, namespace=f"trip/{name}")
    memory = A2MMemory(client, namespace=f"trip/{name}/notes", source_agent=name)
    built = AssistantAgent(name, model_client=model, model_context=context, memory=[memory])
    return built, model, context


def memory_blocks(model: ReplayChatCompletionClient) -> list[str]:
    return [
        message.content
        for call in model.create_calls
        for message in call["messages"]
        if isinstance(message, SystemMessage) and "Relevant memory" in message.content
    ]


async def test_a_round_robin_team_then_a_selector_team_share_one_store(tmp_path: Path) -> None:
    db = tmp_path / "team.db"

    # --- the first run: a round-robin team of three, its messages recorded ------------
    with served(db) as url:
        async with AsyncA2MClient(url) as client:
            team = {name: agent(client, name, [reply]) for name, reply in REPLIES.items()}
            chat = RoundRobinGroupChat(
                [built for built, _, _ in team.values()],
                termination_condition=MaxMessageTermination(4),
            )
            transcript = A2MTranscript(client, session=SESSION, namespace="trip/transcript")
            streamed = [
                item async for item in transcript.stream(chat.run_stream(task="Plan a Lisbon trip"))
            ]
            result = streamed[-1]
            assert isinstance(result, TaskResult)
            said = [m for m in result.messages if isinstance(m, BaseChatMessage)]
            assert [m.source for m in said] == ["user", "researcher", "planner", "writer"]
            before = {name: await context.get_messages() for name, (_, _, context) in team.items()}

            # What the researcher said, the writer's memory recalled from the store.
            (_, writer_model, _) = team["writer"]
            assert any("closed on mondays" in block for block in memory_blocks(writer_model))

    # --- after a restart: the transcript replays in order ------------------------------
    with served(db) as url:
        async with AsyncA2MClient(url) as client:
            replayed = await A2MTranscript(
                client, session=SESSION, namespace="trip/transcript"
            ).messages()
            assert [(m.id, m.source, m.to_text()) for m in replayed] == [
                (m.id, m.source, m.to_text()) for m in said
            ]
            records = (await client.timeline(key_prefix=f"trip/transcript/{SESSION}/")).records
            roles = {r.metadata["source_agent"]: r.role for r in records if r.metadata}
            assert roles == {
                "user": "user",
                "researcher": "assistant",
                "planner": "assistant",
                "writer": "assistant",
            }
            assert {r.session for r in records} == {SESSION}

            # Each agent's own context comes back as it was, minus the recalled-memory
            # system messages (derived from the store, so not stored in it).
            for name, messages in before.items():
                restored = A2MChatCompletionContext(
                    client, session=SESSION, namespace=f"trip/{name}"
                )
                expected = [m for m in messages if not isinstance(m, SystemMessage)]
                assert await restored.get_messages() == expected

            # A restarted planner continues the conversation it had.
            planner, planner_model, _ = agent(client, "planner", ["Tuesday it is."])
            await planner.run(task="Confirm the museum day")
            (call,) = planner_model.create_calls
            seen = [m for m in call["messages"] if not isinstance(m, SystemMessage)]
            earlier = [m for m in before["planner"] if not isinstance(m, SystemMessage)]
            assert seen[: len(earlier)] == earlier
            assert isinstance(seen[-1], UserMessage)
            assert seen[-1].content == "Confirm the museum day"

            # --- a selector team of three new agents reads what the first team wrote ---
            checkers = {
                name: agent(client, name, [reply], session="trip-2")
                for name, reply in {
                    "fact_checker": "Confirmed: closed on mondays.",
                    "editor": "Edited.",
                    "critic": "Fine.",
                }.items()
            }
            selector = SelectorGroupChat(
                [built for built, _, _ in checkers.values()],
                model_client=ReplayChatCompletionClient(["fact_checker"]),
                termination_condition=MaxMessageTermination(2),
            )
            checked = await selector.run(task="Is the tile museum open on mondays?")
            assert [m.source for m in checked.messages if isinstance(m, BaseChatMessage)] == [
                "user",
                "fact_checker",
            ]
            (_, checker_model, _) = checkers["fact_checker"]
            assert any("closed on mondays" in block for block in memory_blocks(checker_model))
            (event,) = [m for m in checked.messages if isinstance(m, MemoryQueryEvent)]
            speakers = {
                c.metadata[PROVENANCE_KEY].get("source_agent") for c in event.content if c.metadata
            }
            assert "researcher" in speakers
            # A recorded message reads back as its text, not as the message's envelope.
            assert REPLIES["researcher"] in [c.content for c in event.content]


async def test_recording_a_run_twice_stores_each_message_once(client: AsyncA2MClient) -> None:
    solo, _, _ = agent(client, "solo", ["Done."])
    result = await solo.run(task="Do the thing")
    transcript = A2MTranscript(client, session="solo-1")
    assert await transcript.record(result) == 2
    assert await transcript.record(result) == 2
    replayed = await transcript.messages()
    assert [m.source for m in replayed] == ["user", "solo"]


async def test_a_context_persists_its_initial_messages_and_clears_its_session_only(
    client: AsyncA2MClient,
) -> None:
    opening: list[LLMMessage] = [
        SystemMessage(content="You plan trips."),
        UserMessage(content="hi", source="user"),
    ]
    first = A2MChatCompletionContext(client, session="s1", initial_messages=opening)
    other = A2MChatCompletionContext(client, session="s2")
    await first.add_message(AssistantMessage(content="hello", source="planner"))
    await other.add_message(UserMessage(content="elsewhere", source="user"))
    again = A2MChatCompletionContext(client, session="s1")
    assert await again.get_messages() == [
        *opening,
        AssistantMessage(content="hello", source="planner"),
    ]
    await again.clear()
    assert await A2MChatCompletionContext(client, session="s1").get_messages() == []
    assert len(await A2MChatCompletionContext(client, session="s2").get_messages()) == 1


async def test_a_buffered_context_shows_the_last_messages(client: AsyncA2MClient) -> None:
    context = A2MChatCompletionContext(client, session="s1", buffer_size=2)
    for i in range(5):
        await context.add_message(UserMessage(content=f"m{i}", source="user"))
    assert [m.content for m in await context.get_messages()] == ["m3", "m4"]
    reloaded = A2MChatCompletionContext(client, session="s1", buffer_size=3)
    assert [m.content for m in await reloaded.get_messages()] == ["m2", "m3", "m4"]


@pytest.mark.parametrize("buffer_size", [None, 2, 3])
async def test_a_leading_function_result_shows_as_in_autogens_own_contexts(
    client: AsyncA2MClient, buffer_size: int | None
) -> None:
    """Unbounded shows every message; buffered drops a function result its window starts
    with (its call cut off), as ``BufferedChatCompletionContext`` does."""
    from autogen_core.model_context import (
        BufferedChatCompletionContext,
        UnboundedChatCompletionContext,
    )
    from autogen_core.models import FunctionExecutionResult, FunctionExecutionResultMessage

    result = FunctionExecutionResult(content="42", name="f", call_id="c1", is_error=False)
    messages: list[LLMMessage] = [
        FunctionExecutionResultMessage(content=[result]),
        UserMessage(content="thanks", source="user"),
        AssistantMessage(content="welcome", source="planner"),
    ]
    theirs = (
        UnboundedChatCompletionContext()
        if buffer_size is None
        else BufferedChatCompletionContext(buffer_size=buffer_size)
    )
    ours = A2MChatCompletionContext(client, session="lead", buffer_size=buffer_size)
    for message in messages:
        await theirs.add_message(message)
        await ours.add_message(message)
    expected = await theirs.get_messages()
    assert await ours.get_messages() == expected
    reloaded = A2MChatCompletionContext(client, session="lead", buffer_size=buffer_size)
    assert await reloaded.get_messages() == expected


async def test_save_and_load_state_rewrite_the_stored_transcript(client: AsyncA2MClient) -> None:
    context = A2MChatCompletionContext(client, session="s1")
    await context.add_message(UserMessage(content="one", source="user"))
    state = await A2MChatCompletionContext(client, session="s1").save_state()  # from the store
    await context.add_message(UserMessage(content="two", source="user"))
    await context.load_state(state)
    reloaded = A2MChatCompletionContext(client, session="s1")
    assert [m.content for m in await reloaded.get_messages()] == ["one"]


async def test_a_transcript_never_reaches_a_namespace_named_like_its_session(
    client: AsyncA2MClient,
) -> None:
    context = A2MChatCompletionContext(client, session="x", namespace="app/ctx")
    await context.add_message(UserMessage(content="said in session x", source="user"))
    beside = A2MMemory(client, namespace="app/ctx/x")  # its keys start app/ctx/x/ too
    await beside.add(MemoryContent(content="a note of app/ctx/x", mime_type="text/plain"))
    await context.clear()
    left = [r.content for r in (await client.timeline()).records]
    assert left == ["a note of app/ctx/x"]


async def test_concurrent_first_calls_load_and_seed_once(client: AsyncA2MClient) -> None:
    import asyncio

    opening = [UserMessage(content="start", source="user")]
    context = A2MChatCompletionContext(client, session="s1", initial_messages=opening)
    await asyncio.gather(*(context.get_messages() for _ in range(8)))
    assert len((await client.timeline()).records) == 1


async def test_a_teams_custom_message_types_replay_when_named(client: AsyncA2MClient) -> None:
    from autogen_agentchat.messages import StructuredMessage, TextMessage
    from pydantic import BaseModel

    class Plan(BaseModel):
        day: str
        stop: str

    said = [
        TextMessage(content="plan monday", source="user"),
        StructuredMessage[Plan](content=Plan(day="monday", stop="castle"), source="planner"),
    ]
    await A2MTranscript(client, session="s1").record(said)
    plain = await A2MTranscript(client, session="s1").messages()
    assert [m.source for m in plain] == ["user"]  # an unknown type is left out, not guessed
    named = await A2MTranscript(
        client, session="s1", message_types=[StructuredMessage[Plan]]
    ).messages()
    assert [m.to_text() for m in named] == [m.to_text() for m in said]


@pytest.mark.parametrize("cursor", [True, False], ids=["cursor", "no-cursor"])
async def test_a_transcript_longer_than_one_page_comes_back_whole_where_the_server_pages(
    a2m_async_client_factory: Any, cursor: bool
) -> None:
    from dataclasses import replace

    from autogen_agentchat.messages import TextMessage

    from a2m_server.config import LimitsConfig, ServerConfig

    config = replace(
        ServerConfig(), limits=LimitsConfig(max_recall_limit=7), timeline_cursor=cursor
    )
    client = a2m_async_client_factory("http", config=config)
    context = A2MChatCompletionContext(client, session="long")
    said = [TextMessage(content=f"m{i}", source="user" if i % 2 else "a") for i in range(20)]
    for message in said:
        await context.add_message(message.to_model_message())
    await A2MTranscript(client, session="long").record(said)

    # without a cursor, the newest page only, and a warning that it may be short
    capped = contextlib.nullcontext() if cursor else pytest.warns(IncompleteListing)
    with capped:
        restored = await A2MChatCompletionContext(client, session="long").get_messages()
    capped = contextlib.nullcontext() if cursor else pytest.warns(IncompleteListing)
    with capped:
        replayed = await A2MTranscript(client, session="long").messages()
    if cursor:  # complete, in order
        assert [m.content for m in restored] == [f"m{i}" for i in range(20)]
        assert [m.to_text() for m in replayed] == [f"m{i}" for i in range(20)]
    else:  # the newest page only, still in order
        assert [m.content for m in restored] == [f"m{i}" for i in range(13, 20)]
        assert [m.to_text() for m in replayed] == [f"m{i}" for i in range(13, 20)]
