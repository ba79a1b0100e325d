"""§3.4 groups, §3.5 sessions, §4.6 promote, §4.7 consolidate, §4.8 reinforce,
§4.10 ``memory/session/list`` and §4.11 ``memory/session/close``."""

from __future__ import annotations

import time
from typing import Any

import pytest
from spec_support import Peer, PeerFactory, rpc_error, timeline_ids, uid

from a2m_server import ServerConfig, TierConfig

CAPACITY = 3
SMALL_STACK = ServerConfig(
    tiers=(
        TierConfig(
            "working", kind="working", capacity=CAPACITY, spill_to="episodic", per_session=True
        ),
        TierConfig("episodic", kind="episodic", promote_to="semantic", promote_after=2),
        TierConfig("semantic", kind="semantic", shared=True),
        TierConfig("procedural", kind="procedural", shared=True),
    )
)
"""The default four-tier layout with a per-session working tier of three records."""


@pytest.fixture(scope="module")
def stack(binding: str, module_peer_factory: PeerFactory) -> Peer:
    """A server of this module's own with ``SMALL_STACK``; tests write into sessions and
    groups of their own and look only at those."""
    return module_peer_factory(binding, SMALL_STACK)


def _tiers(peer: Peer, **where: Any) -> dict[str, str]:
    return {r["id"]: r["tier"] for r in peer.timeline(where=where, limit=0)}


def _tier_of(peer: Peer, record_id: str) -> str:
    (record,) = peer.timeline(where={"id": record_id})
    tier: str = record["tier"]
    return tier


def _counts(peer: Peer) -> dict[str, int]:
    return {t["name"]: t["count"] for t in peer.describe()["tiers"]}


# --- §4.6 promote --------------------------------------------------------------------------------


@pytest.mark.spec("4.6")
def test_4_6_promote_moves_records_and_counts_only_those_that_moved(stack: Peer) -> None:
    session = uid("session")
    ids = stack.remember({"content": "p1"}, {"content": "p2"}, session=session)
    absent = uid("absent")
    assert stack.call("memory/promote", {"ids": [*ids, absent], "tier": "semantic"}) == {
        "promoted": 2
    }
    assert set(_tiers(stack, session=session).values()) == {"semantic"}
    # Already in the target tier, or absent: not counted, not an error.
    assert stack.call("memory/promote", {"ids": [*ids, absent], "tier": "semantic"}) == {
        "promoted": 0
    }
    assert stack.call("memory/promote", {"ids": [], "tier": "semantic"}) == {"promoted": 0}


@pytest.mark.spec("4.6")
def test_4_6_promote_to_an_unknown_tier_is_32002_and_moves_nothing(stack: Peer) -> None:
    session = uid("session")
    ids = stack.remember({"content": "stays"}, session=session)
    assert rpc_error(stack, "memory/promote", {"ids": ids, "tier": "nowhere"}).code == -32002
    assert _tier_of(stack, ids[0]) == "working"


@pytest.mark.spec("4.6")
def test_4_6_promote_adds_salience_on_arrival(stack: Peer) -> None:
    ids = stack.remember({"content": "earned it", "salience": 0.5}, session=uid("session"))
    stack.call("memory/promote", {"ids": ids, "tier": "episodic", "salience": 1.25})
    (record,) = stack.timeline(where={"id": ids[0]})
    assert record["tier"] == "episodic"
    assert record["salience"] == pytest.approx(1.75)


@pytest.mark.spec("4.6")
@pytest.mark.parametrize(
    "params", [{}, {"ids": ["x"]}, {"tier": "semantic"}, {"ids": "x", "tier": "semantic"}]
)
def test_4_6_promote_requires_ids_and_tier(stack: Peer, params: dict[str, Any]) -> None:
    assert rpc_error(stack, "memory/promote", params).code == -32602


# --- §4.8 reinforce ------------------------------------------------------------------------------


