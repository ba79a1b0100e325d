"""A2MSaver on every kind of conformant A2M server, not only the bundled one's defaults: a
plain 0.1 server (no timeline cursor, no ``where`` operators, no event log), one declaring
no ``max_recall_limit``, one returning 3 records a call (with and without a cursor), one
taking 2 records a call, and ones lacking an optional capability. Each method answers as
on the default server, side by side; where one call cannot carry the answer (no cursor and
a small ``max_recall_limit``) it says so with ``a2m.IncompleteListing``; writes go in
batches the server accepts, all or nothing; a server without ``keys`` is refused with one
typed error. Warnings are errors here, so a shape that warns where it need not fails."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from agent_kit import build_agent, call, script
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import INTERRUPT
from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_metadata

from a2m import (
    A2MClient,
    AsyncA2MClient,
    CapabilityNotSupported,
    IncompleteListing,
    QuotaExceeded,
)
from a2m_langchain.langgraph import A2MSaver, A2MStore
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_server.server import A2MServer
from a2m_testing.servers import Intercepted, MethodLog, refusal
from a2m_testing.shapes import (
    EVERY_CAPABILITY,
    SERVER_SHAPES,
    SMALL_RECALL_NO_CURSOR,
    client_on,
    lacking,
)

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")

COMPLETE = {**SERVER_SHAPES, **lacking("embeddings", "events", "scopes", "sessions", "tiers")}
"""Shapes on which every answer must equal the default server's."""
CAPPED = SMALL_RECALL_NO_CURSOR
"""No cursor and 3 records a call: a checkpoint with four writes cannot be read whole."""


@contextmanager
def saver_on(**config: Any) -> Iterator[tuple[A2MSaver, MethodLog]]:
    with client_on(**config) as (client, log):
        yield A2MSaver(client), log


def _at(thread: str, checkpoint_id: str | None = None) -> Any:
    config: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    if checkpoint_id is not None:
        config["configurable"]["checkpoint_id"] = checkpoint_id
    return config


def _fill(saver: A2MSaver, thread: str = "t1") -> list[str]:
    """Five checkpoints of two runs, four pending writes each."""
    ids: list[str] = []
    for step in range(5):
        metadata = generate_metadata(step=step, run_id=f"run-{step % 2}")
        stored = saver.put(
            _at(thread, ids[-1] if ids else None), generate_checkpoint(), metadata, {}
        )
        ids.append(stored["configurable"]["checkpoint_id"])
        saver.put_writes(stored, [(f"channel-{n}", n * step) for n in range(4)], f"task-{step}")
    return ids


def _seen(found: Any) -> tuple[int, list[tuple[str, str, Any]]] | None:
    return None if found is None else (found.metadata["step"], sorted(found.pending_writes or []))


def _answers(saver: A2MSaver) -> dict[str, Any]:
    """What each method answers on one scenario."""
    ids = _fill(saver)
    got: dict[str, Any] = {
        "latest": _seen(saver.get_tuple(_at("t1"))),
        "first": _seen(saver.get_tuple(_at("t1", ids[0]))),
        "list": [_seen(t) for t in saver.list(_at("t1"))],
        "list 2": [_seen(t) for t in saver.list(_at("t1"), limit=2)],
        "before": [_seen(t) for t in saver.list(_at("t1"), before=_at("t1", ids[3]))],
        "filtered": [_seen(t) for t in saver.list(_at("t1"), filter={"run_id": "run-0"})],
    }
    saver.copy_thread("t1", "t2")
    got["copy"] = [_seen(t) for t in saver.list(_at("t2"))]
    saver.delete_for_runs(["run-0"])
    got["runs deleted"] = [_seen(t) for t in saver.list(_at("t2"))]
    saver.prune(["t1"])
    got["pruned"] = [_seen(t) for t in saver.list(_at("t1"))]
    saver.delete_thread("t1")
    got["deleted"] = list(saver.list(_at("t1")))
    return got


@pytest.fixture(scope="module")
def on_the_default_server() -> dict[str, Any]:
    with saver_on() as (saver, _):
        return _answers(saver)


