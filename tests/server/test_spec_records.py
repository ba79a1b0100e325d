"""§3.1 records and metadata, §3.2 identifiers, §3.3 timestamps, §3.8 external records and
§4.2 ``memory/remember``."""

from __future__ import annotations

import select
import socket
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from spec_support import TIMESTAMP_MS, Peer, json_identical, rpc_error, timeline_ids, uid

# Metadata the server must hand back exactly: nesting, unicode, nulls, every number shape.
METADATA_CASES: dict[str, dict[str, Any]] = {
    "nested": {"a": {"b": {"c": [1, {"d": [[], {}, [None]]}]}}, "list": [[1, 2], [3]]},
    "unicode": {
        "emoji": "🧠💾",
        "rtl": "שלום عالم",
        "cjk": "記憶",
        "combining": "e\u0301",
        "controls": "tab\tnl\ncr\rnul\u0000",
        "ls": "\u2028\u2029",
        "ключ-キー": "value",
        "": "empty key",
    },
    "nulls": {"n": None, "in_list": [None, None], "deep": {"x": None}},
    "numbers": {
        "int": 42,
        "negative": -7,
        "zero": 0,
        "big": 2**62,
        # Past 64 bits: exact, however the server parses (no parser's rounding to float).
        "huge": 2**70 + 1,
        "huge_negative": -(2**66) - 3,
        "huge_beside_floats": [0.25, 2**64 + 7, -1.5],
        "float": 0.1,
        "third": 1 / 3,
        "exp": 1.5e300,
        "tiny": 5e-324,
        "negzero": -0.0,
        "whole_float": 2.0,
    },
    "scalars": {"t": True, "f": False, "s": "1", "one": 1, "one_float": 1.0},
    "keys": {"a.b": 1, 'q"uote': 2, "sl/ash": 3, "$.path": 4, "back\\slash": 5, " sp ": 6},
    "empty": {},
}


@pytest.mark.spec("3.1")
@pytest.mark.parametrize("case", sorted(METADATA_CASES))
def test_3_1_metadata_round_trips_unchanged(peer: Peer, case: str) -> None:
    """§3.1: metadata MUST round-trip unchanged, in structure and in every JSON type."""
    tag = uid("tag")
    key = f"{uid('meta')}/k"
    metadata = {**METADATA_CASES[case], "tag": tag}
    (record_id,) = peer.remember(
        {"content": f"metadata case {case}", "metadata": metadata, "key": key}
    )
    (from_timeline,) = peer.timeline(where={"tag": tag})
    (from_recall,) = peer.recall(where={"tag": tag})
    fetched = peer.call("memory/fetch", {"key": key})["record"]
    for record in (from_timeline, from_recall, fetched):
        assert record["id"] == record_id
        assert json_identical(record["metadata"], metadata), record["metadata"]


@pytest.mark.spec("3.1")
def test_3_1_deeply_nested_metadata_round_trips(peer: Peer) -> None:
    tag = uid("tag")
    deep: Any = "bottom"
    # metadata (level 1) and "deep" (level 2), then an object and a list a level each: at
    # the server's limit (MAX_JSON_DEPTH, 64 levels), not past it.
    for depth in range(31):
        deep = {f"level{depth}": [deep]}
    peer.remember({"content": "deep metadata", "metadata": {"tag": tag, "deep": deep}})
    (record,) = peer.timeline(where={"tag": tag})
    assert json_identical(record["metadata"]["deep"], deep)


@pytest.mark.spec("3.1")
@pytest.mark.parametrize("metadata", [[1, 2], "text", 5, True])
def test_3_1_metadata_that_is_not_an_object_is_32602(peer: Peer, metadata: Any) -> None:
    failure = rpc_error(
        peer, "memory/remember", {"records": [{"content": "x", "metadata": metadata}]}
    )
    assert failure.code == -32602


@pytest.mark.spec("3.1")
def test_3_1_core_fields_round_trip(peer: Peer) -> None:
    tag = uid("tag")
    content = 'line one\nline two — ünïcödé 🧠 \u2028 "quoted" \\ back'
    (record_id,) = peer.remember(
        {"content": content, "role": "critic", "group": uid("group"), "metadata": {"tag": tag}}
    )
    (record,) = peer.timeline(where={"tag": tag})
    assert record["id"] == record_id
    assert record["content"] == content
    assert record["role"] == "critic"  # any role value is allowed (advisory)
    assert record["group"].startswith("group-")


