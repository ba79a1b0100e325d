"""§3.6 keys (replacement, per-owner uniqueness, segment-wise ``key_prefix``) and §4.9
``memory/fetch``."""

from __future__ import annotations

from typing import Any

import pytest
from spec_support import Agents, Peer, rpc_error, uid

# Keys under a root; "a/b" must select the first three and never "a/bc" nor "a/b-c".
PREFIX_KEYS = ["a/b", "a/b/c", "a/b/c/d", "a/bc", "a/b-c", "a/b.c", "a", "ab", "a/b%/x", "a/b_"]
UNDER_A_B = {"a/b", "a/b/c", "a/b/c/d"}


def _fetch(peer: Peer, key: str, **params: Any) -> dict[str, Any] | None:
    record: dict[str, Any] | None = peer.call("memory/fetch", {"key": key, **params})["record"]
    return record


@pytest.mark.spec("3.6")
def test_3_6_writing_an_occupied_key_replaces_keeping_the_id(peer: Peer) -> None:
    """§3.6: the record keeps its id, takes the new content, and revision goes up by one."""
    key = f"{uid('app')}/user/city"
    (first,) = peer.remember({"content": "the user lives in Lisbon", "key": key, "role": "user"})
    assert _fetch(peer, key)["revision"] == 0  # type: ignore[index]
    (second,) = peer.remember(
        {"content": "the user moved to Porto", "key": key, "metadata": {"v": 2}}
    )
    (third,) = peer.remember({"content": "the user moved to Braga", "key": key})
    assert first == second == third
    record = _fetch(peer, key)
    assert record is not None
    assert record["id"] == first
    assert record["content"] == "the user moved to Braga"
    assert record["revision"] == 2
    assert record["key"] == key
    # The superseded fact is gone, not merely outnumbered.
    everything = peer.timeline(key_prefix=key)
    assert [r["id"] for r in everything] == [first]
    lisbon = peer.recall(query="Lisbon", key_prefix=key)
    assert lisbon == []


@pytest.mark.spec("3.6")
def test_3_6_replacement_inside_one_batch(peer: Peer) -> None:
    key = f"{uid('app')}/k"
    ids = peer.remember({"content": "v0", "key": key}, {"content": "v1", "key": key})
    assert ids[0] == ids[1]
    record = _fetch(peer, key)
    assert record is not None
    assert record["content"] == "v1"
    assert record["revision"] == 1


@pytest.mark.spec("3.2")
def test_3_2_retrying_a_key_replacement_with_its_client_id_applies_it_once(peer: Peer) -> None:
    """§3.2 with §3.6: the retry of a replacement is recognised, not applied twice."""
    key = f"{uid('app')}/k"
    (record_id,) = peer.remember({"id": uid("w"), "content": "first", "key": key})
    write = {"id": uid("w"), "content": "second", "key": key}
    assert peer.remember(write) == [record_id]
    assert peer.remember(write) == [record_id]
    record = _fetch(peer, key)
    assert record is not None
    assert record["revision"] == 1
    assert record["content"] == "second"


@pytest.mark.spec("3.6")
def test_3_6_key_uniqueness_is_per_owner(agents: Agents) -> None:
    """§3.6: two agents each hold their own ``user/city`` without colliding."""
    key = f"{uid('shared')}/user/city"
    (alice_id,) = agents.alice.remember({"content": "alice lives in Oslo", "key": key})
    (bob_id,) = agents.bob.remember({"content": "bob lives in Lima", "key": key})
    assert alice_id != bob_id
    alice_record = agents.alice.call("memory/fetch", {"key": key})["record"]
    bob_record = agents.bob.call("memory/fetch", {"key": key})["record"]
    assert alice_record["id"] == alice_id
    assert alice_record["content"] == "alice lives in Oslo"
    assert bob_record["id"] == bob_id
    assert bob_record["content"] == "bob lives in Lima"
    assert alice_record["revision"] == bob_record["revision"] == 0
    # Bob rewriting "his" key never touches Alice's.
    agents.bob.remember({"content": "bob moved to Quito", "key": key})
    assert agents.alice.call("memory/fetch", {"key": key})["record"]["revision"] == 0


