"""What the real adapter (``a2m.adapter``) offers beyond the contract's four methods, and the
rule the contract rests on: a namespace scopes an adapter's writes and deletes, never its
reads.

Each test is written once and runs on an ``A2MAdapter`` and on an ``AsyncA2MAdapter`` (ids
``[sync-…]`` and ``[async-…]``), over every binding: the tests are coroutines, and every
adapter or client call goes through :func:`settle`, which awaits what the async flavour
returns and passes the sync flavour's result through.

A test marked ``xfail(strict=True)`` states what the adapter should do and does not yet; its
reason names the defect. Once the adapter is fixed the test passes, strict xfail reports
that as a failure, and the mark comes off."""

from __future__ import annotations

import inspect
import json
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Generator,
    Iterator,
    Sequence,
)
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import anyio
import pytest
import respx

from a2m import A2MClient, A2MError, AsyncA2MClient, CapabilityNotSupported, InvalidParams
from a2m.adapter import A2MAdapter, AsyncA2MAdapter, Change, EntryList, ScoredEntry
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_types import CAPABILITIES, FetchResult, Record
from a2m_types.rest import record_key

pytestmark = pytest.mark.anyio

Adapter = A2MAdapter | AsyncA2MAdapter
Client = A2MClient | AsyncA2MClient
Changes = Iterator[Change] | AsyncIterator[Change]

NEAR = [1.0, 0.0, 0.0]
MIDDLE = [0.6, 0.8, 0.0]
FAR = [-1.0, 0.0, 0.0]

ALL_BUT_KEYS = sorted(set(CAPABILITIES) - {"keys"})
SMALL_RECALL = ServerConfig(limits=LimitsConfig(max_recall_limit=3))
"""A server answering at most 3 records per recall or timeline: 5 entries exceed it."""


async def settle(result: Any) -> Any:
    """The result of an adapter or client call: awaited for the async flavour, as it is for
    the sync one."""
    return await result if inspect.isawaitable(result) else result


async def failure(call: Callable[[], Any]) -> Exception | None:
    """What ``call`` raises, or ``None``: a method call, settled, or a watch, whose first
    change is taken (a watch checks its arguments there)."""
    try:
        result = call()
        if isinstance(result, (Generator, AsyncGenerator)):
            await next_change(result)
        else:
            await settle(result)
    except Exception as error:
        return error
    return None


def found(hits: Sequence[ScoredEntry]) -> set[tuple[str, str]]:
    """The ``(namespace, key)`` of each query result."""
    return {(hit.entry.namespace, hit.entry.key) for hit in hits}


def listed(page: EntryList) -> list[tuple[str, str]]:
    """The ``(namespace, key)`` of each listed entry, in the order listed."""
    return [(entry.namespace, entry.key) for entry in page.entries]


@dataclass
class Memory:
    """A fresh store, reached over this run's binding by a client of this run's flavour."""

    flavour: str
    client: Client
    open_client: Callable[..., Client]

    def adapter(
        self,
        namespace: str,
        *,
        source_framework: str | None = None,
        agent: str | None = None,
        session: str | None = None,
    ) -> Adapter:
        """An adapter of this flavour on :attr:`client`, scoped to ``namespace``."""
        identity = {"source_framework": source_framework, "agent": agent, "session": session}
        if isinstance(self.client, AsyncA2MClient):
            return AsyncA2MAdapter(self.client, namespace, **identity)
        return A2MAdapter(self.client, namespace, **identity)

    def elsewhere(self, **server: Any) -> Memory:
        """This flavour and binding on a new server built with ``server`` (``config=``,
        ``capabilities=``)."""
        return Memory(self.flavour, self.open_client(**server), self.open_client)

    async def fetch(self, namespace: str, key: str) -> Record | None:
        """The A2M record behind the entry ``(namespace, key)``, read with the bare client."""
        fetched: FetchResult = await settle(self.client.fetch(record_key(namespace, key)))
        return fetched.record


@pytest.fixture(params=["sync", "async"])
def memory(
    request: pytest.FixtureRequest,
    a2m_binding: str,
    a2m_client_factory: Callable[..., A2MClient],
    a2m_async_client_factory: Callable[..., AsyncA2MClient],
) -> Memory:
    """A fresh store and a client of each flavour in turn, over each binding."""
    factory = a2m_async_client_factory if request.param == "async" else a2m_client_factory

    def open_client(**server: Any) -> Client:
        return factory(a2m_binding, **server)

    return Memory(request.param, open_client(), open_client)


