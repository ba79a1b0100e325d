"""A2MHistoryProvider beside the framework's own InMemoryHistoryProvider: the same runs
store the same messages, every content type round-trips exactly, the provider flags
work as they do on every HistoryProvider, and bad messages are refused before writing."""

from __future__ import annotations

import asyncio
import logging
import warnings
from pathlib import Path
from typing import Any

import pytest
from agent_framework import (
    Agent,
    Content,
    FileHistoryProvider,
    HistoryProvider,
    InMemoryHistoryProvider,
    Message,
    tool,
)
from maf_fake_client import ScriptedChatClient, calls, said

from a2m import AsyncA2MClient
from a2m.errors import InvalidParams, QuotaExceeded
from a2m_agent_framework import A2MHistoryProvider
from a2m_server import A2MServer
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_testing import DelayedTransport

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("store_backend")]


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


def _script() -> list[Message]:
    return [
        calls("get_weather", {"city": "Lyon"}, call_id="c1"),
        said("It is sunny in Lyon."),
        said("You asked about Lyon."),
    ]


def _with_properties(properties: dict[str, Any]) -> Content:
    content = Content.from_text("x")
    content.additional_properties = properties
    return content


def _dicts(messages: list[Message]) -> list[dict[str, Any]]:
    return [message.to_dict() for message in messages]


async def test_a_run_stores_what_in_memory_history_stores(
    a2m_async_client: AsyncA2MClient,
) -> None:
    reference = InMemoryHistoryProvider(load_messages=True)
    ours = A2MHistoryProvider(a2m_async_client, load_messages=False, agent="forecaster")
    agent = Agent(
        client=ScriptedChatClient(_script()),
        name="forecaster",
        tools=[get_weather],
        context_providers=[reference, ours],
    )
    session = agent.create_session()
    await agent.run("Weather in Lyon?", session=session)
    await agent.run("What did I ask?", session=session)
    expected = session.state[reference.source_id]["messages"]
    stored = await ours.get_messages(session.session_id)
    assert _dicts(stored) == _dicts(expected)
    assert [m.role for m in stored] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]


async def what_the_model_saw(provider: Any) -> list[list[tuple[str, str]]]:
    """Each model call's messages (role, text) over two turns of a tool-calling agent
    with ``provider`` as its history."""
    client = ScriptedChatClient(_script())
    agent = Agent(
        client=client, name="forecaster", tools=[get_weather], context_providers=[provider]
    )
    session = agent.create_session()
    await agent.run("Weather in Lyon?", session=session)
    await agent.run("What did I ask?", session=session)
    return [[(str(m.role), m.text) for m in call] for call in client.inputs]


async def test_the_model_sees_the_same_history_as_with_in_memory_history(
    a2m_async_client: AsyncA2MClient,
) -> None:
    seen = [
        await what_the_model_saw(provider)
        for provider in (InMemoryHistoryProvider(), A2MHistoryProvider(a2m_async_client))
    ]
    assert seen[0] == seen[1]
    assert seen[1][2][-2:] == [("assistant", "It is sunny in Lyon."), ("user", "What did I ask?")]


def _every_content() -> list[Message]:
    return [
        Message(role="system", contents=["Be brief."]),
        Message(
            role="user",
            contents=[
                "Plain text",
                Content.from_uri("https://example.test/a.png", media_type="image/png"),
            ],
        ),
        Message(
            role="user",
            contents=[Content.from_data(b"\x00\x01binary", media_type="application/octet-stream")],
        ),
        Message(
            role="assistant",
            contents=[Content.from_text_reasoning(text="Thinking it over")],
            author_name="planner",
        ),
        Message(
            role="assistant",
            contents=[
                Content.from_function_call(
                    call_id="c9", name="lookup", arguments={"q": "x", "n": 2}
                )
            ],
            message_id="m-3",
        ),
        Message(
            role="tool", contents=[Content.from_function_result(call_id="c9", result="found 2")]
        ),
        Message(role="assistant", contents=[Content.from_hosted_file(file_id="file-1")]),
        Message(
            role="assistant",
            contents=["ünïcödé ✓"],
            additional_properties={"trace": [1, 2.5, None]},
        ),
    ]