@pytest.mark.spec("4.8")
def test_4_8_reinforce_raises_salience_and_counts_existing_records(stack: Peer) -> None:
    ids = stack.remember({"content": "useful"}, {"content": "also useful"}, session=uid("s"))
    before = {r["id"]: r["salience"] for r in stack.timeline(where={"id": ids})}
    assert stack.call("memory/reinforce", {"ids": [*ids, uid("absent")], "amount": 2.5}) == {
        "reinforced": 2
    }
    after = {r["id"]: r["salience"] for r in stack.timeline(where={"id": ids})}
    assert all(after[i] == pytest.approx(before[i] + 2.5) for i in ids)
    # The default amount raises it too.
    assert stack.call("memory/reinforce", {"ids": ids[:1]}) == {"reinforced": 1}
    (record,) = stack.timeline(where={"id": ids[0]})
    assert record["salience"] > after[ids[0]]


@pytest.mark.spec("4.8")
@pytest.mark.parametrize("params", [{}, {"ids": "x"}, {"ids": ["x"], "amount": "lots"}])
def test_4_8_reinforce_requires_ids(stack: Peer, params: dict[str, Any]) -> None:
    assert rpc_error(stack, "memory/reinforce", params).code == -32602


@pytest.mark.spec("3.1")
def test_3_1_recall_counts_accesses(stack: Peer) -> None:
    tag = uid("tag")
    stack.remember({"content": "accessed", "metadata": {"tag": tag}}, session=uid("s"))
    (fresh,) = stack.timeline(where={"tag": tag})
    assert fresh["access_count"] == 0
    stack.recall(where={"tag": tag})
    stack.recall(query="accessed", where={"tag": tag})
    (record,) = stack.timeline(where={"tag": tag})
    assert record["access_count"] == 2
    assert record["accessed_at"] >= record["created_at"]


# --- §3.4 groups -----------------------------------------------------------------------------------


@pytest.mark.spec("3.4")
def test_3_4_a_spill_moves_a_group_whole(stack: Peer) -> None:
    session = uid("session")
    group = uid("group")
    first, second = stack.remember(
        {"content": "assistant: calling the tool", "role": "assistant", "group": group},
        {"content": "tool: the answer", "role": "tool", "group": group},
        session=session,
    )
    others = [stack.remember({"content": f"later {i}"}, session=session)[0] for i in range(2)]
    # Three records fit; the fourth pushes the oldest out, and its group goes with it.
    tiers = _tiers(stack, session=session)
    assert tiers[first] == tiers[second] == "episodic"
    assert [tiers[i] for i in others] == ["working", "working"]


@pytest.mark.spec("3.4")
def test_3_4_promoting_one_member_moves_the_group(stack: Peer) -> None:
    session = uid("session")
    group = uid("group")
    ids = stack.remember(
        *({"content": f"chunk {i}", "group": group} for i in range(3)), session=session
    )
    assert stack.call("memory/promote", {"ids": ids[1:2], "tier": "semantic"})["promoted"] >= 1
    assert set(_tiers(stack, group=group).values()) == {"semantic"}


@pytest.mark.spec("3.4")
def test_3_4_consolidation_promotes_a_group_whole(stack: Peer) -> None:
    group = uid("group")
    ids = stack.remember(
        *({"content": f"chunk {i}", "group": group, "tier": "episodic"} for i in range(3)),
        session=uid("session"),
    )
    stack.call("memory/reinforce", {"ids": ids[:1], "amount": 5})  # past promote_after
    stack.call("memory/consolidate")
    assert set(_tiers(stack, group=group).values()) == {"semantic"}


@pytest.mark.spec("3.4")
def test_3_4_closing_a_session_moves_a_group_whole(stack: Peer) -> None:
    group = uid("group")
    closing, staying = uid("session"), uid("session")
    (a,) = stack.remember({"content": "asked here", "group": group}, session=closing)
    (b,) = stack.remember({"content": "answered there", "group": group}, session=staying)
    stack.call("memory/session/close", {"session": closing})
    tiers = _tiers(stack, group=group)
    assert tiers[a] == tiers[b] != "working"


@pytest.mark.spec("3.4")
def test_3_4_a_new_member_joins_its_group_where_the_group_lives(stack: Peer) -> None:
    session = uid("session")
    group = uid("group")
    ids = stack.remember(
        *({"content": f"part {i}", "group": group} for i in range(2)), session=session
    )
    stack.call("memory/promote", {"ids": ids, "tier": "episodic"})
    (late,) = stack.remember({"content": "a late part", "group": group}, session=session)
    assert set(_tiers(stack, group=group).values()) == {"episodic"}
    assert late in _tiers(stack, group=group)