async def write_tree(memory: Memory) -> None:
    """Entries in a tree of namespaces, with two traps for a prefix match that ignores
    segments: ``acme/wf-10`` and the key ``wf-1x`` of ``acme`` both start with
    ``acme/wf-1`` and are not in it."""
    for namespace, key in (
        ("acme", "a"),
        ("acme", "wf-1x"),
        ("acme/wf-1", "b"),
        ("acme/wf-1/agent-a", "c"),
        ("acme/wf-10", "d"),
        ("globex", "e"),
    ):
        await settle(
            memory.adapter(namespace).write(key, "semantic", f"a note: {key} of {namespace}", NEAR)
        )


TREE = {
    ("acme", "a"),
    ("acme", "wf-1x"),
    ("acme/wf-1", "b"),
    ("acme/wf-1/agent-a", "c"),
    ("acme/wf-10", "d"),
    ("globex", "e"),
}


# --- the rule: reads cross namespaces, writes and deletes do not ---------------------------


async def test_a_query_with_no_namespace_reads_every_namespace(memory: Memory) -> None:
    """Agents of three frameworks, each in its own namespace (and, where the server keeps
    scopes, each the owner of what it wrote, in tiers that are not shared), find all of it."""
    planner = memory.adapter("acme/wf-1/agent-a", source_framework="langgraph", agent="planner")
    critic = memory.adapter("acme/wf-1/agent-b", source_framework="crewai", agent="critic")
    support = memory.adapter("globex/support", source_framework="n8n")
    await settle(planner.write("plan", "working", "draft the migration plan", NEAR))
    await settle(critic.write("review", "episodic", "the plan lacks a rollback step", MIDDLE))
    await settle(support.write("ticket", "semantic", "a customer asked about the migration", FAR))
    everything = {
        (planner.namespace, "plan"),
        (critic.namespace, "review"),
        (support.namespace, "ticket"),
    }
    for reader in (planner, critic, support):
        assert found(await settle(reader.query(NEAR, top_k=10))) == everything, reader.namespace
        by_text = found(await settle(reader.query(text="migration", top_k=10)))
        assert {(planner.namespace, "plan"), (support.namespace, "ticket")} <= by_text


async def test_read_and_list_look_into_another_namespace(memory: Memory) -> None:
    planner = memory.adapter("acme/wf-1/agent-a", agent="planner")
    critic = memory.adapter("acme/wf-1/agent-b", agent="critic")
    await settle(planner.write("plan", "working", "draft the migration plan"))

    assert await settle(critic.read("plan")) is None, "read looks in its own namespace"
    entry = await settle(critic.read("plan", namespace=planner.namespace))
    assert entry is not None, "read(namespace=…) looks into another namespace"
    assert (entry.namespace, entry.key, entry.value) == (
        planner.namespace,
        "plan",
        "draft the migration plan",
    )
    assert await settle(critic.read("nothing", namespace=planner.namespace)) is None

    assert listed(await settle(critic.list())) == []
    theirs = await settle(critic.list(namespace=planner.namespace))
    assert listed(theirs) == [(planner.namespace, "plan")]


async def test_a_delete_or_clear_never_reaches_another_namespace(memory: Memory) -> None:
    parent = memory.adapter("acme/wf-1")
    child = memory.adapter("acme/wf-1/agent-a")
    sibling = memory.adapter("acme/wf-2")
    for adapter in (parent, child, sibling):
        await settle(adapter.write("note", "semantic", f"the note of {adapter.namespace}"))
        await settle(adapter.write("todo", "working", f"the todo of {adapter.namespace}"))

    await settle(child.delete("note"))
    assert await settle(child.read("note")) is None
    assert await settle(parent.read("note")) is not None
    assert await settle(sibling.read("note")) is not None

    assert await settle(parent.clear()) == 2
    assert listed(await settle(parent.list(recursive=True))) == [(child.namespace, "todo")]
    assert len((await settle(sibling.list())).entries) == 2

    assert await settle(sibling.clear()) == 2
    assert listed(await settle(child.list())) == [(child.namespace, "todo")]


@pytest.mark.parametrize("adapter_class", [A2MAdapter, AsyncA2MAdapter])
def test_only_reads_take_a_namespace(adapter_class: type[Adapter]) -> None:
    """There is no way to write or delete elsewhere: only the reads name a namespace."""
    for method in ("write", "delete", "clear"):
        parameters = inspect.signature(getattr(adapter_class, method)).parameters
        assert "namespace" not in parameters, method
    for method in ("read", "query", "list", "watch"):
        assert "namespace" in inspect.signature(getattr(adapter_class, method)).parameters


