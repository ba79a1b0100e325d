"""Every method, on every cell of the matrix ({sync, async} x {in-process, stdio, HTTP}),
against the real bundled server: both clients must behave identically."""

from __future__ import annotations

from datetime import timezone

import numpy as np
import pytest
from client_support import Driver

from a2m import (
    ConsolidateResult,
    DescribeResult,
    EventsResult,
    FetchResult,
    ForgetResult,
    PromoteResult,
    PromptOptions,
    RecallResult,
    Record,
    RecordInput,
    ReinforceResult,
    RememberResult,
    SessionCloseResult,
    SessionListResult,
    SummarizeResult,
    TimelineResult,
    WrittenEvent,
)

pytestmark = pytest.mark.anyio


async def test_describe_runs_lazily_once_and_refreshes(client: Driver, spy) -> None:
    recorder = spy(client)
    assert client.description is None  # the constructor sent nothing
    await client.recall("anything")
    await client.timeline()
    assert recorder.methods == ["memory/describe", "memory/recall", "memory/timeline"]
    cached = client.description
    assert isinstance(cached, DescribeResult)
    assert cached.protocol == "a2m/0.1"

    fresh = await client.describe()
    assert recorder.count("memory/describe") == 2
    assert client.description is fresh
    assert "core" in client.capabilities
    assert client.supports("keys")
    assert not client.supports("no-such-capability")
    # §6: an unauthenticated HTTP server must not offer scopes; local bindings do.
    assert client.supports("scopes") is (client.binding != "http")


async def test_remember_takes_every_shape_and_keeps_order(client: Driver) -> None:
    result = await client.remember(
        [
            "a plain string",
            {"content": "a dict", "role": "user", "metadata": {"n": [1, {"x": None}]}},
            RecordInput(content="a record input", group="g1"),
        ]
    )
    assert isinstance(result, RememberResult)
    assert len(result.ids) == 3
    single = await client.remember("one more")
    assert len(single.ids) == 1

    records = (await client.timeline()).records
    assert [r.content for r in records] == [
        "a plain string",
        "a dict",
        "a record input",
        "one more",
    ]
    assert [r.id for r in records] == [*result.ids, *single.ids]
    assert records[1].metadata == {"n": [1, {"x": None}]}  # round-tripped unchanged (§3.1)
    assert records[1].role == "user"
    assert records[2].group == "g1"
    assert records[0].created_at.tzinfo == timezone.utc


async def test_remember_gives_ids_first_so_a_resend_is_idempotent(client: Driver) -> None:
    first = await client.remember({"id": "fixed-id-1", "content": "once"})
    again = await client.remember({"id": "fixed-id-1", "content": "once"})
    assert first.ids == again.ids == ["fixed-id-1"]
    assert len((await client.timeline()).records) == 1


async def test_remember_owner_session_and_capability_fields(client: Driver) -> None:
    records = [
        {"content": "keyed fact", "key": "app/user/city", "tier": "semantic", "salience": 2.0},
        {"content": "a picture", "uri": "file:///tmp/cat.png", "media_type": "image/png"},
    ]
    owner = {} if client.binding == "http" else {"owner": "agent-a"}
    ids = (await client.remember(records, session="conv-1", **owner)).ids
    fetched = (await client.fetch("app/user/city", **owner)).record
    assert isinstance(fetched, Record)
    assert fetched.id == ids[0]
    assert fetched.tier == "semantic"
    assert fetched.session == "conv-1"
    if owner:
        assert fetched.owner == "agent-a"
    timeline = (await client.timeline(where={"session": "conv-1"}, **owner)).records
    assert [r.uri for r in timeline] == [None, "file:///tmp/cat.png"]
    assert timeline[1].media_type == "image/png"


async def test_recall_ranks_filters_and_renders(client: Driver) -> None:
    await client.remember(
        [
            {"content": "the deploy key rotates every 90 days", "metadata": {"topic": "ops"}},
            {"content": "lunch is at noon", "metadata": {"topic": "life"}},
            {"content": "the deploy pipeline runs on merge", "key": "ops/pipeline"},
        ]
    )
    result = await client.recall("deploy key", limit=2)
    assert isinstance(result, RecallResult)
    assert result.records[0].content == "the deploy key rotates every 90 days"
    assert len(result.records) <= 2
    scores = [r.score for r in result.records]
    assert scores == sorted(scores, reverse=True)  # §5.3
    assert result.prompt is None  # not asked for

    only_ops = await client.recall(where={"topic": ["ops"]})
    assert [r.content for r in only_ops.records] == ["the deploy key rotates every 90 days"]
    keyed = await client.recall("deploy", key_prefix="ops/")
    assert [r.key for r in keyed.records] == ["ops/pipeline"]
    top = result.records[0].score
    assert all(r.score >= top for r in (await client.recall("deploy key", min_score=top)).records)

    rendered = await client.recall("deploy key", prompt=True)
    assert rendered.prompt
    assert "deploy key" in rendered.prompt
    assert rendered.prompt_ids
    assert set(rendered.prompt_ids) <= {r.id for r in rendered.records}
    styled = await client.recall("deploy", prompt=PromptOptions(style="facts", budget=10_000))
    assert styled.prompt is not None
    as_dict = await client.recall("deploy", prompt={"method": "template", "cite": True})
    assert as_dict.prompt is not None
    nothing = await client.recall("deploy", prompt=False)
    assert nothing.prompt is None