@pytest.mark.parametrize("shape", list(COMPLETE))
def test_every_method_answers_as_on_the_default_server(
    shape: str, on_the_default_server: dict[str, Any]
) -> None:
    with saver_on(**COMPLETE[shape]) as (saver, _):
        got = _answers(saver)
    assert len(on_the_default_server["list"]) == 5
    assert all(len(writes) == 4 for _, writes in on_the_default_server["list"])
    for name, answer in on_the_default_server.items():
        assert got[name] == answer, name


def test_without_a_cursor_a_small_limit_warns_rather_than_cuts_short() -> None:
    """Four writes and a checkpoint do not fit the three records one call returns: each
    read says so, and a checkpoint asked for by id is still found."""
    with saver_on(**CAPPED) as (saver, _):
        ids = _fill(saver)
        with pytest.warns(IncompleteListing, match="max_recall_limit"):
            first = saver.get_tuple(_at("t1", ids[0]))
        assert first is not None
        assert first.metadata["step"] == 0
        with pytest.warns(IncompleteListing):
            latest = saver.get_tuple(_at("t1"))
        assert latest is not None
        assert latest.metadata["step"] == 4
        with pytest.warns(IncompleteListing):
            listed = list(saver.list(_at("t1")))
        assert [t.metadata["step"] for t in listed] == [4, 3, 2]
        with pytest.warns(IncompleteListing):
            saver.copy_thread("t1", "t2")


def test_writes_go_in_batches_the_server_takes() -> None:
    """Five writes on a server taking two a call: three ``memory/remember``, each write
    there; a transcript of five new messages and the checkpoint: three more, the
    checkpoint last, in the call with the last message."""
    with A2MServer(ServerConfig(limits=LimitsConfig(max_records_per_call=2))) as server:
        log = MethodLog(server)
        with A2MClient.in_process(log) as client:
            saver = A2MSaver(client, transcript=True)
            stored = saver.put(_at("t"), generate_checkpoint(), generate_metadata(step=0), {})
            before = log.count("memory/remember")
            saver.put_writes(stored, [(f"c{n}", n) for n in range(5)], "task")
            assert log.count("memory/remember") == before + 3
            found = saver.get_tuple(stored)
            assert found is not None
            assert len(found.pending_writes or []) == 5
            checkpoint = generate_checkpoint()
            checkpoint["channel_values"]["messages"] = [
                HumanMessage(f"message {n}", id=f"m{n}") for n in range(5)
            ]
            before = log.count("memory/remember")
            saver.put(stored, checkpoint, generate_metadata(step=1), {"messages": "2"})
            assert log.count("memory/remember") == before + 3
            messages = client.timeline(key_prefix="langgraph/t/messages", limit=100).records
            assert [r.content for r in messages] == [f"message {n}" for n in range(5)]


def test_a_failed_batch_of_writes_leaves_none_of_them() -> None:
    """Two writes a call, and the fifth write too long for the server: the calls that went
    through are taken back, so the checkpoint holds none of the task's writes (LangGraph
    would read some as the task done)."""
    limits = LimitsConfig(max_records_per_call=2, max_content_length=120)
    with saver_on(limits=limits) as (saver, _):
        stored = saver.put(_at("t"), generate_checkpoint(), generate_metadata(step=0), {})
        writes: list[tuple[str, Any]] = [(f"c{n}", n) for n in range(4)] + [("c" * 200, 4)]
        with pytest.raises(QuotaExceeded):
            saver.put_writes(stored, writes, "task")
        found = saver.get_tuple(stored)
        assert found is not None
        assert found.pending_writes == []
        saver.put_writes(stored, writes[:4], "task")
        found = saver.get_tuple(stored)
        assert found is not None
        assert len(found.pending_writes or []) == 4