def _write_prefix_keys(peer: Peer) -> tuple[str, dict[str, str]]:
    root = uid("root")
    tag = uid("tag")
    ids = peer.remember(
        *(
            {"content": f"zebra fact at {key}", "key": f"{root}/{key}", "metadata": {"tag": tag}}
            for key in PREFIX_KEYS
        )
    )
    return root, dict(zip(ids, PREFIX_KEYS, strict=True))


def _keys(records: list[dict[str, Any]], root: str) -> set[str]:
    return {r["key"].removeprefix(root + "/") for r in records}


@pytest.mark.spec("3.6")
def test_3_6_key_prefix_on_recall_matches_by_segment(peer: Peer) -> None:
    root, _ = _write_prefix_keys(peer)
    with_query = peer.recall(query="zebra fact", key_prefix=f"{root}/a/b", limit=50)
    without_query = peer.recall(key_prefix=f"{root}/a/b", limit=50)
    assert _keys(with_query, root) == UNDER_A_B
    assert _keys(without_query, root) == UNDER_A_B


@pytest.mark.spec("3.6")
def test_3_6_key_prefix_on_timeline_matches_by_segment(peer: Peer) -> None:
    root, _ = _write_prefix_keys(peer)
    assert _keys(peer.timeline(key_prefix=f"{root}/a/b"), root) == UNDER_A_B
    assert _keys(peer.timeline(key_prefix=f"{root}/a/b/c"), root) == {"a/b/c", "a/b/c/d"}
    assert _keys(peer.timeline(key_prefix=f"{root}/a"), root) == set(PREFIX_KEYS) - {"ab"}
    # A trailing slash selects what lies beneath, and still never "a/bc".
    beneath = _keys(peer.timeline(key_prefix=f"{root}/a/b/"), root)
    assert {"a/b/c", "a/b/c/d"} <= beneath <= UNDER_A_B
    # Characters that are wildcards elsewhere are literal here.
    assert _keys(peer.timeline(key_prefix=f"{root}/a/b%"), root) == {"a/b%/x"}
    assert _keys(peer.timeline(key_prefix=f"{root}/a/b_"), root) == {"a/b_"}


@pytest.mark.spec("3.6")
def test_3_6_key_prefix_on_forget_matches_by_segment(peer: Peer) -> None:
    root, _ = _write_prefix_keys(peer)
    assert peer.call("memory/forget", {"key_prefix": f"{root}/a/b"}) == {"forgotten": 3}
    assert _keys(peer.timeline(key_prefix=root), root) == set(PREFIX_KEYS) - UNDER_A_B
    assert _fetch(peer, f"{root}/a/bc") is not None
    assert _fetch(peer, f"{root}/a/b") is None


@pytest.mark.spec("3.6")
def test_3_6_records_without_a_key_are_outside_every_prefix(peer: Peer) -> None:
    root, _ = _write_prefix_keys(peer)
    tag = uid("tag")
    peer.remember({"content": f"{root}/a/b lookalike content", "metadata": {"tag": tag}})
    assert _keys(peer.timeline(key_prefix=f"{root}/a/b"), root) == UNDER_A_B


# --- §4.9 fetch ----------------------------------------------------------------------------


@pytest.mark.spec("4.9")
def test_4_9_fetch_of_an_unused_key_is_null_not_an_error(peer: Peer) -> None:
    assert peer.call("memory/fetch", {"key": f"{uid('never')}/written"}) == {"record": None}