async def test_a_write_cannot_take_over_an_entry_of_another_namespace(memory: Memory) -> None:
    agent = memory.adapter("acme/wf-1/agent-a")
    workflow = memory.adapter("acme/wf-1")
    await settle(agent.write("note", "semantic", "the agent's note"))
    with pytest.raises(A2MError):
        await settle(workflow.write("agent-a/note", "semantic", "the workflow's note"))
    kept = await settle(agent.read("note"))
    assert kept is not None, "a write from acme/wf-1 removed an entry of acme/wf-1/agent-a"
    assert kept.value == "the agent's note"


# --- query(namespace=…, recursive=…) -------------------------------------------------------


async def test_a_query_in_a_namespace_is_exact(memory: Memory) -> None:
    await write_tree(memory)
    reader = memory.adapter("initech")

    async def query(namespace: str) -> set[tuple[str, str]]:
        return found(await settle(reader.query(NEAR, top_k=20, namespace=namespace)))

    assert await query("acme/wf-1") == {("acme/wf-1", "b")}
    assert await query("acme") == {("acme", "a"), ("acme", "wf-1x")}
    assert await query("acme/wf-1/agent-a") == {("acme/wf-1/agent-a", "c")}
    assert await query("initech") == set()
    by_text = await settle(reader.query(text="note", namespace="acme/wf-1", top_k=20))
    assert found(by_text) == {("acme/wf-1", "b")}


async def test_a_recursive_query_takes_in_the_namespace_and_all_beneath(memory: Memory) -> None:
    await write_tree(memory)
    reader = memory.adapter("initech")

    async def query(namespace: str) -> set[tuple[str, str]]:
        hits = await settle(reader.query(NEAR, top_k=20, namespace=namespace, recursive=True))
        return found(hits)

    assert await query("acme/wf-1") == {("acme/wf-1", "b"), ("acme/wf-1/agent-a", "c")}
    assert await query("acme") == {key for key in TREE if key[0].startswith("acme")}
    assert await query("acme/wf-1/agent-a") == {("acme/wf-1/agent-a", "c")}
    assert await query("initech") == set()
    by_text = await settle(reader.query(text="note", namespace="acme/wf-1", recursive=True))
    assert found(by_text) == {("acme/wf-1", "b"), ("acme/wf-1/agent-a", "c")}
    assert found(await settle(reader.query(NEAR, top_k=20))) == TREE


# --- list() ----------------------------------------------------------------------------


async def test_list_pages_oldest_first(memory: Memory) -> None:
    adapter = memory.adapter("acme/wf-1")
    for number in range(5):
        await settle(adapter.write(f"k{number}", "semantic", number))
    await settle(adapter.write("k0", "semantic", "replaced"))  # an upsert keeps its place

    every = await settle(adapter.list())
    assert [entry.key for entry in every.entries] == ["k0", "k1", "k2", "k3", "k4"]
    assert (every.total, every.next_offset) == (5, None)
    assert every.entries[0].value == "replaced"

    for start, keys, following in (
        (0, ["k0", "k1"], 2),
        (2, ["k2", "k3"], 4),
        (4, ["k4"], None),
        (5, [], None),
    ):
        page = await settle(adapter.list(limit=2, offset=start))
        got = ([entry.key for entry in page.entries], page.total, page.next_offset)
        assert got == (keys, 5, following), f"offset {start}"

    collected: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await settle(adapter.list(limit=3, offset=offset))
        collected += [entry.key for entry in page.entries]
        offset = page.next_offset
    assert collected == ["k0", "k1", "k2", "k3", "k4"], "following next_offset visits all"


async def test_list_filters_by_type_and_tags(memory: Memory) -> None:
    adapter = memory.adapter("acme/wf-1")
    await settle(adapter.write("fact", "semantic", "metric units", meta={"tags": ["user"]}))
    await settle(
        adapter.write("howto", "procedural", ["build", "ship"], meta={"tags": ["user", "ops"]})
    )
    await settle(adapter.write("log", "episodic", "deployed", meta={"tags": ["ops"]}))
    await settle(adapter.write("step", "procedural", ["rollback"]))

    async def keys(**filters: Any) -> tuple[list[str], int]:
        page = await settle(adapter.list(**filters))
        return [entry.key for entry in page.entries], page.total

    assert await keys(type="procedural") == (["howto", "step"], 2)
    assert await keys(type="working") == ([], 0)
    assert await keys(tags=["ops"]) == (["howto", "log"], 2)
    assert await keys(tags=["user", "ops"]) == (["howto"], 1), "every tag must match"
    assert await keys(type="procedural", tags=["ops"]) == (["howto"], 1)
    assert await keys(type="procedural", limit=1) == (["howto"], 2)


