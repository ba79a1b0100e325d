"""Capability gating against a server declaring ``core`` only, and a read-only server: the
client refuses what the server did not declare before anything is sent (§2), and treats
``READ_ONLY`` as a final answer, never as something to retry (§2.1)."""

from __future__ import annotations

import numpy as np
import pytest
from client_support import Driver

import a2m
from a2m import RecordInput

pytestmark = pytest.mark.anyio

METHOD_CALLS = {
    "memory/promote": lambda c: c.promote(["a"], "semantic"),
    "memory/consolidate": lambda c: c.consolidate(),
    "memory/reinforce": lambda c: c.reinforce(["a"]),
    "memory/fetch": lambda c: c.fetch("k"),
    "memory/session/list": lambda c: c.sessions(),
    "memory/session/close": lambda c: c.close_session("s"),
    "memory/events": lambda c: c.events(),
    "memory/events/subscribe": lambda c: c.subscribe(),
    "memory/events/unsubscribe": lambda c: c.unsubscribe(),
    "memory/summarize": lambda c: c.summarize(query="x"),
}

PARAM_CALLS = {
    "recall tier": (lambda c: c.recall("x", tier="working"), "tiers"),
    "recall owner": (lambda c: c.recall("x", owner="a"), "scopes"),
    "recall embedding": (lambda c: c.recall(embedding=np.ones(3)), "embeddings"),
    "recall key_prefix": (lambda c: c.recall("x", key_prefix="app/"), "keys"),
    "recall embeddings": (lambda c: c.recall("x", embeddings=True), "embeddings"),
    "recall prompt": (lambda c: c.recall("x", prompt=True), "prompt"),
    "timeline tier": (lambda c: c.timeline(tier="working"), "tiers"),
    "timeline prompt": (lambda c: c.timeline(prompt={"style": "facts"}), "prompt"),
    "forget key_prefix": (lambda c: c.forget(key_prefix="app/"), "keys"),
    "forget owner": (lambda c: c.forget(["a"], owner="a"), "scopes"),
    "remember owner": (lambda c: c.remember("x", owner="a"), "scopes"),
    "remember session": (lambda c: c.remember("x", session="s"), "sessions"),
    "describe owner": (lambda c: c.describe(owner="a"), "scopes"),
}

RECORD_FIELDS = {
    "tier": ("working", "tiers"),
    "salience": (1.0, "salience"),
    "owner": ("a", "scopes"),
    "session": ("s", "sessions"),
    "key": ("app/k", "keys"),
    "embedding": ([1.0, 2.0], "embeddings"),
    "uri": ("file:///x.png", "external"),
    "media_type": ("image/png", "external"),
}


async def test_capabilities_are_core_only(core_client: Driver) -> None:
    await core_client.describe()
    assert core_client.capabilities == frozenset({"core"})
    assert not core_client.supports("tiers")


async def test_methods_of_undeclared_capabilities_are_refused_unsent(
    core_client: Driver, spy
) -> None:
    from a2m_types import METHODS

    recorder = spy(core_client)
    for method, call in METHOD_CALLS.items():
        with pytest.raises(a2m.CapabilityNotSupported) as caught:
            await call(core_client)
        error = caught.value
        assert error.method == method
        assert error.code == -32003
        assert error.capability == METHODS[method].capability
        assert "nothing was sent" in str(error)
    assert recorder.methods == ["memory/describe"]


async def test_parameters_of_undeclared_capabilities_are_refused_unsent(
    core_client: Driver, spy
) -> None:
    await core_client.describe()
    recorder = spy(core_client)
    for case, (call, capability) in PARAM_CALLS.items():
        with pytest.raises(a2m.CapabilityNotSupported) as caught:
            await call(core_client)
        assert caught.value.capability == capability, case
    assert recorder.methods == []


async def test_record_fields_of_undeclared_capabilities_are_refused_unsent(
    core_client: Driver, spy
) -> None:
    await core_client.describe()
    recorder = spy(core_client)
    for field, (value, capability) in RECORD_FIELDS.items():
        as_dict = [{"content": "ok"}, {"content": "x", field: value}]
        as_model = RecordInput(content="x", **{field: value})
        for records in (as_dict, as_model):
            with pytest.raises(a2m.CapabilityNotSupported) as caught:
                await core_client.remember(records)
            assert caught.value.capability == capability
            assert field in caught.value.message
    assert recorder.methods == []


async def test_a_recall_order_the_server_does_not_declare_is_refused_unsent(
    core_client: Driver, spy
) -> None:
    # A server without describe recall.rank would ignore rank and blend: refused unsent.
    await core_client.describe()
    recorder = spy(core_client)
    with pytest.raises(a2m.CapabilityNotSupported) as caught:
        await core_client.recall("x", rank="similarity")
    assert "recall.rank" in str(caught.value)
    assert recorder.methods == []
    await core_client.recall("x", rank="blend")  # the default order is always there
    assert recorder.methods == ["memory/recall"]


async def test_values_that_ask_for_nothing_pass_the_gate(core_client: Driver) -> None:
    # The rule: a capability's parameter is refused when its value asks for something —
    # anything but None or False. prompt=False and embeddings=False ask for nothing.
    await core_client.remember("the sky is blue")
    result = await core_client.recall("sky", prompt=False, embeddings=False)
    assert [r.content for r in result.records] == ["the sky is blue"]
    assert result.prompt is None


async def test_watch_is_refused_on_first_iteration(core_client: Driver) -> None:
    watcher = core_client.watch(poll_interval=0)

    async def first() -> object:
        if core_client.is_async:
            return await watcher.__aiter__().__anext__()
        return next(iter(watcher))

    with pytest.raises(a2m.CapabilityNotSupported):
        await first()


async def test_core_methods_still_work(core_client: Driver) -> None:
    ids = (await core_client.remember(["one", "two"])).ids
    assert [r.id for r in (await core_client.timeline()).records] == ids
    assert (await core_client.forget(ids)).forgotten == 2


# --- read-only --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "call"),
    [
        ("memory/remember", lambda c: c.remember("x")),
        ("memory/forget", lambda c: c.forget(["x"])),
        ("memory/summarize", lambda c: c.summarize(query="x", key="k")),
    ],
    ids=["remember", "forget", "summarize"],
)
async def test_read_only_refuses_writes_and_is_never_retried(
    read_only_client: Driver, spy, method, call
) -> None:
    recorder = spy(read_only_client)
    with pytest.raises(a2m.ReadOnly) as caught:
        await call(read_only_client)
    assert caught.value.code == -32004
    assert caught.value.method == method
    assert recorder.count(method) == 1


async def test_read_only_serves_reads(read_only_client: Driver) -> None:
    description = await read_only_client.describe()
    assert "core" in description.capabilities
    assert (await read_only_client.recall("anything")).records == []
    assert (await read_only_client.timeline()).records == []
