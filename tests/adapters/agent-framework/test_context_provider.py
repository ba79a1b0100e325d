"""A2MContextProvider with a real Agent and a scripted chat client: the model's input holds
memories a LangGraph store and an AutoGen memory wrote, with who wrote them; nothing
under the score threshold reaches it; the turn and the facts the agent marks are written
for every other framework to read."""

from __future__ import annotations

import pytest
from agent_framework import Agent, Message
from autogen_core.memory import MemoryContent, MemoryMimeType
from maf_fake_client import ScriptedChatClient, calls, said

from a2m import A2MClient, AsyncA2MClient
from a2m_agent_framework import A2MContextProvider, A2MHistoryProvider
from a2m_autogen import A2MMemory
from a2m_langchain.langgraph import A2MStore

pytestmark = pytest.mark.anyio


async def _seed(url: str) -> None:
    with A2MClient(url) as sync_client:
        store = A2MStore(sync_client, agent="planner")
        store.put(("users", "ada"), "seat", {"fact": "Ada always books a window seat"})
    memory = A2MMemory(url=url, namespace="travel/prefs", source_agent="booker")
    await memory.add(MemoryContent(content="Ada flies out of Lyon", mime_type=MemoryMimeType.TEXT))
    await memory.close()


def _memory_text(client: ScriptedChatClient, call: int = 0) -> str:
    return "\n".join(m.text for m in client.inputs[call] if m.text.startswith("Memories"))


async def test_the_model_reads_what_langgraph_and_autogen_wrote(a2m_http_url: str) -> None:
    await _seed(a2m_http_url)
    client = ScriptedChatClient([said("Window seat from Lyon, booked.")])
    async with AsyncA2MClient(a2m_http_url) as a2m:
        memory = A2MContextProvider(a2m, agent="concierge")
        agent = Agent(client=client, name="concierge", context_providers=[memory])
        result = await agent.run("Book Ada's window seat from Lyon")
        assert result.text == "Window seat from Lyon, booked."
        seen = _memory_text(client)
        assert "[langgraph/planner]" in seen
        assert "Ada always books a window seat" in seen
        assert "[autogen/booker] Ada flies out of Lyon" in seen
        # the turn is written back, with provenance, for every framework to find
        turn = (
            await a2m.recall("booked window Lyon", where={"source_framework": "agent-framework"})
        ).records
        assert [r.content for r in turn] == [
            "user: Book Ada's window seat from Lyon\nassistant: Window seat from Lyon, booked."
        ]
        assert (turn[0].metadata or {})["source_agent"] == "concierge"


async def test_nothing_under_the_threshold_reaches_the_model(a2m_http_url: str) -> None:
    await _seed(a2m_http_url)
    client = ScriptedChatClient([said("ok")])
    async with AsyncA2MClient(a2m_http_url) as a2m:
        memory = A2MContextProvider(a2m, score_threshold=0.99, store_turns=False)
        await Agent(client=client, context_providers=[memory]).run("window seat Lyon")
        assert _memory_text(client) == ""
        assert (await a2m.recall("ok", where={"source_framework": "agent-framework"})).records == []


async def test_namespaces_and_where_narrow_what_is_recalled(a2m_http_url: str) -> None:
    await _seed(a2m_http_url)
    client = ScriptedChatClient([said("ok")])
    async with AsyncA2MClient(a2m_http_url) as a2m:
        memory = A2MContextProvider(a2m, namespaces=["travel/prefs"], store_turns=False)
        await Agent(client=client, context_providers=[memory]).run("Ada window seat Lyon")
        seen = _memory_text(client)
        assert "Ada flies out of Lyon" in seen
        assert "window seat" not in seen.split("\n", 1)[1]


async def test_facts_the_agent_marks_are_remembered(a2m_http_url: str) -> None:
    client = ScriptedChatClient(
        [
            calls("remember_fact", {"fact": "Ada's passport expires in 2031"}, call_id="f1"),
            said("Noted."),
        ]
    )
    async with AsyncA2MClient(a2m_http_url) as a2m:
        memory = A2MContextProvider(a2m, agent="concierge", remember_tool=True, store_turns=False)
        result = await Agent(client=client, name="concierge", context_providers=[memory]).run(
            "Remember Ada's passport expiry: 2031"
        )
        assert result.text == "Noted."
        found = (await a2m.timeline(where={"type": "semantic"})).records
        assert [r.content for r in found] == ["Ada's passport expires in 2031"]
        stated = found[0].metadata or {}
        assert stated["source_framework"] == "agent-framework"
        assert stated["type"] == "semantic"
        assert stated["source_agent"] == "concierge"


async def test_its_own_conversation_is_left_to_the_history_provider(a2m_http_url: str) -> None:
    client = ScriptedChatClient([said("Lyon is sunny."), said("You asked about Lyon.")])
    async with AsyncA2MClient(a2m_http_url) as a2m:
        providers = [A2MHistoryProvider(a2m), A2MContextProvider(a2m)]
        agent = Agent(client=client, context_providers=providers)
        session = agent.create_session()
        await agent.run("Weather in Lyon?", session=session)
        await agent.run("What about Lyon?", session=session)
        second = client.inputs[1]
        assert [m.text for m in second if not m.text.startswith("Memories")] == [
            "Weather in Lyon?",
            "Lyon is sunny.",
            "What about Lyon?",
        ]
        assert _memory_text(client, 1) == ""  # nothing recalled twice from its own session


async def test_an_autogen_memory_reads_what_agent_framework_wrote(a2m_http_url: str) -> None:
    """The migration path: records written through these providers are read by the
    AutoGen adapter, and the reverse, on one store."""
    client = ScriptedChatClient([said("Noted the aisle seat.")])
    async with AsyncA2MClient(a2m_http_url) as a2m:
        memory = A2MContextProvider(a2m, agent="concierge")
        await Agent(client=client, context_providers=[memory]).run("Bob wants an aisle seat")
        autogen = A2MMemory(a2m, namespace="travel/prefs", k=3)
        results = (await autogen.query("aisle seat Bob")).results
        assert any("Bob wants an aisle seat" in str(r.content) for r in results)


async def test_bad_arguments_are_refused_plainly() -> None:
    with pytest.raises(ValueError, match="k must"):
        A2MContextProvider(url="http://127.0.0.1:9/", k=0)
    with pytest.raises(ValueError, match="score_threshold"):
        A2MContextProvider(url="http://127.0.0.1:9/", score_threshold=2)


def test_messages_stay_plain() -> None:
    assert Message(role="user", contents=["x"]).text == "x"