async def test_list_recursive_takes_in_the_namespaces_beneath(memory: Memory) -> None:
    await write_tree(memory)
    workflow = memory.adapter("acme/wf-1")
    assert listed(await settle(workflow.list())) == [("acme/wf-1", "b")]
    beneath = await settle(workflow.list(recursive=True))
    assert listed(beneath) == [("acme/wf-1", "b"), ("acme/wf-1/agent-a", "c")]
    assert beneath.total == 2
    everything = await settle(workflow.list(namespace="acme", recursive=True))
    assert set(listed(everything)) == {key for key in TREE if key[0].startswith("acme")}


async def test_a_top_k_past_the_servers_recall_limit_returns_what_it_allows(
    memory: Memory,
) -> None:
    """``top_k`` is an upper bound: 10 asked of a server returning at most 3 records a
    call gives the best 3, where the recall asking for 10 was refused (QUOTA_EXCEEDED)."""
    adapter = memory.elsewhere(config=SMALL_RECALL).adapter("acme/wf-1")
    for number in range(5):
        await settle(adapter.write(f"k{number}", "semantic", f"migration step {number}"))
    hits = await settle(adapter.query(text="migration", top_k=10))
    assert len(hits) == 3
    assert len(await settle(adapter.query(text="migration", top_k=2))) == 2


async def test_list_is_complete_past_the_servers_recall_limit(memory: Memory) -> None:
    """A server paging by cursor lets a listing reach every entry, however few records
    one call may carry: the total is exact and nothing is truncated."""
    adapter = memory.elsewhere(config=SMALL_RECALL).adapter("acme/wf-1")
    for number in range(5):
        await settle(adapter.write(f"k{number}", "semantic", number))
    page = await settle(adapter.list(limit=2))
    assert (page.total, page.next_offset, page.truncated) == (5, 2, False)
    every = await settle(adapter.list())
    assert [entry.key for entry in every.entries] == ["k0", "k1", "k2", "k3", "k4"]


async def test_list_reaches_back_as_far_as_a_plain_servers_recall_limit(memory: Memory) -> None:
    """Without cursors, A2M's timeline has no offset, so one listing carries the newest
    ``max_recall_limit`` entries (documented on ``list``); it never invents a total it
    cannot see, and says it was truncated."""
    plain = replace(SMALL_RECALL, timeline_cursor=False)
    adapter = memory.elsewhere(config=plain).adapter("acme/wf-1")
    for number in range(5):
        await settle(adapter.write(f"k{number}", "semantic", number))
    page = await settle(adapter.list(limit=2))
    assert (page.total, page.next_offset, page.truncated) == (3, 2, True)
    every = await settle(adapter.list())
    assert [entry.key for entry in every.entries] == ["k2", "k3", "k4"]
    assert every.truncated


async def test_a_query_asks_no_more_than_the_servers_recall_limit(memory: Memory) -> None:
    """``top_k`` 5 (the default) on a server returning 3 records a call: the best three,
    the same as the first three of a server without that cap, rather than a refusal."""
    ranked = []
    for server in (memory.elsewhere(), memory.elsewhere(config=SMALL_RECALL)):
        adapter = server.adapter("acme/wf-1")
        for number, vector in enumerate([FAR, MIDDLE, NEAR, MIDDLE, FAR]):
            await settle(adapter.write(f"k{number}", "semantic", number, vector))
        ranked.append([hit.entry.key for hit in await settle(adapter.query(NEAR))])
    assert len(ranked[0]) == 5
    assert ranked[1] == ranked[0][:3]


async def test_list_refuses_a_limit_or_offset_out_of_range(memory: Memory) -> None:
    adapter = memory.adapter("acme/wf-1")
    await settle(adapter.write("k", "semantic", "v"))
    for limit, offset in ((0, 0), (-1, 0), (50, -1)):
        with pytest.raises(InvalidParams):
            await settle(adapter.list(limit=limit, offset=offset))


# --- clear() ---------------------------------------------------------------------------


async def test_clear_by_type_and_tags_returns_the_count(memory: Memory) -> None:
    adapter = memory.adapter("acme/wf-1")
    await settle(adapter.write("scratch", "working", "half a thought", meta={"tags": ["draft"]}))
    await settle(adapter.write("buffer", "working", "the last turn"))
    await settle(adapter.write("claim", "semantic", "unverified", meta={"tags": ["draft"]}))
    await settle(adapter.write("rule", "procedural", ["check twice"], meta={"tags": ["ops"]}))
    await settle(adapter.write("fact", "semantic", "metric units", meta={"tags": ["user"]}))

    assert await settle(adapter.clear(type="working")) == 2
    assert await settle(adapter.clear(tags=["draft"])) == 1
    assert await settle(adapter.clear(tags=["nothing"])) == 0
    assert await settle(adapter.clear(type="episodic")) == 0
    assert await settle(adapter.clear(type="procedural", tags=["user"])) == 0
    assert listed(await settle(adapter.list())) == [
        (adapter.namespace, "rule"),
        (adapter.namespace, "fact"),
    ]
    assert await settle(adapter.clear()) == 2
    assert (await settle(adapter.list())).total == 0
    assert await settle(adapter.clear()) == 0, "clearing an empty namespace clears nothing"


