"""§6 identity and scoping: owners partition the store; over HTTP the owner comes from the
authenticated principal (another owner is SCOPE_DENIED), and without authentication
``scopes`` is not advertised at all."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from spec_support import Actor, Agents, HttpPeer, Peer, PeerFactory, rpc_error, timeline_ids, uid


@pytest.mark.spec("6")
def test_6_records_carry_their_owner(agents: Agents) -> None:
    tag = uid("tag")
    (record_id,) = agents.alice.remember({"content": "mine", "metadata": {"tag": tag}})
    (record,) = agents.alice.timeline(where={"tag": tag})
    assert record["id"] == record_id
    assert record["owner"] == agents.alice.owner


@pytest.mark.spec("6")
def test_6_an_owner_sees_its_own_records_and_shared_tiers_not_another_owners(
    agents: Agents,
) -> None:
    tag = uid("tag")
    private_session, shared_session = uid("session"), uid("session")
    (private,) = agents.alice.remember(
        {"content": "alice private okapi", "metadata": {"tag": tag}}, session=private_session
    )
    (shared,) = agents.alice.remember(
        {"content": "alice shared okapi", "tier": "semantic", "metadata": {"tag": tag}},
        session=shared_session,
    )
    (bobs,) = agents.bob.remember({"content": "bob private okapi", "metadata": {"tag": tag}})
    assert set(timeline_ids(agents.alice, tag=tag)) == {private, shared}
    assert set(timeline_ids(agents.bob, tag=tag)) == {shared, bobs}
    assert {r["id"] for r in agents.bob.recall(query="okapi", where={"tag": tag})} == {shared, bobs}
    key = f"{uid('k')}/x"
    agents.alice.remember({"content": "alice's key", "key": key})
    assert agents.bob.call("memory/fetch", {"key": key})["record"] is None
    assert agents.alice.call("memory/fetch", {"key": key})["record"] is not None
    bob_sessions = {s["session"] for s in agents.bob.call("memory/session/list")["sessions"]}
    alice_sessions = {s["session"] for s in agents.alice.call("memory/session/list")["sessions"]}
    assert private_session in alice_sessions
    assert private_session not in bob_sessions


@pytest.mark.spec("4.1")
def test_4_1_describe_owner_scopes_the_tier_counts(agents: Agents) -> None:
    def working(actor: Actor) -> int:
        tiers = actor.call("memory/describe")["tiers"]
        return int(next(t["count"] for t in tiers if t["name"] == "working"))

    alice_before, bob_before = working(agents.alice), working(agents.bob)
    agents.alice.remember({"content": "one"}, {"content": "two"}, session=uid("session"))
    assert working(agents.alice) == alice_before + 2
    assert working(agents.bob) == bob_before


@pytest.mark.spec("4.1")
def test_4_1_describe_says_whom_the_callers_calls_act_as(agents: Agents) -> None:
    """An extension (§2 lets a result carry more): with ``scopes``, describe's ``owner``
    is the owner this connection's calls act as, so a client can tell its own records
    from another owner's that sit at other keys."""
    assert agents.alice.call("memory/describe")["owner"] == agents.alice.owner
    assert agents.bob.call("memory/describe")["owner"] == agents.bob.owner


@pytest.mark.spec("6")
def test_6_an_owner_changes_only_its_own_records(agents: Agents) -> None:
    tag = uid("tag")
    ids = agents.alice.remember(
        {"content": "alice 1", "metadata": {"tag": tag}},
        {"content": "alice 2", "metadata": {"tag": tag}, "tier": "semantic"},
    )
    assert agents.bob.call("memory/forget", {"ids": ids}) == {"forgotten": 0}
    assert agents.bob.call("memory/forget", {"where": {"tag": tag}}) == {"forgotten": 0}
    assert agents.bob.call("memory/promote", {"ids": ids, "tier": "procedural"}) == {"promoted": 0}
    assert agents.bob.call("memory/reinforce", {"ids": ids}) == {"reinforced": 0}
    assert sorted(timeline_ids(agents.alice, tag=tag)) == sorted(ids)
    assert agents.alice.call("memory/forget", {"ids": ids}) == {"forgotten": 2}


@pytest.mark.spec("6")
@pytest.mark.bindings("in-process", "stdio")
def test_6_a_local_transport_takes_the_owner_at_face_value(peer: Peer) -> None:
    """§6: a server on a local transport MAY accept the client-supplied owner."""
    owner = uid("owner")
    tag = uid("tag")
    peer.remember({"content": "as claimed", "metadata": {"tag": tag}}, owner=owner)
    (record,) = peer.timeline(where={"tag": tag}, owner=owner)
    assert record["owner"] == owner
    assert "scopes" in peer.describe()["capabilities"]
    # Calls naming no owner act as nobody's; describe says whom a call acts as.
    assert peer.describe()["owner"] is None
    assert peer.call("memory/describe", {"owner": owner})["owner"] == owner
    # A record written with no owner is unowned and visible to every owner.
    (unowned,) = peer.remember({"content": "nobody's", "metadata": {"tag": tag}})
    assert unowned in timeline_ids(peer, tag=tag)
    assert unowned in [r["id"] for r in peer.timeline(where={"tag": tag}, owner=uid("other"))]