@pytest.mark.spec("3.1")
def test_3_1_a_record_without_optional_fields_is_valid(peer: Peer) -> None:
    (record_id,) = peer.remember({"content": "only content " + uid()})
    records = peer.timeline(where={"id": record_id})
    assert [r["id"] for r in records] == [record_id]


# --- §4.2 remember ----------------------------------------------------------------------------


@pytest.mark.spec("4.2")
def test_4_2_ids_one_per_record_in_input_order(peer: Peer) -> None:
    tag = uid("tag")
    given = [uid("id") for _ in range(3)]
    records = [
        {"content": "first", "id": given[0], "metadata": {"tag": tag}},
        {"content": "no id", "metadata": {"tag": tag}},
        {"content": "second", "id": given[1], "metadata": {"tag": tag}},
        {"content": "third", "id": given[2], "metadata": {"tag": tag}},
    ]
    ids = peer.remember(*records)
    assert [ids[0], ids[2], ids[3]] == given
    stored = {r["id"]: r["content"] for r in peer.timeline(where={"tag": tag})}
    assert stored == {ids[i]: records[i]["content"] for i in range(4)}


@pytest.mark.spec("4.2")
@pytest.mark.parametrize(
    "params",
    [{}, {"records": []}, {"records": "x"}, {"records": [{}]}, {"records": [{"role": "user"}]}],
    ids=["missing", "empty", "not-a-list", "no-content", "no-content-role"],
)
def test_4_2_records_each_carrying_content_are_required(peer: Peer, params: dict[str, Any]) -> None:
    assert rpc_error(peer, "memory/remember", params).code == -32602


# --- §3.2 identifiers --------------------------------------------------------------------------


@pytest.mark.spec("3.2")
def test_3_2_a_client_id_makes_the_write_idempotent(peer: Peer) -> None:
    """§3.2: a second write with an existing id MUST NOT create a record and MUST return
    the existing id."""
    tag = uid("tag")
    client_id = uid("client")
    first = peer.remember({"id": client_id, "content": "original", "metadata": {"tag": tag}})
    again = peer.remember({"id": client_id, "content": "original", "metadata": {"tag": tag}})
    changed = peer.remember(
        {"id": client_id, "content": "a retry that differs", "metadata": {"tag": tag}}
    )
    assert first == again == changed == [client_id]
    (record,) = peer.timeline(where={"tag": tag})
    assert record["id"] == client_id
    assert record["content"] == "original"


@pytest.mark.spec("3.2")
def test_3_2_the_same_client_id_twice_in_one_batch_is_one_record(peer: Peer) -> None:
    tag = uid("tag")
    client_id = uid("client")
    ids = peer.remember(
        {"id": client_id, "content": "once", "metadata": {"tag": tag}},
        {"id": client_id, "content": "twice", "metadata": {"tag": tag}},
    )
    assert ids == [client_id, client_id]
    assert timeline_ids(peer, tag=tag) == [client_id]


@pytest.mark.spec("3.2")
def test_3_2_server_assigned_ids_are_unique(peer: Peer) -> None:
    tag = uid("tag")
    session = uid("session")  # a session of its own keeps the working tier uncrowded
    ids: list[str] = []
    for _ in range(3):
        ids += peer.remember(
            *({"content": "same content", "metadata": {"tag": tag}} for _ in range(50)),
            session=session,
        )
    assert all(isinstance(i, str) and i for i in ids)
    assert len(set(ids)) == 150
    assert sorted(timeline_ids(peer, tag=tag)) == sorted(ids)


@pytest.mark.spec("3.2")
@pytest.mark.parametrize("bad_id", ["", 5, None, ["x"]], ids=["empty", "number", "null", "list"])
def test_3_2_an_id_must_be_a_non_empty_string(peer: Peer, bad_id: Any) -> None:
    if bad_id is None:
        # null is "not supplied": the server assigns one.
        (record_id,) = peer.remember({"content": "null id", "id": None})
        assert record_id
        return
    failure = rpc_error(peer, "memory/remember", {"records": [{"content": "x", "id": bad_id}]})
    assert failure.code == -32602


# --- §3.3 timestamps ---------------------------------------------------------------------------


def _parse(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)