async def test_clear_empties_a_namespace_past_the_servers_recall_limit(memory: Memory) -> None:
    adapter = memory.elsewhere(config=SMALL_RECALL).adapter("acme/wf-1")
    for number in range(5):
        await settle(adapter.write(f"k{number}", "semantic", number))
    assert await settle(adapter.clear()) == 5
    assert (await settle(adapter.list())).total == 0


# --- watch() ---------------------------------------------------------------------------

PINGS = ("user/ping", "ping")
"""The keys :func:`start` writes until the watch sees one; the tests skip their changes."""


@asynccontextmanager
async def watching(adapter: Adapter, pattern: str | None, **options: Any) -> AsyncIterator[Changes]:
    """``adapter.watch(pattern, **options)``, polling every 50 ms, closed on the way out."""
    changes: Changes = adapter.watch(pattern, poll_interval=0.05, **options)
    try:
        yield changes
    finally:
        if isinstance(changes, AsyncGenerator):
            await changes.aclose()
        elif isinstance(changes, Generator):
            with suppress(ValueError):  # still running in a thread abandoned on a timeout
                changes.close()


async def next_change(changes: Changes, seconds: float = 10.0) -> Change:
    """The next change; a sync watch blocks a worker thread, never the event loop."""
    with anyio.fail_after(seconds):
        if isinstance(changes, AsyncIterator):
            return await changes.__anext__()
        return await anyio.to_thread.run_sync(next, changes, abandon_on_cancel=True)


async def start(changes: Changes, writer: Adapter, ping: str = PINGS[0]) -> None:
    """Return once the watch follows the event log (it fixes "now" at its first poll, and
    sees nothing written before): ``writer`` writes ``ping`` until the watch reports it."""
    seen = anyio.Event()

    async def keep_pinging() -> None:
        while not seen.is_set():
            await settle(writer.write(ping, "working", "ping"))
            with anyio.move_on_after(0.05):
                await seen.wait()

    async with anyio.create_task_group() as group:
        group.start_soon(keep_pinging)
        change = await next_change(changes)
        seen.set()
    assert (change.event, change.namespace, change.key) == ("write", writer.namespace, ping)


async def changes_until(changes: Changes, namespace: str, key: str) -> list[Change]:
    """The changes up to and including the first write of ``(namespace, key)``, pings left
    out. Changes come in the event log's order, so the list holds every change the watch
    reports of what was done before that write: write one last, as a sentinel, to see
    what a watch leaves out without waiting for a change that never comes."""
    seen: list[Change] = []
    while True:
        change = await next_change(changes)
        if change.key in PINGS:
            continue
        seen.append(change)
        if (change.event, change.namespace, change.key) == ("write", namespace, key):
            return seen


def what(changes: list[Change]) -> list[tuple[str, str, str]]:
    return [(change.event, change.namespace, change.key) for change in changes]


async def test_watch_yields_writes_of_matching_keys(memory: Memory) -> None:
    mine = memory.adapter("acme/wf-1")
    child = memory.adapter("acme/wf-1/agent-a")
    async with watching(mine, "user/*") as changes:
        await start(changes, mine)
        await settle(mine.write("misc", "semantic", "no match: another key"))
        await settle(mine.write("user/goal/city", "semantic", "no match: * is one segment"))
        await settle(child.write("user/goal", "semantic", "no match: another namespace"))
        await settle(mine.write("user/goal", "semantic", "ship the translator"))
        seen = await changes_until(changes, mine.namespace, "user/goal")
    assert what(seen) == [("write", mine.namespace, "user/goal")]
    entry = seen[0].entry
    assert entry is not None, "a write change carries the entry as it now is"
    assert (entry.namespace, entry.key, entry.value) == (
        mine.namespace,
        "user/goal",
        "ship the translator",
    )


