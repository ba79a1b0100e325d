"""dump_component / load_component: A2MMemory and A2MChatCompletionContext travel as JSON
(where the store is, the namespace, k, thresholds), never with a secret in clear."""

from __future__ import annotations

from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_core import ComponentModel
from autogen_core.memory import Memory, MemoryContent, MemoryMimeType
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import UserMessage
from autogen_ext.models.replay import ReplayChatCompletionClient
from pydantic import SecretStr

from a2m import AsyncA2MClient, AuthenticationError
from a2m_autogen import A2MChatCompletionContext, A2MMemory

pytestmark = pytest.mark.anyio

TEXT = MemoryMimeType.TEXT


def through_json(model: ComponentModel) -> ComponentModel:
    return ComponentModel.model_validate_json(model.model_dump_json())


async def test_a_memory_round_trips_through_json(a2m_http_url: str) -> None:
    memory = A2MMemory(
        url=a2m_http_url,
        namespace="app/prefs",
        name="prefs",
        k=7,
        score_threshold=0.25,
        query_namespace="app",
        memory_type="procedural",
        source_agent="planner",
        session="s-9",
        prompt_budget=400,
    )
    dumped = through_json(memory.dump_component())
    assert dumped.provider == "a2m_autogen.A2MMemory"
    assert dumped.component_type == "memory"
    loaded = Memory.load_component(dumped)
    assert isinstance(loaded, A2MMemory)
    assert loaded.dump_component().config == memory.dump_component().config
    assert dumped.config["url"] == a2m_http_url
    assert dumped.config["k"] == 7
    assert dumped.config["score_threshold"] == 0.25

    # The loaded memory works against the same store.
    await loaded.add(MemoryContent(content="loaded memories write", mime_type=TEXT))
    (found,) = (await memory.query("loaded memories")).results
    assert found.metadata is not None
    assert found.metadata["a2m"]["type"] == "procedural"
    assert found.metadata["a2m"]["source_agent"] == "planner"
    await loaded.close()
    await memory.close()


async def test_a_token_is_never_dumped_and_comes_from_the_environment(
    a2m_http_server_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = a2m_http_server_factory(tokens={"s3cret-token": "alice"})
    memory = A2MMemory(url=url, token=SecretStr("s3cret-token"), token_env="TRIP_A2M_TOKEN")
    await memory.add(MemoryContent(content="behind a token", mime_type=TEXT))
    text = memory.dump_component().model_dump_json()
    assert "s3cret-token" not in text
    assert "TRIP_A2M_TOKEN" in text
    await memory.close()

    monkeypatch.delenv("A2M_TOKEN", raising=False)
    monkeypatch.delenv("TRIP_A2M_TOKEN", raising=False)
    unauthenticated = A2MMemory.load_component(ComponentModel.model_validate_json(text))
    with pytest.raises(AuthenticationError):
        await unauthenticated.query("token")
    await unauthenticated.close()

    monkeypatch.setenv("TRIP_A2M_TOKEN", "s3cret-token")
    loaded = A2MMemory.load_component(ComponentModel.model_validate_json(text))
    assert [r.content for r in (await loaded.query("token")).results] == ["behind a token"]
    await loaded.close()


def test_a_memory_on_a_client_passed_in_needs_to_say_where_it_points(
    a2m_http_url: str,
) -> None:
    client = AsyncA2MClient(a2m_http_url)
    with pytest.raises(ValueError, match="url="):
        A2MMemory(client).dump_component()
    config = A2MMemory(client, url=a2m_http_url).dump_component().config
    assert config["url"] == a2m_http_url


async def test_a_context_round_trips_through_json(a2m_http_url: str) -> None:
    context = A2MChatCompletionContext(
        url=a2m_http_url,
        session="s-1",
        namespace="app/planner",
        buffer_size=4,
        initial_messages=[UserMessage(content="start", source="user")],
    )
    await context.add_message(UserMessage(content="then", source="user"))
    dumped = through_json(context.dump_component())
    assert dumped.provider == "a2m_autogen.A2MChatCompletionContext"
    loaded = ChatCompletionContext.load_component(dumped)
    assert isinstance(loaded, A2MChatCompletionContext)
    assert [m.content for m in await loaded.get_messages()] == ["start", "then"]
    await loaded.close()
    await context.close()


async def test_an_agent_with_a2m_memory_and_context_round_trips(a2m_http_url: str) -> None:
    built = AssistantAgent(
        "planner",
        model_client=ReplayChatCompletionClient(["ok"]),
        model_context=A2MChatCompletionContext(url=a2m_http_url, session="s-1"),
        memory=[A2MMemory(url=a2m_http_url, namespace="app/planner")],
    )
    dumped = through_json(built.dump_component())
    loaded = AssistantAgent.load_component(dumped)
    result = await loaded.run(task="hello")
    assert result.messages[-1].to_text() == "ok"
    stored = A2MChatCompletionContext(url=a2m_http_url, session="s-1")
    assert [m.content for m in await stored.get_messages()] == ["hello", "ok"]
    await stored.close()
    await loaded.model_context.close()  # type: ignore[attr-defined]
    for memory in loaded._memory or []:
        await memory.close()


async def test_a_memory_opens_every_binding_its_config_names(
    a2m_http_url: str, a2m_stdio_command: list[str]
) -> None:
    configs: list[dict[str, Any]] = [
        {"url": a2m_http_url, "binding": "rest"},
        {"binding": "stdio", "command": a2m_stdio_command},
    ]
    for options in configs:
        memory = A2MMemory(namespace="app/bindings", **options)
        loaded = A2MMemory.load_component(through_json(memory.dump_component()))
        await loaded.add(MemoryContent(content=f"over {options['binding']}", mime_type=TEXT))
        results = (await loaded.query(f"over {options['binding']}")).results
        assert f"over {options['binding']}" in [r.content for r in results]
        await loaded.close()


def test_a_config_that_says_nowhere_is_refused_when_first_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from a2m_autogen import ConnectionConfig
    from a2m_autogen._connection import open_client

    monkeypatch.delenv("A2M_URL", raising=False)
    with pytest.raises(ValueError, match="A2M_URL"):
        open_client(ConnectionConfig(), "app")
    with pytest.raises(ValueError, match="command"):
        open_client(ConnectionConfig(binding="stdio"), "app")
