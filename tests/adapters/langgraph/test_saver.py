"""A2MSaver's synchronous surface through the same conformance checks as the async one
(the suite calls only async methods, so each is routed to its synchronous twin here), and
what the saver adds: transcripts, closing a thread, refusing work on the wrong loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_metadata
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph
from pydantic import BaseModel

from a2m import A2MClient, AsyncA2MClient
from a2m_langchain.langgraph import A2MSaver
from a2m_server.server import A2MServer


class SyncTwins(BaseCheckpointSaver[str]):
    """Every async method the suite calls, answered by A2MSaver's synchronous twin."""

    def __init__(self, inner: A2MSaver) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner

    async def aput(self, *args: Any) -> RunnableConfig:
        return self.inner.put(*args)

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        self.inner.put_writes(*args, **kwargs)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.inner.get_tuple(config)

    async def alist(self, config: Any, **kwargs: Any) -> AsyncIterator[CheckpointTuple]:
        for found in self.inner.list(config, **kwargs):
            yield found

    async def adelete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.inner.delete_for_runs(run_ids)

    async def acopy_thread(self, source: str, target: str) -> None:
        self.inner.copy_thread(source, target)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.inner.prune(thread_ids, strategy=strategy)


def test_sync_twins_pass_the_conformance_checks(server: A2MServer) -> None:
    with A2MClient.in_process(server) as client:

        @checkpointer_test(name="A2MSaver sync")
        async def saver() -> AsyncIterator[SyncTwins]:
            yield SyncTwins(A2MSaver(client))

        report = asyncio.run(validate(saver))
    failures = {name: r.failures for name, r in report.results.items() if r.failures}
    assert not failures
    assert report.passed_all_base()
    assert all(report.results[c].passed for c in ("copy_thread", "delete_for_runs", "prune"))


def _put(saver: A2MSaver, thread: str, messages: list[Any], parent: str | None = None) -> Any:
    config: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    if parent:
        config["configurable"]["checkpoint_id"] = parent
    checkpoint = generate_checkpoint(channel_values={"messages": messages})
    checkpoint["channel_versions"] = {"messages": 1}
    return saver.put(config, checkpoint, generate_metadata(), {"messages": 1})  # type: ignore[arg-type]


def test_transcript_writes_each_new_message_once(server: A2MServer) -> None:
    with A2MClient.in_process(server) as client:
        saver = A2MSaver(client, transcript=True, agent="planner")
        first = [HumanMessage("hi", id="m1"), AIMessage("hello", id="m2")]
        stored = _put(saver, "t-1", first)
        _put(
            saver,
            "t-1",
            [*first, HumanMessage("bye", id="m3")],
            stored["configurable"]["checkpoint_id"],
        )
        # A second saver (a restarted process) repeats messages without duplicating them.
        _put(A2MSaver(client, transcript=True, agent="planner"), "t-1", first)
        records = client.timeline(where={"session": "t-1", "type": "episodic"}).records
        assert [(r.role, r.content) for r in records] == [
            ("user", "hi"),
            ("assistant", "hello"),
            ("user", "bye"),
        ]
        assert {r.metadata["source_framework"] for r in records} == {"langgraph"}  # type: ignore[index]
        assert client.fetch(records[0].key or "").record is not None
        saver.delete_thread("t-1")
        assert client.timeline(where={"session": "t-1"}).records == []


def test_close_thread_settles_its_session(server: A2MServer) -> None:
    with A2MClient.in_process(server) as client:
        saver = A2MSaver(client)
        _put(saver, "t-2", [HumanMessage("x", id="x")])
        saver.close_thread("t-2")
        assert saver.get_tuple({"configurable": {"thread_id": "t-2"}}) is not None


def test_async_client_refuses_sync_calls_on_its_loop(server: A2MServer) -> None:
    async def run() -> None:
        async with AsyncA2MClient.in_process(server) as client:
            saver = A2MSaver(client)
            config: RunnableConfig = {"configurable": {"thread_id": "t-3"}}
            assert await saver.aget_tuple(config) is None
            with pytest.raises(RuntimeError):
                saver.get_tuple(config)
            assert await asyncio.to_thread(saver.get_tuple, config) is None

    asyncio.run(run())


def test_listing_agrees_with_inmemory_saver(server: A2MServer) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    with A2MClient.in_process(server) as client:
        ours, theirs = A2MSaver(client), InMemorySaver()
        for saver in (ours, theirs):
            parent = None
            for step in range(5):
                config: dict[str, Any] = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
                if parent:
                    config["configurable"]["checkpoint_id"] = parent
                checkpoint = generate_checkpoint(checkpoint_id=f"0000{step}")
                metadata = generate_metadata(source="loop" if step % 2 else "input", step=step)
                parent = saver.put(config, checkpoint, metadata, {})["configurable"][
                    "checkpoint_id"
                ]  # type: ignore[arg-type]

        def ids(saver: BaseCheckpointSaver[Any], **options: Any) -> list[str]:
            thread: RunnableConfig = {"configurable": {"thread_id": "t"}}
            return [t.checkpoint["id"] for t in saver.list(thread, **options)]

        before: RunnableConfig = {"configurable": {"thread_id": "t", "checkpoint_id": "00003"}}
        for options in [
            {},
            {"limit": 0},
            {"limit": 2},
            {"filter": {"source": "loop"}},
            {"before": before},
        ]:
            assert ids(ours, **options) == ids(theirs, **options), options


class Note(BaseModel):
    text: str


class NotesState(BaseModel):
    notes: list[Note] = []


def _strict_graph_state(saver: BaseCheckpointSaver[Any]) -> Any:
    """The state a compiled graph with a Pydantic state reads back from ``saver``."""

    def add(state: NotesState) -> dict[str, Any]:
        return {"notes": [*state.notes, Note(text=f"note {len(state.notes)}")]}

    builder = StateGraph(NotesState)
    builder.add_node("add", add)
    builder.add_edge(START, "add")
    graph = builder.compile(checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": "strict"}}
    graph.invoke(NotesState(), config)
    graph.invoke(None, config)  # resumes from the stored checkpoint
    return graph.get_state(config).values


def test_a_compiled_graphs_allowlist_reads_its_pydantic_state(
    server: A2MServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # LANGGRAPH_STRICT_MSGPACK=true (read at import, so set here as it sets it): the
    # serializer allows only LangGraph's types, a compiled graph adds its state's through
    # with_allowlist.
    from langgraph._internal import _serde

    monkeypatch.setattr(_serde, "STRICT_MSGPACK_ENABLED", True)
    strict = JsonPlusSerializer(allowed_msgpack_modules=None)
    theirs = _strict_graph_state(InMemorySaver(serde=strict))
    with A2MClient.in_process(server) as client:
        ours = _strict_graph_state(A2MSaver(client, serde=strict))
    assert isinstance(theirs["notes"][0], Note)
    assert ours == theirs
    assert isinstance(ours["notes"][0], Note)