@pytest.mark.spec("3.4")
def test_3_4_a_record_replacing_a_key_joins_its_group_where_the_group_lives(
    stack: Peer,
) -> None:
    """A write replacing what a key holds keeps the replaced record's tier, unless it
    joins a group: then the group's tier, as for a new member; a record replacing the
    group's only member stays where it was."""
    group, key, alone = uid("group"), uid("key"), uid("group")
    (member,) = stack.remember({"content": "the tool call", "group": group})
    stack.call("memory/promote", {"ids": [member], "tier": "semantic"})
    (first,) = stack.remember({"content": "the fact, first", "key": key})
    (second,) = stack.remember({"content": "the tool result", "key": key, "group": group})
    assert second == first  # replaced in place
    assert _tiers(stack, group=group) == {member: "semantic", first: "semantic"}
    (solo,) = stack.remember({"content": "on its own", "key": alone + "k", "group": alone})
    stack.call("memory/promote", {"ids": [solo], "tier": "episodic"})
    stack.remember({"content": "on its own, again", "key": alone + "k", "group": alone})
    assert _tiers(stack, group=alone) == {solo: "episodic"}


@pytest.mark.spec("3.4")
def test_3_4_a_group_is_discarded_whole(binding: str, make_peer: PeerFactory) -> None:
    """§3.4: a group is kept or discarded together: a tier with nowhere to spill drops
    the oldest record's whole group, never half of it."""
    layout = ServerConfig(tiers=(TierConfig("scratch", kind="working", capacity=2),))
    peer = make_peer(binding, layout)
    group = uid("group")
    peer.remember(
        {"content": "call", "role": "assistant", "group": group},
        {"content": "result", "role": "tool", "group": group},
    )
    (latest,) = peer.remember({"content": "the next turn"})
    assert timeline_ids(peer) == [latest]
    assert timeline_ids(peer, group=group) == []


# --- §3.5 sessions -----------------------------------------------------------------------------


@pytest.mark.spec("3.5")
def test_3_5_session_is_accepted_and_returned(stack: Peer) -> None:
    tag = uid("tag")
    default, own = uid("session"), uid("session")
    ids = stack.remember(
        {"content": "takes the default", "metadata": {"tag": tag}},
        {"content": "names its own", "session": own, "metadata": {"tag": tag}},
        session=default,
    )
    (loose,) = stack.remember(
        {"content": "no session", "metadata": {"tag": tag}, "tier": "episodic"}
    )
    sessions = {r["id"]: r["session"] for r in stack.timeline(where={"tag": tag})}
    assert sessions == {ids[0]: default, ids[1]: own, loose: None}


@pytest.mark.spec("3.5")
def test_3_5_an_empty_session_is_kept_as_sent(binding: str, make_peer: PeerFactory) -> None:
    """A record naming the session ``""`` (the schema allows it) keeps it, whatever the
    call's default, and lists as that session; a record naming none takes the default."""
    peer = make_peer(binding)
    ids = peer.remember({"content": "names the empty one", "session": ""}, {"content": "x"},
                        session="the-default")  # fmt: skip
    sessions = {r["id"]: r["session"] for r in peer.timeline()}
    assert sessions == {ids[0]: "", ids[1]: "the-default"}
    listed = {s["session"] for s in peer.call("memory/session/list")["sessions"]}
    assert listed == {"", "the-default"}


@pytest.mark.spec("3.5")
def test_3_5_capacity_of_a_per_session_tier_applies_within_each_session(stack: Peer) -> None:
    busy, quiet = uid("busy"), uid("quiet")
    quiet_ids = stack.remember({"content": "q1"}, {"content": "q2"}, session=quiet)
    busy_ids = [stack.remember({"content": f"b{i}"}, session=busy)[0] for i in range(CAPACITY + 4)]
    assert [_tiers(stack, session=quiet)[i] for i in quiet_ids] == ["working", "working"]
    busy_tiers = _tiers(stack, session=busy)
    assert [busy_tiers[i] for i in busy_ids] == ["episodic"] * 4 + ["working"] * CAPACITY