async def test_recall_by_embedding_accepts_numpy_and_returns_vectors(client: Driver) -> None:
    await client.remember(
        [
            {"content": "north", "embedding": np.array([1.0, 0.0, 0.0], dtype=np.float32)},
            {"content": "east", "embedding": (0.0, 1.0, 0.0)},
        ]
    )
    result = await client.recall(embedding=np.array([0.9, 0.1, 0.0]), embeddings=True)
    assert result.records[0].content == "north"
    assert result.records[0].embedding == [1.0, 0.0, 0.0]  # stored verbatim (§3.7)
    plain = await client.recall(embedding=[0.0, 1.0, 0.0])
    assert plain.records[0].content == "east"
    assert plain.records[0].embedding is None  # vectors only when asked for


async def test_timeline_is_oldest_first_and_limit_keeps_the_newest(client: Driver) -> None:
    await client.remember([f"turn {n}" for n in range(5)])
    everything = await client.timeline()
    assert isinstance(everything, TimelineResult)
    assert [r.content for r in everything.records] == [f"turn {n}" for n in range(5)]
    newest = await client.timeline(limit=2)
    assert [r.content for r in newest.records] == ["turn 3", "turn 4"]
    rendered = await client.timeline(prompt={"style": "transcript"})
    assert rendered.prompt is not None


async def test_forget_by_ids_key_prefix_and_where(client: Driver) -> None:
    ids = (
        await client.remember(
            [
                "drop me",
                {"content": "keyed", "key": "tmp/a"},
                {"content": "keyed too", "key": "tmp/b"},
                {"content": "tagged", "metadata": {"kind": "scratch"}},
                "keep me",
            ]
        )
    ).ids
    gone = await client.forget([ids[0]])
    assert isinstance(gone, ForgetResult)
    assert gone.forgotten == 1
    assert (await client.forget(key_prefix="tmp/")).forgotten == 2
    assert (await client.forget(where={"kind": "scratch"})).forgotten == 1
    assert [r.content for r in (await client.timeline()).records] == ["keep me"]


async def test_promote_reinforce_and_consolidate(client: Driver) -> None:
    ids = (await client.remember(["worth keeping", "also here"])).ids
    promoted = await client.promote(ids[:1], "semantic", salience=1.5)
    assert isinstance(promoted, PromoteResult)
    assert promoted.promoted == 1
    assert (await client.promote(ids[:1], "semantic")).promoted == 0  # already there (§4.6)
    reinforced = await client.reinforce(ids, amount=2.0)
    assert isinstance(reinforced, ReinforceResult)
    assert reinforced.reinforced == 2
    record = next(r for r in (await client.timeline()).records if r.id == ids[0])
    assert record.tier == "semantic"
    assert record.salience is not None
    assert record.salience >= 3.5
    consolidated = await client.consolidate()
    assert isinstance(consolidated, ConsolidateResult)
    assert sum(consolidated.counts.values()) == 2


async def test_fetch_returns_the_record_or_none(client: Driver) -> None:
    await client.remember({"content": "Paris", "key": "user/city"})
    await client.remember({"content": "Lyon", "key": "user/city"})  # replacement (§3.6)
    found = await client.fetch("user/city")
    assert isinstance(found, FetchResult)
    assert found.record is not None
    assert found.record.content == "Lyon"
    assert found.record.revision == 1
    missing = await client.fetch("user/unknown")
    assert missing.record is None  # not an error (§4.9)


async def test_sessions_and_close_session(client: Driver) -> None:
    await client.remember(["hi", "hello"], session="conv-a")
    await client.remember("other", session="conv-b")
    listed = await client.sessions()
    assert isinstance(listed, SessionListResult)
    counts = {info.session: info.records for info in listed.sessions}
    assert counts["conv-a"] == 2
    assert counts["conv-b"] == 1
    closed = await client.close_session("conv-a")
    assert isinstance(closed, SessionCloseResult)
    assert closed.closed == "conv-a"
    again = await client.close_session("conv-a")  # a no-op, not an error (§4.11)
    assert again.closed == "conv-a"
    assert len((await client.timeline(where={"session": "conv-a"})).records) == 2


async def test_events_poll_follows_the_cursor(client: Driver) -> None:
    head = await client.events()
    assert isinstance(head, EventsResult)
    assert head.events == []  # no cursor means now (§4.12)
    ids = (await client.remember(["one", "two"])).ids
    await client.forget(ids[:1])
    page = await client.events(head.cursor, limit=2)
    assert [e.kind for e in page.events] == ["written", "written"]
    assert isinstance(page.events[0], WrittenEvent)
    assert [e.id for e in page.events] == ids
    assert page.more is True
    rest = await client.events(page.cursor, kinds=["forgotten"])
    assert [e.kind for e in rest.events] == ["forgotten"]


async def test_summarize_writes_records_and_keeps_the_sources(client: Driver) -> None:
    ids = (
        await client.remember(
            [
                "the user prefers window seats",
                "the user prefers window seats on long flights",
                "the user is vegetarian",
            ]
        )
    ).ids
    result = await client.summarize(ids, key="user/profile", into="semantic")
    assert isinstance(result, SummarizeResult)
    assert result.read == 3
    assert result.written == len(result.records)
    remaining = {r.id for r in (await client.timeline()).records}
    assert set(ids) <= remaining  # sources are never deleted (§4.15)
    if result.written:
        assert (await client.fetch("user/profile")).record is not None