async def test_watch_yields_deletes_of_matching_keys(memory: Memory) -> None:
    mine = memory.adapter("acme/wf-1")
    async with watching(mine, "user/*") as changes:
        await start(changes, mine)
        await settle(mine.write("user/goal", "semantic", "ship the translator"))
        await changes_until(changes, mine.namespace, "user/goal")
        await settle(mine.delete("user/goal"))
        await settle(mine.write("user/next", "semantic", "written after the delete"))
        seen = await changes_until(changes, mine.namespace, "user/next")
    assert what(seen) == [
        ("delete", mine.namespace, "user/goal"),
        ("write", mine.namespace, "user/next"),
    ]
    assert seen[0].entry is None, "a delete change carries no entry"


async def test_watch_follows_another_namespace(memory: Memory) -> None:
    watcher = memory.adapter("initech")
    workflow = memory.adapter("acme/wf-1")
    agent = memory.adapter("acme/wf-1/agent-a")
    async with watching(watcher, "user/*", namespace="acme/wf-1") as changes:
        await start(changes, workflow)
        await settle(agent.write("user/goal", "semantic", "beneath: only with recursive"))
        await settle(watcher.write("user/goal", "semantic", "its own namespace is not watched"))
        await settle(workflow.write("user/goal", "semantic", "in acme/wf-1"))
        seen = await changes_until(changes, workflow.namespace, "user/goal")
    assert what(seen) == [("write", workflow.namespace, "user/goal")]


async def test_watch_recursive_takes_in_the_namespaces_beneath(memory: Memory) -> None:
    watcher = memory.adapter("initech")
    workflow = memory.adapter("acme/wf-1")
    agent = memory.adapter("acme/wf-1/agent-a")
    async with watching(watcher, "user/*", namespace="acme/wf-1", recursive=True) as changes:
        await start(changes, workflow)
        await settle(memory.adapter("acme/wf-10").write("user/goal", "semantic", "not beneath"))
        await settle(agent.write("user/goal", "semantic", "beneath acme/wf-1"))
        await settle(workflow.write("user/end", "semantic", "the sentinel"))
        seen = await changes_until(changes, workflow.namespace, "user/end")
    assert what(seen) == [
        ("write", agent.namespace, "user/goal"),
        ("write", workflow.namespace, "user/end"),
    ]


async def test_watch_of_every_namespace(memory: Memory) -> None:
    watcher = memory.adapter("initech")
    agent = memory.adapter("acme/wf-1/agent-a")
    async with watching(watcher, None, namespace="*") as changes:
        await start(changes, watcher, ping="ping")
        await settle(memory.adapter("globex").write("goal", "semantic", "anywhere"))
        await settle(agent.write("goal", "semantic", "anywhere"))
        seen = await changes_until(changes, agent.namespace, "goal")
    assert what(seen) == [("write", "globex", "goal"), ("write", agent.namespace, "goal")]


async def test_watch_of_every_namespace_sees_keys_with_slashes(memory: Memory) -> None:
    watcher = memory.adapter("initech")
    agent = memory.adapter("acme/wf-1/agent-a")
    async with watching(watcher, None, namespace="*") as changes:
        await start(changes, watcher, ping="ping")
        await settle(agent.write("user/goal", "semantic", "a key with a slash"))
        await settle(watcher.write("end", "semantic", "the sentinel"))
        seen = await changes_until(changes, watcher.namespace, "end")
    assert what(seen) == [
        ("write", agent.namespace, "user/goal"),
        ("write", watcher.namespace, "end"),
    ]


# --- provenance ------------------------------------------------------------------------


async def test_provenance_is_written_into_every_entry(memory: Memory) -> None:
    adapter = memory.adapter(
        "acme/wf-1/agent-a", source_framework="langgraph", agent="planner", session="conv-42"
    )
    entry = await settle(adapter.write("plan", "working", "draft the migration plan"))
    assert (entry.meta.source_framework, entry.meta.source_agent) == ("langgraph", "planner")
    record = await memory.fetch(adapter.namespace, "plan")
    assert record is not None
    assert record.metadata is not None
    assert record.metadata["source_framework"] == "langgraph"
    assert record.metadata["source_agent"] == "planner"
    capabilities = memory.client.capabilities
    assert record.owner == ("planner" if "scopes" in capabilities else None), (
        "the agent owns its records where the server declares scopes"
    )
    assert record.session == ("conv-42" if "sessions" in capabilities else None), (
        "the session is the conversation the records belong to"
    )

    anonymous = memory.adapter("acme/wf-1/agent-b")
    entry = await settle(anonymous.write("note", "semantic", "who wrote this?"))
    assert (entry.meta.source_framework, entry.meta.source_agent) == (None, None)
    record = await memory.fetch(anonymous.namespace, "note")
    assert record is not None
    assert (record.owner, record.session) == (None, None)


# --- the client belongs to the caller ----------------------------------------------------


