"""A conversation reads back whole on any conformant server, or says it may not: against
a server declaring neither a timeline cursor nor a ``max_recall_limit`` (spec §4.4: a
timeline without ``limit`` carries every record), and against one declaring a limit but
no cursor, where reaching the limit warns with ``a2m.IncompleteListing``."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from a2m import A2MClient, AsyncA2MClient, IncompleteListing
from a2m_langchain import A2MChatMessageHistory
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_testing.servers import Servers

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")

UNDECLARED = ServerConfig(timeline_cursor=False, declare_recall_limit=False)
CAPPED = ServerConfig(timeline_cursor=False, limits=LimitsConfig(max_recall_limit=100))


def _conversation(n: int) -> list[BaseMessage]:
    return [HumanMessage(f"q{i}") if i % 2 == 0 else AIMessage(f"a{i}") for i in range(n)]


def test_a_server_declaring_no_limit_and_no_cursor_gives_the_whole_conversation() -> None:
    with Servers() as servers, A2MClient(servers.http_url(config=UNDECLARED)) as client:
        description = client.describe()
        assert description.timeline is None
        assert description.limits is not None
        assert description.limits.max_recall_limit is None
        history = A2MChatMessageHistory("long", client)
        sent = _conversation(1205)
        history.add_messages(sent)
        assert [m.content for m in history.messages] == [m.content for m in sent]
        assert [m.content for m in history.recent_messages(3)] == [m.content for m in sent[-3:]]


async def test_the_async_history_is_whole_there_too() -> None:
    with Servers() as servers:
        client = AsyncA2MClient(servers.http_url(config=UNDECLARED))
        try:
            history = A2MChatMessageHistory("long", client)
            sent = _conversation(1205)
            await history.aadd_messages(sent)
            assert len(await history.aget_messages()) == 1205
        finally:
            await client.aclose()


def test_a_capped_server_without_cursor_warns_rather_than_answer_short() -> None:
    with Servers() as servers, A2MClient(servers.http_url(config=CAPPED)) as client:
        history = A2MChatMessageHistory("long", client)
        sent = _conversation(150)
        history.add_messages(sent)
        with pytest.warns(IncompleteListing, match="max_recall_limit"):
            got = history.messages
        assert [m.content for m in got] == [m.content for m in sent[-100:]]
        # what one call can carry is exact, with no warning
        assert [m.content for m in history.recent_messages(40)] == [m.content for m in sent[-40:]]