def test_a_failed_batch_of_writes_keeps_what_an_earlier_call_stored() -> None:
    """The task's four writes stored, then the same task's writes again with a fifth too
    long for the server: the repeated call fails, and the four stored before stay."""
    limits = LimitsConfig(max_records_per_call=2, max_content_length=120)
    with saver_on(limits=limits) as (saver, _):
        stored = saver.put(_at("t"), generate_checkpoint(), generate_metadata(step=0), {})
        writes: list[tuple[str, Any]] = [(f"c{n}", n) for n in range(4)] + [("c" * 200, 4)]
        saver.put_writes(stored, writes[:4], "task")
        with pytest.raises(QuotaExceeded):
            saver.put_writes(stored, writes, "task")
        found = saver.get_tuple(stored)
        assert found is not None
        assert [(channel, value) for _, channel, value in found.pending_writes or []] == writes[:4]


def test_a_failed_batch_of_writes_puts_back_the_special_write_it_replaced() -> None:
    """A stored interrupt, then the task's writes again with a new interrupt first and a
    write too long for the server last: the new interrupt replaced the old in place (a
    special write replaces the last), so when the batch fails the old one is put back."""
    limits = LimitsConfig(max_records_per_call=2, max_content_length=120)
    with saver_on(limits=limits) as (saver, _):
        stored = saver.put(_at("t"), generate_checkpoint(), generate_metadata(step=0), {})
        saver.put_writes(stored, [(INTERRUPT, "old")], "task")
        with pytest.raises(QuotaExceeded):
            saver.put_writes(stored, [(INTERRUPT, "new"), ("c0", 0), ("c" * 200, 1)], "task")
        found = saver.get_tuple(stored)
        assert found is not None
        assert [(channel, value) for _, channel, value in found.pending_writes or []] == [
            (INTERRUPT, "old")
        ]


def test_a_transcript_put_that_fails_leaves_neither_messages_nor_checkpoint() -> None:
    """A checkpoint with five new messages on a server taking two records a call, the
    last message too long: the put fails, and the thread holds neither the checkpoint nor
    any of its messages; the same put without the long message stores all of them."""
    limits = LimitsConfig(max_records_per_call=2, max_content_length=120)
    with client_on(limits=limits) as (client, _):
        saver = A2MSaver(client, transcript=True)
        checkpoint = generate_checkpoint()
        said = [HumanMessage(f"message {n}", id=f"m{n}") for n in range(4)]
        checkpoint["channel_values"]["messages"] = [*said, HumanMessage("x" * 200, id="m4")]
        with pytest.raises(QuotaExceeded):
            saver.put(_at("t"), checkpoint, generate_metadata(step=0), {"messages": "1"})
        assert client.timeline(key_prefix="langgraph/t/").records == []
        checkpoint["channel_values"]["messages"] = said
        saver.put(_at("t"), checkpoint, generate_metadata(step=0), {"messages": "1"})
        assert saver.get_tuple(_at("t")) is not None
        messages = client.timeline(key_prefix="langgraph/t/messages").records
        assert [r.content for r in messages] == [f"message {n}" for n in range(4)]


def refusing_one_remember(taken: int) -> tuple[dict[str, Any], Any]:
    """A hook for :class:`Intercepted` that, once ``state["armed"]``, lets ``taken``
    ``memory/remember`` calls through and refuses the next one (QUOTA_EXCEEDED), as a
    server running out of room part-way would; every call after it goes through."""
    state: dict[str, Any] = {"armed": False, "taken": taken}

    def hook(request: dict[str, Any], answer: Any) -> str | None:
        if state["armed"] and request.get("method") == "memory/remember":
            if state["taken"] == 0:
                state["armed"] = False
                return refusal(request, -32006, "the store is full")
            state["taken"] -= 1
        return answer()  # type: ignore[no-any-return]

    return state, hook


