"""§4.12 ``memory/events`` (polling with opaque cursors), §4.13 ``memory/events/subscribe``
(push) and §4.14 ``memory/events/unsubscribe``; §8.3 (no push over HTTP)."""

from __future__ import annotations

from typing import Any

import pytest
from spec_support import Agents, InProcessPeer, Peer, PeerFactory, rpc_error, uid

from a2m_server import ServerConfig


def _written_ids(events: list[dict[str, Any]]) -> list[str]:
    return [e["id"] for e in events if e["kind"] == "written"]


def _kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["kind"] for e in events]


# --- §4.12 polling -----------------------------------------------------------------------------


@pytest.mark.spec("4.12")
def test_4_12_no_cursor_means_now(peer: Peer) -> None:
    """Absent cursor: no events, only the current head; the next poll starts there."""
    session = uid("session")
    peer.remember({"content": "before the head"}, session=session)
    result = peer.call("memory/events", {})
    assert result["events"] == []
    assert isinstance(result["cursor"], str)
    (after,) = peer.remember({"content": "after the head"}, session=session)
    events, _ = peer.events_since(result["cursor"])
    assert _written_ids(events) == [after]


@pytest.mark.spec("4.12")
def test_4_12_successive_polls_see_every_event_exactly_once_in_order(peer: Peer) -> None:
    session = uid("session")
    cursor = peer.events_head()
    first = peer.remember(*({"content": f"first {i}"} for i in range(3)), session=session)
    peer.call("memory/forget", {"ids": [first[1]]})
    second = peer.remember(*({"content": f"second {i}"} for i in range(2)), session=session)
    seen: list[dict[str, Any]] = []
    pages = 0
    while True:
        result = peer.call("memory/events", {"cursor": cursor, "limit": 2})
        assert len(result["events"]) <= 2
        assert not result.get("reset")
        seen += result["events"]
        cursor = result["cursor"]
        pages += 1
        if not result.get("more"):
            break
        assert result["events"], "more without events"
    assert pages >= 3
    assert _kinds(seen) == ["written"] * 3 + ["forgotten"] + ["written"] * 2
    assert _written_ids(seen) == first + second
    assert seen[3]["count"] == 1
    stamps = [e["at"] for e in seen]
    assert stamps == sorted(stamps)
    # Nothing new: the cursor stays valid and yields nothing more.
    again = peer.call("memory/events", {"cursor": cursor})
    assert again["events"] == []
    assert not again.get("more")
    (late,) = peer.remember({"content": "late"}, session=session)
    events, _ = peer.events_since(again["cursor"])
    assert _written_ids(events) == [late]


@pytest.mark.spec("4.12")
def test_4_12_a_cursor_can_be_read_from_again(peer: Peer) -> None:
    """A cursor names a position: polling from it twice returns the same events."""
    cursor = peer.events_head()
    peer.remember({"content": "one"}, {"content": "two"}, session=uid("session"))
    first, _ = peer.events_since(cursor)
    second, _ = peer.events_since(cursor)
    assert first == second
    assert len(first) == 2


@pytest.mark.spec("4.12")
def test_4_12_one_written_event_per_record_with_tier_session_key_revision(peer: Peer) -> None:
    session = uid("session")
    key = f"{uid('ev')}/k"
    cursor = peer.events_head()
    plain, keyed = peer.remember(
        {"content": "plain"}, {"content": "keyed", "key": key, "tier": "episodic"}, session=session
    )
    (replaced,) = peer.remember({"content": "keyed again", "key": key}, session=session)
    events, _ = peer.events_since(cursor)
    assert _kinds(events) == ["written"] * 3
    assert [e["id"] for e in events] == [plain, keyed, replaced]
    assert replaced == keyed
    assert events[0]["tier"] == "working"
    assert events[0]["session"] == session
    assert "revision" not in events[0] or events[0]["revision"] == 0
    assert events[1]["tier"] == "episodic"
    assert events[1]["key"] == key
    assert events[1]["revision"] == 0
    assert events[2]["key"] == key
    assert events[2]["revision"] == 1, "a replacement shows revision > 0"


@pytest.mark.spec("4.12")
def test_4_12_one_forgotten_event_per_forget_however_many_it_removed(peer: Peer) -> None:
    tag = uid("tag")
    ids = peer.remember(
        *({"content": f"doomed {i}", "metadata": {"tag": tag}} for i in range(7)),
        session=uid("session"),
    )
    cursor = peer.events_head()
    assert peer.call("memory/forget", {"where": {"tag": tag}}) == {"forgotten": 7}
    assert peer.call("memory/forget", {"ids": ids}) == {"forgotten": 0}
    events, _ = peer.events_since(cursor)
    assert _kinds(events) == ["forgotten", "forgotten"]
    assert events[0]["count"] == 7
    assert events[1]["count"] == 0
    if "ids" in events[0]:
        assert sorted(events[0]["ids"]) == sorted(ids)