@pytest.mark.spec("4.9")
def test_4_9_fetch_of_a_forgotten_key_is_null(peer: Peer) -> None:
    key = f"{uid('gone')}/k"
    (record_id,) = peer.remember({"content": "short lived", "key": key})
    assert peer.call("memory/forget", {"ids": [record_id]}) == {"forgotten": 1}
    assert _fetch(peer, key) is None


@pytest.mark.spec("4.9")
@pytest.mark.parametrize("params", [{}, {"key": ""}, {"key": None}, {"key": 5}, {"key": ["k"]}])
def test_4_9_fetch_without_a_key_is_32602(peer: Peer, params: dict[str, Any]) -> None:
    assert rpc_error(peer, "memory/fetch", params).code == -32602


@pytest.mark.spec("4.9")
def test_4_9_fetch_returns_the_whole_record(peer: Peer) -> None:
    key = f"{uid('full')}/k"
    session = uid("session")
    (record_id,) = peer.remember(
        {"content": "complete", "key": key, "role": "tool", "group": "g1", "metadata": {"m": [1]}},
        session=session,
    )
    record = _fetch(peer, key)
    assert record is not None
    assert {
        k: record[k]
        for k in ("id", "content", "key", "revision", "role", "group", "metadata", "session")
    } == {
        "id": record_id,
        "content": "complete",
        "key": key,
        "revision": 0,
        "role": "tool",
        "group": "g1",
        "metadata": {"m": [1]},
        "session": session,
    }


@pytest.mark.spec("3.6")
@pytest.mark.parametrize("key", ["", 5, ["a"]], ids=["empty", "number", "list"])
def test_3_6_a_key_must_be_a_non_empty_string(peer: Peer, key: Any) -> None:
    failure = rpc_error(peer, "memory/remember", {"records": [{"content": "x", "key": key}]})
    assert failure.code == -32602


@pytest.mark.spec("3.6")
def test_3_6_one_batch_of_new_keys_replacements_and_retries(peer: Peer) -> None:
    """§3.6 with §3.2 in one call: new keys, a held key replaced, a retried client id and a
    keyless record each land as they would one call at a time, in the batch's order."""
    root = uid("app")
    held_id, retried_id = peer.remember(
        {"content": "old city", "key": f"{root}/city"},
        {"id": uid("w"), "content": "a note", "key": f"{root}/note"},
    )
    retry = {"id": retried_id, "content": "a note, sent again", "key": f"{root}/note"}
    ids = peer.remember(
        {"content": "first new", "key": f"{root}/a"},
        {"content": "new city", "key": f"{root}/city"},
        retry,
        {"content": "no key at all"},
        {"content": "second new", "key": f"{root}/b"},
    )
    assert ids[1] == held_id
    assert ids[2] == retried_id
    assert len(set(ids)) == 5
    city, note = _fetch(peer, f"{root}/city"), _fetch(peer, f"{root}/note")
    assert city is not None
    assert note is not None
    assert (city["content"], city["revision"]) == ("new city", 1)
    assert (note["content"], note["revision"]) == ("a note", 0)
    listed = peer.timeline(key_prefix=root)
    assert [r["key"] for r in listed if r["id"] in (ids[0], ids[4])] == [f"{root}/a", f"{root}/b"]


@pytest.mark.spec("3.2")
def test_3_2_a_retried_batch_whose_ids_and_keys_hold_nul_lands_once(peer: Peer) -> None:
    """§3.2 and §3.6 for ids and keys holding a NUL character: retrying the batch returns
    the records it produced and replaces nothing twice, as for any other string."""
    root = uid("nul")
    batch = [
        {"id": uid("w") + "\x00a", "content": "first"},
        {"id": uid("w") + "\x00b", "content": "second", "key": f"{root}/k\x00ey"},
    ]
    first = peer.remember(*batch)
    again = peer.remember(*batch)
    assert again == first
    stored = _fetch(peer, f"{root}/k\x00ey")
    assert stored is not None
    assert (stored["content"], stored["revision"]) == ("second", 0)
