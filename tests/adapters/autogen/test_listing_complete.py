"""A stored transcript loads whole on any conformant server, or says it may not: against a
server declaring neither a timeline cursor nor a ``max_recall_limit`` (spec §4.4), and
against one declaring a limit but no cursor, where reaching it warns."""

from __future__ import annotations

import pytest
from autogen_core.models import AssistantMessage, LLMMessage, UserMessage

from a2m import AsyncA2MClient, IncompleteListing
from a2m_autogen import A2MChatCompletionContext
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_testing.plugin import HTTPServerFactory

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("store_backend")]

UNDECLARED = ServerConfig(timeline_cursor=False, declare_recall_limit=False)
CAPPED = ServerConfig(timeline_cursor=False, limits=LimitsConfig(max_recall_limit=50))


def _message(i: int) -> LLMMessage:
    if i % 2 == 0:
        return UserMessage(content=f"q{i}", source="user")
    return AssistantMessage(content=f"a{i}", source="assistant")


async def _stored(url: str, n: int) -> A2MChatCompletionContext:
    async with AsyncA2MClient(url) as client:
        writer = A2MChatCompletionContext(client, session="long")
        for i in range(n):
            await writer.add_message(_message(i))
    return A2MChatCompletionContext(url=url, session="long")


async def test_a_server_declaring_no_limit_and_no_cursor_loads_it_all(
    a2m_http_server_factory: HTTPServerFactory,
) -> None:
    reader = await _stored(a2m_http_server_factory(config=UNDECLARED), 1205)
    try:
        loaded = await reader.get_messages()
        assert [m.content for m in loaded] == [_message(i).content for i in range(1205)]
    finally:
        await reader.close()


async def test_a_capped_server_without_cursor_warns(
    a2m_http_server_factory: HTTPServerFactory,
) -> None:
    reader = await _stored(a2m_http_server_factory(config=CAPPED), 60)
    try:
        with pytest.warns(IncompleteListing, match="max_recall_limit"):
            loaded = await reader.get_messages()
        assert [m.content for m in loaded] == [_message(i).content for i in range(10, 60)]
    finally:
        await reader.close()