@pytest.mark.spec("4.12")
def test_4_12_one_promoted_event_per_promote(peer: Peer) -> None:
    ids = peer.remember({"content": "p1"}, {"content": "p2"}, session=uid("session"))
    cursor = peer.events_head()
    assert peer.call("memory/promote", {"ids": ids, "tier": "semantic"}) == {"promoted": 2}
    events, _ = peer.events_since(cursor)
    promoted = [e for e in events if e["kind"] == "promoted"]
    assert len(promoted) == 1
    assert sorted(promoted[0]["ids"]) == sorted(ids)
    assert promoted[0]["tier"] == "semantic"


@pytest.mark.spec("4.12")
def test_4_12_one_consolidated_event_per_consolidation(peer: Peer) -> None:
    cursor = peer.events_head()
    result = peer.call("memory/consolidate")
    events, _ = peer.events_since(cursor)
    consolidated = [e for e in events if e["kind"] == "consolidated"]
    assert len(consolidated) == 1
    for name in ("moved", "promoted", "dropped", "summarized"):
        assert consolidated[0].get(name, 0) == result.get(name, 0), name


@pytest.mark.spec("4.12")
def test_4_12_a_spill_under_capacity_pressure_is_one_coalesced_event(peer: Peer) -> None:
    """A server-internal reorganisation (the working tier spilling) is one ``consolidated``
    event carrying counts, never one per record moved."""
    capacity = next(t for t in peer.describe()["tiers"] if t["name"] == "working")["capacity"]
    overflow = 6
    cursor = peer.events_head()
    ids = peer.remember(
        *({"content": f"chatter {i}"} for i in range(capacity + overflow)), session=uid("session")
    )
    events, _ = peer.events_since(cursor)
    assert _written_ids(events) == ids
    consolidated = [e for e in events if e["kind"] == "consolidated"]
    assert len(consolidated) == 1
    assert consolidated[0]["moved"] == overflow
    assert _kinds(events) == ["written"] * len(ids) + ["consolidated"]


@pytest.mark.spec("4.12")
def test_4_12_session_close_is_one_session_closed_and_one_consolidated_event(peer: Peer) -> None:
    session = uid("session")
    peer.remember({"content": "a"}, {"content": "b"}, session=session)
    cursor = peer.events_head()
    peer.call("memory/session/close", {"session": session})
    events, _ = peer.events_since(cursor)
    assert sorted(_kinds(events)) == ["consolidated", "session_closed"]
    closed = next(e for e in events if e["kind"] == "session_closed")
    assert closed["session"] == session


@pytest.mark.spec("4.12")
def test_4_12_limit_and_more(peer: Peer) -> None:
    cursor = peer.events_head()
    ids = peer.remember(*({"content": f"e{i}"} for i in range(5)), session=uid("session"))
    page = peer.call("memory/events", {"cursor": cursor, "limit": 3})
    assert len(page["events"]) == 3
    assert page["more"] is True
    rest = peer.call("memory/events", {"cursor": page["cursor"], "limit": 3})
    assert len(rest["events"]) == 2
    assert not rest.get("more")
    assert _written_ids(page["events"] + rest["events"]) == ids


@pytest.mark.spec("4.12")
def test_4_12_kinds_restricts_what_is_returned(peer: Peer) -> None:
    session = uid("session")
    cursor = peer.events_head()
    ids = peer.remember({"content": "k1"}, {"content": "k2"}, session=session)
    peer.call("memory/forget", {"ids": ids[:1]})
    only_forgotten, _ = peer.events_since(cursor, kinds=["forgotten"])
    assert _kinds(only_forgotten) == ["forgotten"]
    only_written, _ = peer.events_since(cursor, kinds=["written", "an-unknown-kind"])
    assert _written_ids(only_written) == ids
    assert _kinds(only_written) == ["written", "written"]


@pytest.mark.spec("4.12")
@pytest.mark.parametrize("cursor", ["garbage", "", "c1.", "c1.!!!!", "0", "c1.bm90LWEtc3RvcmU6MQ"])
def test_4_12_a_cursor_the_server_never_issued_is_32602(peer: Peer, cursor: str) -> None:
    assert rpc_error(peer, "memory/events", {"cursor": cursor}).code == -32602