@pytest.mark.spec("3.5")
def test_3_5_timeline_where_session_replays_one_conversation(stack: Peer) -> None:
    mine, other = uid("session"), uid("session")
    turns = []
    for i in range(5):
        turns += stack.remember(
            {"content": f"turn {i}", "role": "user" if i % 2 else "assistant"}, session=mine
        )
        stack.remember({"content": f"elsewhere {i}"}, session=other)
    replay = stack.timeline(where={"session": mine})
    assert [r["id"] for r in replay] == turns  # in order, across tiers, nothing foreign


@pytest.mark.spec("3.5")
def test_3_5_records_without_a_session_belong_to_no_named_one(stack: Peer) -> None:
    tag = uid("tag")
    named = uid("session")
    named_ids = stack.remember({"content": "named 1"}, {"content": "named 2"}, session=named)
    loose = stack.remember(
        *({"content": f"loose {i}", "metadata": {"tag": tag}} for i in range(CAPACITY + 2))
    )
    # The implicit bucket has its own capacity: it never evicts the named session.
    assert [_tiers(stack, session=named)[i] for i in named_ids] == ["working", "working"]
    assert set(timeline_ids(stack, tag=tag, session=None)) == set(loose)
    assert not set(loose) & set(timeline_ids(stack, session=named))
    listed = stack.call("memory/session/list")["sessions"]
    assert all(isinstance(s["session"], str) and s["session"] for s in listed)
    # Closing a named session does not touch the implicit bucket.
    before = _tiers(stack, tag=tag)
    stack.call("memory/session/close", {"session": named})
    assert _tiers(stack, tag=tag) == before


# --- §4.10 session/list ----------------------------------------------------------------------------


@pytest.mark.spec("4.10")
def test_4_10_session_list_reports_each_session(stack: Peer) -> None:
    session = uid("session")
    stack.remember({"content": "one"}, session=session)
    stack.remember({"content": "two", "tier": "semantic"}, {"content": "three"}, session=session)
    entries = [s for s in stack.call("memory/session/list")["sessions"] if s["session"] == session]
    assert len(entries) == 1
    entry = entries[0]
    assert entry["records"] == 3
    if "tiers" in entry:
        assert entry["tiers"] == {"working": 2, "semantic": 1}
    if "opened_at" in entry and "touched_at" in entry:
        assert entry["opened_at"] <= entry["touched_at"]


# --- §4.11 session/close -----------------------------------------------------------------------


@pytest.mark.spec("4.11")
def test_4_11_closing_moves_records_out_of_working_and_never_deletes(stack: Peer) -> None:
    session, other = uid("session"), uid("session")
    ids = stack.remember({"content": "c1"}, {"content": "c2"}, {"content": "c3"}, session=session)
    other_ids = stack.remember({"content": "o1"}, session=other)
    result = stack.call("memory/session/close", {"session": session})
    assert result["closed"] == session
    assert result["flushed"] == 3
    assert set(result["counts"]) == {"working", "episodic", "semantic", "procedural"}
    tiers = _tiers(stack, session=session)
    assert sorted(tiers) == sorted(ids), "§4.11: closing MUST NOT destroy the conversation"
    assert "working" not in tiers.values()
    assert _tiers(stack, session=other) == {other_ids[0]: "working"}
    # The session is still listed: its records still exist.
    assert session in {s["session"] for s in stack.call("memory/session/list")["sessions"]}


@pytest.mark.spec("4.11")
def test_4_11_closing_leaves_procedural_memory_untouched(stack: Peer) -> None:
    session = uid("session")
    (procedure,) = stack.remember(
        {"content": "how to deploy", "tier": "procedural"}, session=session
    )
    (turn,) = stack.remember({"content": "a turn"}, session=session)
    stack.call("memory/session/close", {"session": session})
    tiers = _tiers(stack, session=session)
    assert tiers[procedure] == "procedural"
    assert tiers[turn] != "working"


@pytest.mark.spec("4.11")
def test_4_11_closing_an_unknown_session_is_a_no_op(stack: Peer) -> None:
    result = stack.call("memory/session/close", {"session": uid("never-opened")})
    assert result["flushed"] == 0
    assert result["closed"].startswith("never-opened-")
    assert isinstance(result["counts"], dict)


