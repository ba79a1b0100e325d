"""§5.2 ``where`` with long lists of values, on every store: a list of thousands of keys
or metadata values is still one condition (no expression-depth or parameter limit)."""

from __future__ import annotations

from spec_support import PeerFactory, uid


def test_a_where_list_of_thousands_of_values_matches_exactly_its_members(
    make_peer: PeerFactory,
) -> None:
    peer = make_peer("in-process")
    tag = uid("many")
    records = [{"content": f"r{n}", "key": f"{tag}/{n}", "metadata": {"n": n}} for n in range(300)]
    peer.call("memory/remember", {"records": records})
    wanted_keys = [f"{tag}/{n}" for n in range(0, 300, 3)] + [
        f"{tag}/absent{n}" for n in range(3000)
    ]
    by_key = peer.call("memory/timeline", {"where": {"key": wanted_keys}, "limit": 0})["records"]
    assert sorted(r["key"] for r in by_key) == sorted(wanted_keys[:100])
    wanted_numbers = [*range(0, 300, 7), *range(10_000, 13_000), 1.5, "7", True]
    by_value = peer.call("memory/timeline", {"where": {"n": wanted_numbers}, "limit": 0})["records"]
    assert sorted(r["content"] for r in by_value) == sorted(f"r{n}" for n in range(0, 300, 7))


def test_filters_holding_u0000_are_answered_not_refused(make_peer: PeerFactory) -> None:
    """JSON may carry U+0000 in any string; a filter holding one is a filter like any
    other (and metadata holding one comes back verbatim)."""
    peer = make_peer("in-process")
    tag = uid("nul")
    (record_id,) = peer.call(
        "memory/remember",
        {"records": [{"content": "x\x00y", "metadata": {"tags": [tag, "a\x00b"], "k": "v\x00"}}]},
    )["ids"]
    (found,) = peer.call("memory/timeline", {"where": {"id": record_id}})["records"]
    assert found["metadata"] == {"tags": [tag, "a\x00b"], "k": "v\x00"}
    assert found["content"] == "x\x00y"
    for where in ({"k": "v\x00"}, {"k": ["\x00", "v\x00"]}, {"k": ["v\x00", "v"]}):
        records = peer.call("memory/timeline", {"where": where})["records"]
        assert [r["id"] for r in records] == [record_id], where
    for where in ({"k": "v"}, {"k": ["v", "\x00"]}, {"k": "v\x00\x00"}):
        assert not peer.call("memory/timeline", {"where": where})["records"], where
    assert peer.call("memory/recall", {"query": "x", "tags": ["a\x00b", tag]}) is not None