@pytest.mark.spec("4.12")
def test_4_12_a_cursor_before_the_retained_window_gets_reset(
    binding: str, make_peer: PeerFactory
) -> None:
    """§4.12: a cursor older than the retained events gets ``reset: true`` and reading
    continues from the oldest event still held, then normally."""
    retention = 5
    peer = make_peer(binding, ServerConfig(event_retention=retention))
    cursor = peer.events_head()
    ids = [peer.remember({"content": f"r{i}"})[0] for i in range(12)]
    result = peer.call("memory/events", {"cursor": cursor})
    assert result["reset"] is True
    assert _written_ids(result["events"]) == ids[-retention:]
    follow = peer.call("memory/events", {"cursor": result["cursor"]})
    assert follow["events"] == []
    assert not follow.get("reset")
    # Paging through a reset: the first page says reset, later pages do not.
    page = peer.call("memory/events", {"cursor": cursor, "limit": 2})
    assert page["reset"] is True
    assert page["more"] is True
    assert _written_ids(page["events"]) == ids[-retention:][:2]
    rest, _ = peer.events_since(page["cursor"])
    assert _written_ids(rest) == ids[-retention:][2:]


@pytest.mark.spec("4.12")
def test_4_12_events_are_scoped_like_recall(agents: Agents) -> None:
    """§4.12: an event reaches only a caller who could have recalled its record."""
    alice, bob = agents.alice, agents.bob
    bob_cursor = bob.call("memory/events", {})["cursor"]
    alice_cursor = alice.call("memory/events", {})["cursor"]
    session = uid("session")
    (private,) = alice.remember({"content": "alice's own"}, session=session)
    (shared,) = alice.remember({"content": "for everyone", "tier": "semantic"}, session=session)
    bob_events = bob.call("memory/events", {"cursor": bob_cursor, "limit": 1000})["events"]
    alice_events = alice.call("memory/events", {"cursor": alice_cursor, "limit": 1000})["events"]
    assert private not in _written_ids(bob_events)
    assert shared in _written_ids(bob_events)
    assert {private, shared} <= set(_written_ids(alice_events))


@pytest.mark.spec("4.12")
def test_4_12_a_promotion_of_several_owners_records_tells_each_only_of_its_own(
    agents: Agents,
) -> None:
    """§4.12: a caller acting as nobody in particular promotes alice's and bob's private
    records at once (locally it may; over HTTP it acts as alice, and moves hers alone):
    each reads a ``promoted`` event naming its own records, never the other's."""
    alice, bob = agents.alice, agents.bob
    cursors = {name: actor.call("memory/events", {})["cursor"] for name, actor in
               (("alice", alice), ("bob", bob))}  # fmt: skip
    session = uid("session")
    (hers,) = alice.remember({"content": "alice's note"}, session=session)
    (his,) = bob.remember({"content": "bob's secret"}, session=session)
    agents.peer.call("memory/promote", {"ids": [hers, his], "tier": "episodic"})
    for name, actor, own, other in (("alice", alice, hers, his), ("bob", bob, his, hers)):
        events = actor.call("memory/events", {"cursor": cursors[name], "limit": 1000})["events"]
        named = [i for e in events if e["kind"] == "promoted" for i in e["ids"]]
        assert other not in named
        if _tier_of(actor, own) == "episodic":  # this caller's record moved
            assert named == [own]


def _tier_of(actor: Any, record_id: str) -> str | None:
    found = [r["tier"] for r in actor.timeline(limit=0) if r["id"] == record_id]
    return found[0] if found else None


@pytest.mark.spec("4.13")
@pytest.mark.bindings("in-process", "stdio")
def test_4_13_push_is_scoped_like_recall(agents: Agents) -> None:
    """§4.13: push follows the scoping rules of §4.12: a subscription made as bob never
    carries alice's private records."""
    peer = agents.peer
    peer.call("memory/events/subscribe", {"owner": agents.bob.owner})
    try:
        session = uid("session")
        (private,) = agents.alice.remember({"content": "alice only"}, session=session)
        (shared,) = agents.alice.remember({"content": "all", "tier": "semantic"}, session=session)
        (bobs,) = agents.bob.remember({"content": "bob's"}, session=uid("session"))
        pushed = _written_ids([n["params"] for n in peer.notifications()])
        assert private not in pushed
        assert pushed == [shared, bobs]
    finally:
        peer.call("memory/events/unsubscribe")
        peer.notifications()


# --- §4.13 / §4.14 push ----------------------------------------------------------------------------


