"""The A2E host on every kind of conformant A2M server, not only the bundled one's
defaults: a plain 0.1 server (no timeline cursor, no ``where`` operators, no event log),
one declaring no ``max_recall_limit``, one with a small ``max_recall_limit`` (with and
without a cursor), one with a small ``max_records_per_call``, and ones lacking an
optional capability. Every message answers as on the default server; a listing the
server cannot give whole is refused, never answered from part of the store; a server
without ``keys`` is refused at ``memory/init``, naming what it lacks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from a2e_support import NAMESPACE, Host, entry, keys_of

from a2m import A2MClient, AsyncA2MClient
from a2m_a2e import HostLimits, new_message
from a2m_server.config import LimitsConfig, ServerConfig
from a2m_server.server import A2MServer
from a2m_testing.servers import MethodLog
from a2m_testing.shapes import (
    EVERY_CAPABILITY,
    SERVER_SHAPES,
    SMALL_RECALL,
    SMALL_RECALL_NO_CURSOR,
    UNDECLARED_LIMIT,
    Shape,
    lacking,
)

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = pytest.mark.usefixtures("store_backend")

SAME_ANSWERS = {
    **SERVER_SHAPES,
    **lacking("tiers", "sessions", "scopes", "embeddings", "salience"),
}


@contextmanager
def host_on(config: Shape, mode: str = "sync", **options: Any) -> Iterator[tuple[Host, MethodLog]]:
    """A host (its plugin sync or async) over an in-process A2M server configured as
    ``config``, and the log of the A2M methods it called."""
    with A2MServer(ServerConfig(**config)) as server:
        log = MethodLog(server)
        cls: Any = A2MClient if mode == "sync" else AsyncA2MClient
        host = Host(cls.in_process(log), mode, semantic_writers=["curator"], **options)
        try:
            yield host, log
        finally:
            host.shutdown()


def _entries(count: int) -> list[dict[str, Any]]:
    return [
        entry({"n": n}, f"fact {n} about tea", "episodic", tags=["odd" if n % 2 else "even"])
        for n in range(count)
    ]


def _script(host: Host) -> list[Any]:
    """What each message of a fixed sequence answers: seven entries (more than three), a
    working one, listings by tag and tier, reads by key and by query, forgets."""
    memory = host.init("assistant")
    seen: list[Any] = [host.store(memory, *_entries(7))["stored"]]
    seen.append(host.store(memory, entry({"w": 1}, "scratch", "working"))["stored"])
    for fields in (
        {"tags": ["odd"]},
        {"tier": "episodic"},
        {},
        {"tags": ["even"], "limit": 2},
        {"keys": [{"n": 5}, {"n": 1}, {"n": 6}, {"n": 0}]},
    ):
        found = host.retrieve(memory, **fields)
        seen.append((fields, found.get("code"), found.get("total"), keys_of(found)))
    found = host.retrieve(memory, query="fact 4", limit=1)
    seen.append(keys_of(found))
    seen.append(host.forget(memory, tags=["odd"]).get("deleted"))
    seen.append(keys_of(host.retrieve(memory, tier="episodic")))
    seen.append(host.forget(memory, keys=[{"n": 0}, {"n": 2}]).get("deleted"))
    seen.append(host.end_memory(memory))
    return seen


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("quota", [False, True], ids=["no quota", "quota"])
@pytest.mark.parametrize("shape", list(SAME_ANSWERS))
def test_every_message_answers_as_on_the_default_server(shape: str, quota: bool, mode: str) -> None:
    """With a quota the host also lists the namespace once, to count its usage."""
    options = {"limits": HostLimits(max_entries=50)} if quota else {}
    with host_on({}, mode, **options) as (host, _):
        expected = _script(host)
    with host_on(SAME_ANSWERS[shape], mode, **options) as (host, _):
        assert _script(host) == expected
    assert expected[2][2] == 3  # the listing by tag found every odd entry of seven


def test_a_server_declaring_no_limit_lists_every_entry_in_one_call() -> None:
    """105 entries, more than a hundred: all listed, by one ``memory/timeline`` (§4.4:
    no ``limit``, every record)."""
    with host_on(UNDECLARED_LIMIT) as (host, log):
        memory = host.init("assistant")
        assert len(host.store(memory, *_entries(105))["stored"]) == 105
        before = log.count("memory/timeline")
        found = host.retrieve(memory, tier="episodic", limit=200)
        assert log.count("memory/timeline") == before + 1
    assert found["total"] == 105
    assert keys_of(found) == [{"n": n} for n in reversed(range(105))]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_listing_a_server_cannot_page_is_refused_not_cut_short(mode: str) -> None:
    """No cursor and ``max_recall_limit`` 3: two entries list whole; past three, a listing
    (and a forget by tag, and a store under a quota, which count the namespace) is
    refused with a ``backend_error`` naming what is missing, nothing deleted or written,
    while reads by key and by query still answer."""
    with host_on(SMALL_RECALL_NO_CURSOR, mode) as (host, log):
        memory = host.init("assistant")
        host.store(memory, *_entries(2))
        assert host.retrieve(memory, tier="episodic")["total"] == 2
        host.store(memory, *_entries(7)[2:])
        for fields in ({"tags": ["odd"]}, {"tier": "episodic"}, {}):
            refused = host.retrieve(memory, **fields)
            assert refused["code"] == "backend_error", fields
            assert "more than the 3 records" in refused["message"]
            assert "timeline.cursor" in refused["message"]
        refused = host.forget(memory, tags=["odd"])
        assert refused["code"] == "backend_error"
        found = host.retrieve(memory, keys=[{"n": 1}, {"n": 3}, {"n": 5}])
        assert keys_of(found) == [{"n": 1}, {"n": 3}, {"n": 5}]  # nothing was forgotten
        assert keys_of(host.retrieve(memory, query="fact 6", limit=1)) == [{"n": 6}]
        # A fresh host with a quota counts the namespace's usage first, and cannot.
        quota = HostLimits(max_entries=50)
        cls: Any = A2MClient if mode == "sync" else AsyncA2MClient
        counting = Host(cls.in_process(log), mode, limits=quota)
        try:
            memory = counting.init("assistant")
            before = log.count("memory/remember")
            refused = counting.store(memory, entry({"n": 9}, "one more", "episodic"))
            assert refused["code"] == "backend_error"
            assert log.count("memory/remember") == before  # nothing written
        finally:
            counting.shutdown()


def test_writes_go_in_batches_the_server_accepts() -> None:
    """Five entries on a server taking two a call: three ``memory/remember`` calls."""
    with host_on({"limits": LimitsConfig(max_records_per_call=2)}) as (host, log):
        memory = host.init("assistant")
        assert len(host.store(memory, *_entries(5))["stored"]) == 5
        assert log.count("memory/remember") == 3
        assert host.retrieve(memory, tier="episodic")["total"] == 5


def test_a_server_without_keys_is_refused_at_init_naming_what_it_lacks() -> None:
    with host_on({"capabilities": EVERY_CAPABILITY - {"keys"}}) as (host, log):
        refused = host.handle(
            new_message("memory/init/req", namespace=NAMESPACE, scope={"agent": "assistant"})
        )
        assert refused["code"] == "backend_error"
        assert "'keys'" in refused["message"]
        assert log.count("memory/remember") == 0


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_host_without_an_agent_reads_every_owners_record_at_a_key_whole(mode: str) -> None:
    """On a server with ``scopes`` a key names one record per owner. Two curators hold the
    same three semantic keys; a host with no agent (so no owner filter) reading them by
    key, on a server returning 3 records a call, gets all six by cursor, not the first
    three; without a cursor the read is refused, not cut short."""
    keys = [{"n": n} for n in range(3)]
    for shape, whole in ((SMALL_RECALL, True), (SMALL_RECALL_NO_CURSOR, False)):
        with host_on(shape, mode) as (host, log):
            cls: Any = A2MClient if mode == "sync" else AsyncA2MClient
            for curator in ("curator", "curator-2"):
                writer = Host(cls.in_process(log), mode, semantic_writers=[curator])
                try:
                    memory = writer.init(curator)
                    facts = [entry(key, f"{curator} says {key['n']}", "semantic") for key in keys]
                    assert len(writer.store(memory, *facts)["stored"]) == 3
                finally:
                    writer.shutdown()
            memory = host.init(agent=None)
            found = host.retrieve(memory, keys=keys)
            if whole:
                assert found["total"] == 6
                assert sorted(e["content"] for e in found["entries"]) == sorted(
                    f"{who} says {n}" for who in ("curator", "curator-2") for n in range(3)
                )
            else:
                assert found["code"] == "backend_error"
                assert "more than the 3 records" in found["message"]