async def test_every_content_type_round_trips_exactly(a2m_async_client: AsyncA2MClient) -> None:
    provider = A2MHistoryProvider(a2m_async_client)
    messages = _every_content()
    await provider.save_messages("s-all", messages)
    assert _dicts(await provider.get_messages("s-all")) == _dicts(messages)
    # a replayed transcript adds only what is new, as in InMemoryHistoryProvider
    await provider.save_messages("s-all", [*messages, Message(role="user", contents=["new"])])
    again = await provider.get_messages("s-all")
    assert _dicts(again) == _dicts([*messages, Message(role="user", contents=["new"])])


@pytest.mark.parametrize(
    ("flags", "roles"),
    [
        ({"store_inputs": False}, ["assistant", "tool", "assistant"]),
        ({"store_outputs": False}, ["user"]),
        ({}, ["user", "assistant", "tool", "assistant"]),
    ],
)
async def test_the_provider_flags_work_as_on_in_memory_history(
    a2m_async_client: AsyncA2MClient, flags: dict[str, bool], roles: list[str]
) -> None:
    reference = InMemoryHistoryProvider(**flags)  # type: ignore[arg-type]
    ours = A2MHistoryProvider(a2m_async_client, source_id="a2m", **flags)  # type: ignore[arg-type]
    agent = Agent(
        client=ScriptedChatClient(_script()),
        tools=[get_weather],
        context_providers=[reference, ours],
    )
    session = agent.create_session()
    await agent.run("Weather in Lyon?", session=session)
    stored = await ours.get_messages(session.session_id)
    assert [str(m.role) for m in stored] == roles
    assert _dicts(stored) == _dicts(session.state[reference.source_id].get("messages", []))


async def test_load_messages_off_gives_the_model_what_in_memory_history_gives(
    a2m_async_client: AsyncA2MClient,
) -> None:
    seen = []
    for provider in (
        InMemoryHistoryProvider(load_messages=False),
        A2MHistoryProvider(a2m_async_client, load_messages=False),
    ):
        client = ScriptedChatClient([said("one"), said("two")])
        agent = Agent(client=client, context_providers=[provider])
        session = agent.create_session()
        await agent.run("first", session=session)
        await agent.run("second", session=session)
        seen.append([[m.text for m in call] for call in client.inputs])
        if isinstance(provider, A2MHistoryProvider):
            stored = await provider.get_messages(session.session_id)
            assert [m.text for m in stored] == ["first", "one", "second", "two"]
    assert seen[0] == seen[1]


@pytest.mark.parametrize(
    "bad",
    [
        calls("f", {"score": float("nan")}, call_id="c"),
        calls("f", {"raw": b"bytes"}, call_id="c"),
        calls("f", {"tags": {"a", "b"}}, call_id="c"),
        "not a message",
        Message(role="user", contents=["x"], additional_properties={"raw": b"zz"}),
        Message(role="user", contents=["x"], additional_properties={"d": {"s": {1, 2}}}),
        Message(role="user", contents=["x"], additional_properties={"l": [1, (2, 3)]}),
        Message(role="user", contents=[_with_properties({"raw": b"x"})]),
    ],
    ids=[
        "nan",
        "bytes",
        "set",
        "str",
        "message-bytes",
        "nested-set",
        "list-tuple",
        "content-bytes",
    ],
)
async def test_bad_messages_are_refused_and_nothing_written(
    a2m_async_client: AsyncA2MClient, bad: Any
) -> None:
    provider = A2MHistoryProvider(a2m_async_client)
    with pytest.raises(InvalidParams, match="nothing was written"):
        await provider.save_messages("s-bad", [Message(role="user", contents=["fine"]), bad])
    assert await provider.get_messages("s-bad") == []


async def test_a_failed_save_writes_nothing(a2m_http_server_factory: Any) -> None:
    config = ServerConfig(limits=LimitsConfig(max_records_per_call=2, max_content_length=40))
    async with AsyncA2MClient(a2m_http_server_factory(config=config)) as client:
        provider = A2MHistoryProvider(client)
        messages = [Message(role="user", contents=[f"short {n}"]) for n in range(3)]
        messages.append(Message(role="user", contents=["far too long for this server " * 3]))
        with pytest.raises(QuotaExceeded):
            await provider.save_messages("s-atomic", messages)
        assert await provider.get_messages("s-atomic") == []