# --- over HTTP -------------------------------------------------------------------------------


@pytest.mark.spec("6")
@pytest.mark.bindings("http")
def test_6_http_without_authentication_does_not_advertise_scopes(peer: Peer) -> None:
    """§6/§8.3: a server that cannot authenticate its callers MUST NOT advertise scopes."""
    assert "scopes" not in peer.describe()["capabilities"]
    assert "owner" not in peer.describe()
    tag = uid("tag")
    peer.remember({"content": "no owner here", "metadata": {"tag": tag}})
    (record,) = peer.timeline(where={"tag": tag})
    assert "owner" not in record
    calls: list[tuple[str, dict[str, Any]]] = [
        ("memory/remember", {"records": [{"content": "x"}], "owner": "mallory"}),
        ("memory/recall", {"owner": "mallory"}),
        ("memory/timeline", {"owner": "mallory"}),
        ("memory/describe", {"owner": "mallory"}),
    ]
    for method, params in calls:
        assert rpc_error(peer, method, params).code == -32003, method


@pytest.mark.spec("4.2")
@pytest.mark.bindings("http")
def test_4_2_a_record_owner_field_is_ignored_where_scopes_is_not_declared(peer: Peer) -> None:
    """§4.2: a record field of an undeclared capability is ignored, not refused; over
    unauthenticated HTTP, ``owner`` on a record is such a field (§6 withholds scopes)."""
    tag = uid("tag")
    (record_id,) = peer.remember(
        {"content": "claims an owner", "owner": "mallory", "metadata": {"tag": tag}}
    )
    (record,) = peer.timeline(where={"tag": tag})
    assert record["id"] == record_id
    assert "owner" not in record


OTHER_OWNER_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("memory/describe", {}),
    ("memory/remember", {"records": [{"content": "x"}]}),
    ("memory/recall", {"query": "x"}),
    ("memory/timeline", {}),
    ("memory/forget", {"ids": ["x"]}),
    ("memory/promote", {"ids": ["x"], "tier": "semantic"}),
    ("memory/reinforce", {"ids": ["x"]}),
    ("memory/fetch", {"key": "k"}),
    ("memory/session/list", {}),
    ("memory/session/close", {"session": "s"}),
    ("memory/events", {}),
    ("memory/summarize", {"ids": ["x"]}),
]


@pytest.mark.spec("6")
@pytest.mark.bindings("http")
@pytest.mark.parametrize(
    ("method", "params"), OTHER_OWNER_CALLS, ids=[m for m, _ in OTHER_OWNER_CALLS]
)
def test_6_http_naming_another_owner_is_32005(
    agents: Agents, method: str, params: dict[str, Any]
) -> None:
    """§6: over a network the scope comes from the principal; a request naming another
    owner is refused with SCOPE_DENIED (and naming oneself is fine)."""
    alice = agents.alice
    assert alice.peer.describe()["capabilities"].count("scopes") == 1
    failure = rpc_error(alice.peer, method, {**params, "owner": agents.bob.owner})
    assert failure.code == -32005
    alice.peer.call(method, {**params, "owner": alice.owner})


@pytest.mark.spec("6")
@pytest.mark.bindings("http")
def test_6_http_a_record_naming_another_owner_is_32005_and_nothing_is_written(
    agents: Agents,
) -> None:
    tag = uid("tag")
    records = [
        {"content": "fine", "metadata": {"tag": tag}},
        {"content": "impostor", "owner": agents.bob.owner, "metadata": {"tag": tag}},
    ]
    assert rpc_error(agents.alice.peer, "memory/remember", {"records": records}).code == -32005
    assert timeline_ids(agents.alice, tag=tag) == []
    assert timeline_ids(agents.bob, tag=tag) == []


@pytest.mark.spec("6")
@pytest.mark.bindings("http")
def test_6_http_the_owner_comes_from_the_token(agents: Agents) -> None:
    tag = uid("tag")
    (record_id,) = agents.bob.remember({"content": "written as bob", "metadata": {"tag": tag}})
    (record,) = agents.bob.timeline(where={"tag": tag})
    assert record["id"] == record_id
    assert record["owner"] == agents.bob.owner
    assert agents.alice.timeline(where={"tag": tag}) == []


@pytest.mark.spec("6.1")
def test_6_1_http_without_a_valid_token_is_401_before_json_rpc(make_peer: PeerFactory) -> None:
    token = uid("token")
    peer = make_peer("http", tokens={token: "alice"}, token=token)
    assert isinstance(peer, HttpPeer)
    body = b'{"jsonrpc":"2.0","id":1,"method":"memory/describe","params":{}}'
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {token}"}):
        response = httpx.post(
            peer.url, content=body, headers={"Content-Type": "application/json", **headers}
        )
        assert response.status_code == 401
        assert "jsonrpc" not in response.text
    assert "scopes" in peer.describe()["capabilities"]