def test_a_copy_refused_part_way_leaves_the_target_thread_as_it_was() -> None:
    """A thread of one checkpoint and three writes copied onto a thread holding its own
    checkpoint (the same id) and a write, two records a call, the server refusing the
    second call: the copy fails, and the target is as it was, the checkpoint the first
    call replaced put back."""
    config = ServerConfig(limits=LimitsConfig(max_records_per_call=2))
    state, hook = refusing_one_remember(taken=1)
    with A2MServer(config) as server, A2MClient.in_process(Intercepted(server, hook)) as client:
        saver = A2MSaver(client)
        checkpoint = generate_checkpoint()
        source = saver.put(_at("a"), checkpoint, generate_metadata(step=0), {})
        saver.put_writes(source, [(f"c{n}", n) for n in range(3)], "task")
        target = saver.put(_at("b"), checkpoint, generate_metadata(step=7), {})
        saver.put_writes(target, [("mine", 1)], "task")
        before = client.timeline(key_prefix="langgraph/b/", embeddings=True).records
        state["armed"] = True
        with pytest.raises(QuotaExceeded, match="full"):
            saver.copy_thread("a", "b")
        after = client.timeline(key_prefix="langgraph/b/", embeddings=True).records
    assert [r.model_dump(exclude={"updated_at", "revision"}) for r in after] == [
        r.model_dump(exclude={"updated_at", "revision"}) for r in before
    ]


def test_a_server_without_keys_is_refused_at_the_first_call() -> None:
    with saver_on(capabilities=EVERY_CAPABILITY - {"keys"}) as (saver, log):
        with pytest.raises(CapabilityNotSupported, match="'keys'"):
            saver.put(_at("t"), generate_checkpoint(), generate_metadata(step=0), {})
        with pytest.raises(CapabilityNotSupported, match="'keys'"):
            saver.get_tuple(_at("t"))
        assert log.count("memory/remember") == log.count("memory/timeline") == 0


def _agent_run(config: dict[str, Any]) -> list[tuple[str, str]]:
    """A tool-calling agent, two turns on one thread, through LangGraph itself."""
    with A2MServer(ServerConfig(**config)) as server, A2MClient.in_process(server) as client:
        saver, store = A2MSaver(client, transcript=True), A2MStore(client)
        turns = script(
            call("save_memory", "c1", text="likes green tea"),
            call("save_memory", "c2", text="walks at noon"),
            "Noted both.",
            call("recall_memories", "c3", query="tea"),
            "You like green tea.",
        )
        agent = build_agent(turns, store=store, checkpointer=saver)
        thread: Any = {"configurable": {"thread_id": "chat", "user_id": "ann"}}
        agent.invoke({"messages": [HumanMessage("remember two things")]}, thread)
        state = agent.invoke({"messages": [HumanMessage("what do I drink?")]}, thread)
        history = list(saver.list(thread))
        assert len(history) >= 8
        return [(m.type, str(m.content)) for m in state["messages"]]


@pytest.mark.parametrize(
    "shape", ["plain 0.1", "cursor, max_recall_limit 3", "max_records_per_call 2"]
)
def test_an_agent_runs_as_on_the_default_server(shape: str) -> None:
    assert _agent_run(COMPLETE[shape]) == _agent_run({})


def test_the_async_surface_batches_takes_back_and_pages_alike() -> None:
    """Over an AsyncA2MClient: writes in batches of two, a failed batch taken back, and a
    listing paged 3 records a call, as the synchronous surface does."""

    async def run(server: A2MServer) -> None:
        async with AsyncA2MClient.in_process(server) as client:
            saver = A2MSaver(client)
            stored = await saver.aput(
                _at("t"), generate_checkpoint(), generate_metadata(step=0), {}
            )
            await saver.aput_writes(stored, [(f"c{n}", n) for n in range(5)], "one")
            with pytest.raises(QuotaExceeded):
                await saver.aput_writes(
                    stored, [(f"c{n}", n) for n in range(4)] + [("c" * 200, 4)], "two"
                )
            found = await saver.aget_tuple(stored)
            assert found is not None
            assert sorted(found.pending_writes or []) == [("one", f"c{n}", n) for n in range(5)]
            for step in range(1, 5):
                meta = generate_metadata(step=step)
                stored = await saver.aput(stored, generate_checkpoint(), meta, {})
            steps = [t.metadata["step"] async for t in saver.alist(_at("t"))]
            assert steps == [4, 3, 2, 1, 0]

    limits = LimitsConfig(max_records_per_call=2, max_recall_limit=3, max_content_length=120)
    with A2MServer(ServerConfig(limits=limits)) as server:
        asyncio.run(run(server))