@pytest.mark.spec("4.11")
@pytest.mark.parametrize("params", [{}, {"session": ""}, {"session": None}, {"session": 3}])
def test_4_11_close_without_a_session_is_32602(stack: Peer, params: dict[str, Any]) -> None:
    assert rpc_error(stack, "memory/session/close", params).code == -32602


# --- §4.7 consolidate ------------------------------------------------------------------------------


@pytest.mark.spec("4.7")
def test_4_7_consolidate_reports_counts_for_every_tier(stack: Peer) -> None:
    result = stack.call("memory/consolidate")
    names = [t["name"] for t in stack.describe()["tiers"]]
    assert sorted(result["counts"]) == sorted(names)
    assert result["counts"] == _counts(stack)
    for name in ("moved", "promoted", "dropped", "summarized"):
        assert isinstance(result.get(name, 0), int)
        assert result.get(name, 0) >= 0


@pytest.mark.spec("4.7")
def test_4_7_describe_counts_records_per_tier(stack: Peer) -> None:
    before = _counts(stack)
    stack.remember({"content": "w"}, {"content": "p", "tier": "procedural"}, session=uid("s"))
    after = _counts(stack)
    assert after["working"] == before["working"] + 1
    assert after["procedural"] == before["procedural"] + 1
    assert after["episodic"] == before["episodic"]


@pytest.mark.spec("4.7")
def test_4_7_records_recalled_often_enough_are_promoted_by_consolidate(stack: Peer) -> None:
    tag = uid("tag")
    often, once = stack.remember(
        {"content": "recalled often", "tier": "episodic", "metadata": {"tag": tag, "n": 1}},
        {"content": "recalled once", "tier": "episodic", "metadata": {"tag": tag, "n": 2}},
        session=uid("session"),
    )
    stack.recall(where={"tag": tag})
    stack.recall(where={"tag": tag, "n": 1})  # promote_after is 2 in this layout
    stack.call("memory/consolidate")
    assert _tiers(stack, tag=tag) == {often: "semantic", once: "episodic"}


@pytest.mark.spec("4.7")
def test_4_7_consolidate_promotes_before_it_spills(binding: str, make_peer: PeerFactory) -> None:
    """§4.7: what earned promotion is promoted, then a tier over capacity spills. A record
    promoted into a full tier makes it spill; spilling first would leave it over capacity."""
    layout = ServerConfig(
        tiers=(
            TierConfig("inbox", kind="working", promote_to="journal", promote_after=1),
            TierConfig("journal", kind="episodic", capacity=2, spill_to="archive"),
            TierConfig("archive", kind="semantic"),
        )
    )
    peer = make_peer(binding, layout)
    (e1,) = peer.remember({"content": "journal 1", "tier": "journal"})
    (e2,) = peer.remember({"content": "journal 2", "tier": "journal"})
    (w1,) = peer.remember({"content": "earned", "tier": "inbox"})
    peer.call("memory/reinforce", {"ids": [w1], "amount": 1})
    result = peer.call("memory/consolidate")
    assert result["promoted"] == 1
    assert result["moved"] == 1
    assert result.get("dropped", 0) == 0
    assert result["counts"] == {"inbox": 0, "journal": 2, "archive": 1}
    tiers = {r["id"]: r["tier"] for r in peer.timeline()}
    assert tiers == {e1: "archive", e2: "journal", w1: "journal"}


@pytest.mark.spec("3.4")
def test_3_4_a_group_expires_whole(binding: str, make_peer: PeerFactory) -> None:
    """``metadata.ttl_s`` (this server's expiry) never discards part of a group: a member
    written with a TTL gives the whole group its expiry, and a later member written
    without one keeps the whole group."""
    peer = make_peer(binding)
    brief, kept = uid("group"), uid("group")
    peer.remember(
        {"content": "calling the tool", "group": brief},
        {"content": "the tool's answer", "group": brief, "metadata": {"ttl_s": 1}},
    )
    peer.remember({"content": "noted for a moment", "group": kept, "metadata": {"ttl_s": 1}},
                  {"content": "and kept after all", "group": kept})  # fmt: skip
    time.sleep(1.1)
    assert _tiers(peer, group=brief) == {}
    assert len(_tiers(peer, group=kept)) == 2
    peer.remember({"content": "purges the expired"})
    assert _tiers(peer, group=brief) == {}
    assert len(_tiers(peer, group=kept)) == 2