@pytest.mark.parametrize("backend", ["FileHistoryProvider", "A2MHistoryProvider"])
async def test_a_save_cancelled_midway_is_finished_then_cancelled(
    backend: str, tmp_path: Path
) -> None:
    """The framework's FileHistoryProvider finishes a save it began when the caller is
    cancelled; A2MHistoryProvider's three calls go to their end the same way, where
    cancelling between two left the first batch alone stored."""
    messages = [Message(role="user", contents=[f"m{n}"]) for n in range(250)]
    config = ServerConfig(limits=LimitsConfig(max_records_per_call=100))
    with A2MServer(config) as server:
        async with AsyncA2MClient(transport=DelayedTransport(server, delay=0.05)) as client:
            provider: HistoryProvider = A2MHistoryProvider(client)
            if backend == "FileHistoryProvider":
                with warnings.catch_warnings():  # it says it is experimental
                    warnings.simplefilter("ignore")
                    provider = FileHistoryProvider(str(tmp_path))
            task = asyncio.ensure_future(provider.save_messages("s", messages))
            # The file's write is one step: cancel it once begun; A2M's in its second call.
            await asyncio.sleep(0 if backend == "FileHistoryProvider" else 0.08)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert _dicts(await provider.get_messages("s")) == _dicts(messages)


@pytest.mark.parametrize("backend", ["FileHistoryProvider", "A2MHistoryProvider"])
async def test_concurrent_saves_of_one_exchange_store_it_once(
    backend: str, tmp_path: Path, a2m_async_client: AsyncA2MClient
) -> None:
    """Five saves of the same exchange at once, as FileHistoryProvider's lock makes them:
    each sees what the earlier ones stored and adds nothing again."""
    exchange = [Message(role="user", contents=["hello"]), said("hi there")]
    provider: HistoryProvider = A2MHistoryProvider(a2m_async_client)
    if backend == "FileHistoryProvider":
        with warnings.catch_warnings():  # it says it is experimental
            warnings.simplefilter("ignore")
            provider = FileHistoryProvider(str(tmp_path))
    await asyncio.gather(*(provider.save_messages("s-busy", exchange) for _ in range(5)))
    assert _dicts(await provider.get_messages("s-busy")) == _dicts(exchange)


async def test_damaged_records_are_skipped_with_a_warning(
    a2m_async_client: AsyncA2MClient, caplog: pytest.LogCaptureFixture
) -> None:
    provider = A2MHistoryProvider(a2m_async_client)
    await provider.save_messages("s-d", [Message(role="user", contents=["kept"])])
    await a2m_async_client.remember(
        {
            "content": "typed by hand",
            "session": "s-d",
            "metadata": {
                "namespace": "agent-framework",
                "source_framework": "agent-framework",
                "session": "s-d",
            },
        }
    )
    with caplog.at_level(logging.WARNING, logger="a2m_agent_framework"):
        assert [m.text for m in await provider.get_messages("s-d")] == ["kept"]
    assert "holds no message" in caplog.text
    await provider.clear("s-d")
    assert await provider.get_messages("s-d") == []


def test_one_provider_serves_several_event_loops(a2m_http_url: str) -> None:
    """Sync callers run each call on a loop of their own (``asyncio.run``, worker threads):
    the provider, and the client it opened, serve them in turn and at once."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    provider = A2MHistoryProvider(url=a2m_http_url)

    def save(n: int) -> None:
        asyncio.run(provider.save_messages("loops", [Message(role="user", contents=[f"m{n}"])]))

    save(0)
    save(1)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(save, range(2, 6)))
    texts = [m.text for m in asyncio.run(provider.get_messages("loops"))]
    assert texts[:2] == ["m0", "m1"]
    assert sorted(texts[2:]) == [f"m{n}" for n in range(2, 6)]
    asyncio.run(provider.aclose())


async def test_principals_with_one_session_id_keep_their_own_messages(
    a2m_http_server_factory: Any,
) -> None:
    # Over an authenticated connection a session id names each principal's own
    # conversation: bob's messages, and bob's clear, never reach alice's.
    url = a2m_http_server_factory(tokens={"alice-token": "alice", "bob-token": "bob"})
    async with (
        AsyncA2MClient(url, token="alice-token") as alice,
        AsyncA2MClient(url, token="bob-token") as bob,
    ):
        mine, theirs = A2MHistoryProvider(alice), A2MHistoryProvider(bob)
        await mine.save_messages("s1", [Message(role="user", contents=["alice says hi"])])
        await theirs.save_messages("s1", [Message(role="user", contents=["bob says hi"])])
        assert [m.text for m in await mine.get_messages("s1")] == ["alice says hi"]
        assert [m.text for m in await theirs.get_messages("s1")] == ["bob says hi"]
        await theirs.clear("s1")
        assert [m.text for m in await mine.get_messages("s1")] == ["alice says hi"]
        assert await theirs.get_messages("s1") == []