@pytest.mark.spec("4.13")
@pytest.mark.bindings("in-process", "stdio")
def test_4_13_push_only_after_subscribe(peer: Peer) -> None:
    assert peer.describe()["events"]["push"] is True
    session = uid("session")
    peer.remember({"content": "unheard"}, session=session)
    assert peer.notifications() == [], "§4.13: declaring events MUST NOT by itself push"
    cursor = peer.events_head()
    assert peer.call("memory/events/subscribe") == {"subscribed": True}
    ids = peer.remember({"content": "heard 1"}, {"content": "heard 2"}, session=session)
    peer.call("memory/forget", {"ids": ids[:1]})
    pushed = [n["params"] for n in peer.notifications()]
    polled, _ = peer.events_since(cursor)
    assert pushed == polled, "§4.13: push and poll are one log"
    assert _written_ids(pushed) == ids
    assert _kinds(pushed)[-1] == "forgotten"


@pytest.mark.spec("4.13")
@pytest.mark.bindings("in-process", "stdio")
def test_4_13_subscribe_kinds_filters_what_is_pushed(peer: Peer) -> None:
    assert peer.call("memory/events/subscribe", {"kinds": ["forgotten"]}) == {"subscribed": True}
    ids = peer.remember({"content": "quiet"}, session=uid("session"))
    peer.call("memory/forget", {"ids": ids})
    pushed = [n["params"] for n in peer.notifications()]
    assert _kinds(pushed) == ["forgotten"]


@pytest.mark.spec("4.14")
@pytest.mark.bindings("in-process", "stdio")
def test_4_14_unsubscribe_stops_push(peer: Peer) -> None:
    session = uid("session")
    peer.call("memory/events/subscribe")
    peer.remember({"content": "heard"}, session=session)
    assert len(peer.notifications()) == 1
    assert peer.call("memory/events/unsubscribe") == {"subscribed": False}
    peer.remember({"content": "not heard"}, session=session)
    peer.call("memory/forget", {"where": {"session": session}})
    assert peer.notifications() == []


@pytest.mark.spec("4.14")
def test_4_14_unsubscribe_when_not_subscribed_is_a_no_op(peer: Peer) -> None:
    assert peer.call("memory/events/unsubscribe") == {"subscribed": False}
    assert peer.call("memory/events/unsubscribe", {"extra": 1}) == {"subscribed": False}


@pytest.mark.spec("8.3")
@pytest.mark.bindings("http")
def test_8_3_http_never_offers_push_and_subscribe_is_32003(peer: Peer) -> None:
    assert peer.describe()["events"] == {"push": False}
    assert rpc_error(peer, "memory/events/subscribe", {}).code == -32003
    # Polling is always available when events is declared.
    cursor = peer.events_head()
    (record_id,) = peer.remember({"content": "watched by polling"}, session=uid("session"))
    events, _ = peer.events_since(cursor)
    assert _written_ids(events) == [record_id]


@pytest.mark.spec("4.13")
def test_4_13_subscription_is_per_connection(make_peer: PeerFactory) -> None:
    """In-process: one connection's subscription pushes to it alone, and ends when it
    closes (§4.13: never persisted)."""
    listener = make_peer("in-process")
    assert isinstance(listener, InProcessPeer)
    other = make_peer.adopt(listener.sibling())
    listener.call("memory/events/subscribe")
    (first,) = other.remember({"content": "from another connection"})
    assert _written_ids([n["params"] for n in listener.notifications()]) == [first]
    assert other.notifications() == []
    listener.close()
    other.remember({"content": "after the listener left"})
    assert listener.notifications() == []
    assert isinstance(listener, InProcessPeer)
    # A new connection starts unsubscribed.
    fresh = make_peer.adopt(listener.sibling())
    other.remember({"content": "nobody subscribed"})
    assert fresh.notifications() == []


@pytest.mark.spec("4.12")
@pytest.mark.parametrize("size", [1, 3, 64, 97, 200])
def test_4_12_a_batch_logs_one_written_event_per_record_in_order(peer: Peer, size: int) -> None:
    """A remember of many records logs them in its order, each once, whatever the batch
    size (the store inserts a batch's events a few rows per statement)."""
    session = uid("session")
    cursor = peer.events_head()
    ids = peer.remember(*({"content": f"batch {i}"} for i in range(size)), session=session)
    seen: list[dict[str, Any]] = []
    while True:
        result = peer.call("memory/events", {"cursor": cursor, "limit": 100})
        seen += result["events"]
        cursor = result["cursor"]
        if not result.get("more"):
            break
    written = [event for event in seen if event["kind"] == "written"]
    assert _written_ids(written) == ids  # consolidation may log beside them; writes in order
    assert all(event.get("session") == session for event in written)