async def test_the_adapter_never_closes_its_client(memory: Memory) -> None:
    adapter = memory.adapter("acme/wf-1")
    if isinstance(adapter, AsyncA2MAdapter):
        async with adapter:
            await adapter.write("note", "semantic", "kept")
        with pytest.raises(LookupError):
            async with adapter:
                raise LookupError("the block fails")
    else:
        with adapter:
            adapter.write("note", "semantic", "kept")
        with pytest.raises(LookupError), adapter:
            raise LookupError("the block fails")
    del adapter
    record = await memory.fetch("acme/wf-1", "note")
    assert record is not None, "the client still answers after the adapter is done with"
    again = await settle(memory.adapter("acme/wf-1").read("note"))
    assert again is not None


# --- refusals --------------------------------------------------------------------------


async def test_a_server_without_keys_is_refused(memory: Memory) -> None:
    bare = memory.elsewhere(capabilities=ALL_BUT_KEYS)
    adapter = bare.adapter("acme/wf-1")
    calls: dict[str, Callable[[], Any]] = {
        "write": lambda: adapter.write("k", "semantic", "v"),
        "read": lambda: adapter.read("k"),
        "query": lambda: adapter.query(text="v"),
        "delete": lambda: adapter.delete("k"),
        "list": lambda: adapter.list(),
        "clear": lambda: adapter.clear(),
    }
    outcomes = {name: await failure(call) for name, call in calls.items()}
    outcomes["watch"] = await failure(lambda: adapter.watch("user/*"))
    wrong = {
        name: error
        for name, error in outcomes.items()
        if not (isinstance(error, CapabilityNotSupported) and "keys" in str(error))
    }
    assert not wrong, f"not refused with CapabilityNotSupported naming 'keys': {wrong}"
    assert not (await settle(bare.client.timeline())).records, "nothing was written"


BAD_NAMESPACES = [
    "Acme",
    "acme//wf-1",
    "acme/wf 1",
    "",
    "/acme",
    "acme/",
    "a" * 257,
    "acme/entries",
]
BAD_TYPES = ["memo", "Semantic", ""]
BAD_KEYS = ["", "a/../b", "x" * 513]