@pytest.mark.spec("3.3")
def test_3_3_timestamps_are_rfc3339_utc_with_milliseconds(peer: Peer) -> None:
    tag = uid("tag")
    session = uid("session")
    before = datetime.now(timezone.utc) - timedelta(seconds=5)
    cursor = peer.events_head()
    peer.remember({"content": "when was this", "metadata": {"tag": tag}}, session=session)
    (recalled,) = peer.recall(query="when was this", where={"tag": tag})
    (record,) = peer.timeline(where={"tag": tag})
    after = datetime.now(timezone.utc) + timedelta(seconds=5)
    events, _ = peer.events_since(cursor)
    sessions = [s for s in peer.call("memory/session/list")["sessions"] if s["session"] == session]
    stamps = [
        record["created_at"],
        record["accessed_at"],
        recalled["created_at"],
        *(event["at"] for event in events),
        sessions[0]["opened_at"],
        sessions[0]["touched_at"],
    ]
    for stamp in stamps:
        assert isinstance(stamp, str)
        assert TIMESTAMP_MS.match(stamp), stamp
        assert before <= _parse(stamp) <= after, stamp
    assert record["accessed_at"] >= record["created_at"]


# --- §3.8 external records ---------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback port nobody should ever connect to."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    try:
        yield sock
    finally:
        sock.close()


@pytest.mark.spec("3.8")
def test_3_8_uri_and_media_type_round_trip_unchanged(peer: Peer) -> None:
    tag = uid("tag")
    key = f"{uid('ext')}/doc"
    cases = [
        ("s3://bucket/path/to/object.png?versionId=3&x=%20#frag", "image/png"),
        ("file:///home/me/Documents/Report%20Q3.pdf", "application/pdf"),
        ("../relative/path/model.gltf", "model/gltf+json; charset=utf-8"),
        ("urn:isbn:0451450523", None),
        (None, None),
    ]
    records = [
        {
            "content": f"external {i}",
            "uri": uri,
            "media_type": media,
            "metadata": {"tag": tag, "i": i},
        }
        for i, (uri, media) in enumerate(cases)
    ]
    records[0]["key"] = key
    peer.remember(*records)
    stored = sorted(peer.timeline(where={"tag": tag}), key=lambda r: r["metadata"]["i"])
    for record, (uri, media) in zip(stored, cases, strict=True):
        assert record.get("uri") == uri
        assert record.get("media_type") == media
    fetched = peer.call("memory/fetch", {"key": key})["record"]
    assert (fetched["uri"], fetched["media_type"]) == cases[0]


@pytest.mark.spec("3.8")
def test_3_8_a_record_with_a_uri_and_no_content_is_legal(peer: Peer) -> None:
    key = f"{uid('ext')}/blob"
    (record_id,) = peer.remember(
        {"content": "", "uri": "https://example.invalid/b.bin", "key": key}
    )
    record = peer.call("memory/fetch", {"key": key})["record"]
    assert record["id"] == record_id
    assert record["content"] == ""


@pytest.mark.spec("3.8")
def test_3_8_the_uri_is_never_dereferenced(peer: Peer, listener: socket.socket) -> None:
    """§3.8: MUST NOT dereference the uri, not on write, not on recall, not in the
    background. A loopback listener sees no connection while the record is written,
    recalled, fetched, summarized and consolidated."""
    host, port = listener.getsockname()
    tag = uid("tag")
    key = f"{uid('ext')}/trap"
    uri = f"http://{host}:{port}/secret.png"
    peer.remember(
        {
            "content": "a picture of a lighthouse",
            "uri": uri,
            "media_type": "image/png",
            "key": key,
            "metadata": {"tag": tag},
        }
    )
    peer.recall(query="lighthouse picture", where={"tag": tag}, prompt={"cite": True})
    peer.timeline(where={"tag": tag}, embeddings=True)
    peer.call("memory/fetch", {"key": key})
    peer.call("memory/summarize", {"where": {"tag": tag}})
    # Background work, if any, has had every chance; a short wait for a late connection.
    readable, _, _ = select.select([listener], [], [], 0.3)
    assert readable == [], "§3.8: the server connected to a record's uri"


@pytest.mark.spec("3.8")
def test_3_8_a_uri_is_found_by_its_content_and_returned(peer: Peer) -> None:
    tag = uid("tag")
    uri = "https://cdn.example.invalid/audio/standup.mp3"
    peer.remember(
        {
            "content": "transcript: the standup moved to ten",
            "uri": uri,
            "media_type": "audio/mpeg",
            "metadata": {"tag": tag},
        }
    )
    (record,) = peer.recall(query="standup moved", where={"tag": tag})
    assert record["uri"] == uri
    assert record["media_type"] == "audio/mpeg"
