"""A LangGraph agent whose long-term memory is A2MStore and whose threads live in
A2MSaver: it stores a memory in one thread, recalls it in another, and resumes the first
thread after its process has ended."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from agent_kit import MEMORIES, build_agent, call, script
from langchain_core.messages import HumanMessage, ToolMessage

from a2m import A2MClient, AsyncA2MClient
from a2m_langchain.langgraph import A2MSaver, A2MStore, AsyncA2MStore
from a2m_server.server import A2MServer

HERE = Path(__file__).parent


def _thread(name: str) -> dict[str, dict[str, str]]:
    return {"configurable": {"thread_id": name}}


def _tool_results(state: dict[str, list[object]]) -> list[str]:
    return [str(m.content) for m in state["messages"] if isinstance(m, ToolMessage)]


def test_agent_remembers_across_threads(client: A2MClient) -> None:
    """Over in-process, JSON-RPC HTTP and REST alike."""
    memory = client
    store, saver = A2MStore(memory), A2MSaver(memory, transcript=True)
    turns = script(
        call("save_memory", "c1", text="my favourite colour is teal"),
        "Noted.",
        call("recall_memories", "c2", query="favourite colour"),
        "It is teal.",
    )
    agent = build_agent(turns, store=store, checkpointer=saver)
    agent.invoke({"messages": [HumanMessage("I like teal")]}, _thread("thread-1"))
    stored = store.search(MEMORIES)
    assert [item.value for item in stored] == [{"text": "my favourite colour is teal"}]

    second = agent.invoke({"messages": [HumanMessage("my colour?")]}, _thread("thread-2"))
    assert _tool_results(second) == ["my favourite colour is teal"]
    assert second["messages"][-1].content == "It is teal."
    # Thread 2 knows nothing of thread 1's messages: only the store crossed over.
    assert second["messages"][0].content == "my colour?"

    # The transcript is readable by any framework: one record per message, with roles.
    transcript = memory.timeline(where={"session": "thread-1", "type": "episodic"})
    roles = [(r.role, r.content) for r in transcript.records]
    assert roles[0] == ("user", "I like teal")
    assert ("tool", "saved fact-0") in roles
    assert roles[-1] == ("assistant", "Noted.")


@pytest.mark.parametrize("over", ["in-process", "http"])
def test_async_agent_remembers_across_threads(
    server: A2MServer, over: str, request: pytest.FixtureRequest
) -> None:
    def connect() -> AsyncA2MClient:
        if over == "in-process":
            return AsyncA2MClient.in_process(server)
        return AsyncA2MClient(request.getfixturevalue("http_url"))

    async def run() -> None:
        async with connect() as memory:
            store, saver = AsyncA2MStore(memory), A2MSaver(memory)
            turns = script(
                call("asave_memory", "c1", text="deploys happen on Fridays"),
                "Noted.",
                call("arecall_memories", "c2", query="deploys"),
                "Fridays.",
            )
            agent = build_agent(turns, store=store, checkpointer=saver, asynchronous=True)
            await agent.ainvoke({"messages": [HumanMessage("note it")]}, _thread("a-1"))
            second = await agent.ainvoke({"messages": [HumanMessage("when?")]}, _thread("a-2"))
            assert _tool_results(second) == ["deploys happen on Fridays"]
            first = await agent.aget_state(_thread("a-1"))
            assert [m.content for m in first.values["messages"]][-1] == "Noted."

    asyncio.run(run())


_FIRST_PROCESS = textwrap.dedent(
    """
    import sys
    from langchain_core.messages import HumanMessage
    from a2m import A2MClient
    from a2m_server.server import A2MServer
    from a2m_langchain.langgraph import A2MSaver, A2MStore
    from agent_kit import build_agent, call, script

    with A2MServer(db=sys.argv[1]) as server, A2MClient.in_process(server) as memory:
        turns = script(call("save_memory", "c1", text="the office is in Lyon"), "Noted.")
        agent = build_agent(turns, store=A2MStore(memory), checkpointer=A2MSaver(memory))
        agent.invoke({"messages": [HumanMessage("we moved to Lyon")]},
                     {"configurable": {"thread_id": "thread-1"}})
    """
)


def test_thread_resumes_after_the_process_restarts(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
    subprocess.run(
        [sys.executable, "-c", _FIRST_PROCESS, str(db)], check=True, env=env, timeout=120
    )

    with A2MServer(db=db) as server, A2MClient.in_process(server) as memory:
        store, saver = A2MStore(memory), A2MSaver(memory)
        turns = script(call("recall_memories", "c9", query="office"), "In Lyon.")
        agent = build_agent(turns, store=store, checkpointer=saver)
        before = agent.get_state(_thread("thread-1")).values["messages"]
        assert before[0].content == "we moved to Lyon"
        assert before[-1].content == "Noted."

        resumed = agent.invoke({"messages": [HumanMessage("where is it?")]}, _thread("thread-1"))
        contents = [m.content for m in resumed["messages"]]
        assert contents[0] == "we moved to Lyon"  # the old turn came back from A2M
        assert contents[-4:] == ["where is it?", "", "the office is in Lyon", "In Lyon."]


def test_sync_tools_in_an_async_graph_reach_the_async_store(server: A2MServer) -> None:
    # LangGraph runs a synchronous tool in a worker thread: its store calls must cross
    # back onto the loop the async store runs on.
    async def run() -> None:
        async with AsyncA2MClient.in_process(server) as memory:
            store, saver = AsyncA2MStore(memory), A2MSaver(memory)
            turns = script(
                call("save_memory", "c1", text="the build cache lives in s3"),
                "Noted.",
                call("recall_memories", "c2", query="build cache"),
                "In s3.",
            )
            agent = build_agent(turns, store=store, checkpointer=saver)
            await agent.ainvoke({"messages": [HumanMessage("note it")]}, _thread("s-1"))
            second = await agent.ainvoke({"messages": [HumanMessage("where?")]}, _thread("s-2"))
            assert _tool_results(second) == ["the build cache lives in s3"]

    asyncio.run(run())