@dataclass(frozen=True)
class BadCall:
    """An adapter call with one invalid argument."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        given = [repr(arg)[:12] for arg in self.args]
        given += [f"{name}={value!r}" for name, value in self.kwargs.items()]
        return f"{self.method}({', '.join(given)})"

    def on(self, adapter: Adapter) -> Callable[[], Any]:
        """The call, to be made on ``adapter``."""
        return partial(getattr(adapter, self.method), *self.args, **self.kwargs)


def _bad_calls() -> list[BadCall]:
    calls = []
    for kind in BAD_TYPES:
        calls += [
            BadCall("write", ("k", kind, "v")),
            BadCall("query", (NEAR,), {"type": kind}),
            BadCall("list", (), {"type": kind}),
            BadCall("clear", (), {"type": kind}),
        ]
    for where in BAD_NAMESPACES[:3]:
        calls += [
            BadCall(method, args, {"namespace": where})
            for method, args in (("read", ("k",)), ("query", (NEAR,)), ("list", ()), ("watch", ()))
        ]
    calls += [BadCall("write", (key, "semantic", "v")) for key in BAD_KEYS]
    # A text where the vector goes, an empty vector, a non-number, a boolean, a NaN.
    for embedding in ("tea", [], ["a"], [True, 0.0], [float("nan")]):
        calls.append(BadCall("query", (embedding,)))
    return calls


BAD_CALLS = _bad_calls()
"""Calls with an invalid namespace, type or key, by a readable name."""


@dataclass
class Offline:
    """Clients of one flavour on ``a2m_respx_router``, which keeps every request."""

    flavour: str
    url: str
    router: respx.MockRouter
    clients: list[Client] = field(default_factory=list)

    def adapter(self, namespace: str = "acme/wf-1") -> Adapter:
        """An adapter on a new client, which has sent nothing yet."""
        if self.flavour == "async":
            async_client = AsyncA2MClient(self.url)
            self.clients.append(async_client)
            return AsyncA2MAdapter(async_client, namespace)
        client = A2MClient(self.url)
        self.clients.append(client)
        return A2MAdapter(client, namespace)

    def sent(self) -> list[str]:
        """The A2M methods sent so far, in order."""
        return [json.loads(call.request.content)["method"] for call in self.router.calls]


@pytest.fixture(params=["sync", "async"])
async def offline(
    request: pytest.FixtureRequest, a2m_respx_router: respx.MockRouter, a2m_respx_url: str
) -> AsyncIterator[Offline]:
    """Each flavour in turn, on an in-process server answering HTTP with no sockets."""
    kit = Offline(request.param, a2m_respx_url, a2m_respx_router)
    yield kit
    for client in kit.clients:
        if isinstance(client, AsyncA2MClient):
            await client.aclose()
        else:
            client.close()


async def test_a_bad_namespace_type_or_key_is_refused_and_nothing_is_written(
    offline: Offline,
) -> None:
    for namespace in BAD_NAMESPACES:
        with pytest.raises(InvalidParams, match="nothing was sent"):
            offline.adapter(namespace)
    assert offline.sent() == [], "refusing a namespace sends nothing"

    adapter = offline.adapter()
    outcomes = {str(call): await failure(call.on(adapter)) for call in BAD_CALLS}
    wrong = {
        name: error
        for name, error in outcomes.items()
        if not (isinstance(error, InvalidParams) and "nothing was sent" in str(error))
    }
    assert not wrong, f"not refused with InvalidParams: {wrong}"
    assert set(offline.sent()) <= {"memory/describe"}, "nothing but negotiation was sent"


async def test_a_refusal_sends_nothing_even_on_a_new_client(offline: Offline) -> None:
    for call in BAD_CALLS:
        assert isinstance(await failure(call.on(offline.adapter())), InvalidParams), str(call)
        assert offline.sent() == [], f"{call} sent {offline.sent()}"


# --- meta.ttl_s ------------------------------------------------------------------------


async def test_an_entry_is_gone_once_its_ttl_expires(memory: Memory) -> None:
    adapter = memory.adapter("acme/wf-1")
    written = await settle(adapter.write("otp", "working", "code 481516", meta={"ttl_s": 1}))
    assert written.meta.ttl_s == 1
    await settle(adapter.write("keep", "semantic", "no ttl: stays"))
    deadline = anyio.current_time() + 5.0
    while await settle(adapter.read("otp")) is not None:
        assert anyio.current_time() < deadline, "written with ttl_s=1, still there after 5 s"
        await anyio.sleep(0.05)
    assert listed(await settle(adapter.list())) == [(adapter.namespace, "keep")]
    assert (adapter.namespace, "otp") not in found(await settle(adapter.query(text="481516")))


# --- records written with the bare client ---------------------------------------------------


async def remember_over_json_rpc(memory: Memory) -> None:
    """What a framework without an adapter writes: a keyed record, no ``metadata.namespace``.
    The adapter of ``acme/wf-1`` reads it as its entry ``city``."""
    record = {"content": "The user lives in Lisbon", "key": "acme/wf-1/city", "tier": "semantic"}
    await settle(memory.client.remember(record))


async def test_a_record_written_with_the_bare_client_is_read_and_found(memory: Memory) -> None:
    await remember_over_json_rpc(memory)
    adapter = memory.adapter("acme/wf-1")
    entry = await settle(adapter.read("city"))
    assert entry is not None
    assert (entry.namespace, entry.key, entry.value) == (
        "acme/wf-1",
        "city",
        "The user lives in Lisbon",
    )
    assert ("acme/wf-1", "city") in found(await settle(adapter.query(text="Lisbon")))


async def test_a_record_written_with_the_bare_client_can_be_deleted(memory: Memory) -> None:
    await remember_over_json_rpc(memory)
    adapter = memory.adapter("acme/wf-1")
    assert await settle(adapter.read("city")) is not None
    await settle(adapter.delete("city"))
    assert await settle(adapter.read("city")) is None, "delete returned, the entry is still there"


async def test_a_record_written_with_the_bare_client_is_listed_and_cleared(
    memory: Memory,
) -> None:
    await remember_over_json_rpc(memory)
    adapter = memory.adapter("acme/wf-1")
    assert listed(await settle(adapter.list())) == [("acme/wf-1", "city")]
    exact = await settle(adapter.query(text="Lisbon", namespace="acme/wf-1"))
    assert found(exact) == {("acme/wf-1", "city")}
    assert await settle(adapter.clear()) == 1


# --- query(tags=…) ---------------------------------------------------------------------


async def test_a_query_by_tags_finds_an_entry_ranked_below_others(memory: Memory) -> None:
    adapter = memory.adapter("acme/wf-1")
    for number in range(6):
        await settle(adapter.write(f"near-{number}", "semantic", "untagged", NEAR))
    await settle(adapter.write("rare", "semantic", "tagged", FAR, {"tags": ["rare"]}))
    hits = await settle(adapter.query(NEAR, tags=["rare"], top_k=1))
    assert found(hits) == {(adapter.namespace, "rare")}
