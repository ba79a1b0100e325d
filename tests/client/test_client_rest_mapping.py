"""The client's direction of the one entry-record mapping (``a2m_types.rest``): a record
written to the draft's routes becomes an entry write, an entry read from them becomes a
record, and both undo what the server's direction does."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2m_types import RecordInput
from a2m_types.rest import (
    Entry,
    EntryMeta,
    EntryMetaWrite,
    EntryWrite,
    InvalidKey,
    InvalidNamespace,
    entry_to_record,
    entry_to_record_input,
    record_input_to_entry_write,
    record_to_entry,
)

CREATED = datetime(2026, 7, 28, 10, 15, 30, 123000, tzinfo=timezone.utc)
UPDATED = datetime(2026, 7, 29, 8, 0, 0, 0, tzinfo=timezone.utc)


def record(**fields: Any) -> RecordInput:
    return RecordInput.model_validate({"content": "x", **fields})


# --- records to entry writes ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "hint", "address"),
    [
        ({"key": "app/wf-42/user/city"}, "app/wf-42", ("app/wf-42", "user/city")),
        ({"key": "app/wf-42/user/city"}, None, ("app/wf-42/user", "city")),
        ({"key": "other/ns/city"}, "app/wf-42", ("other/ns", "city")),
        (
            {"key": "app/wf-42/user/city", "metadata": {"namespace": "app"}},
            "app/wf-42",
            ("app", "wf-42/user/city"),
        ),
        ({"id": "rec-1"}, "app/wf-42", ("app/wf-42", "rec-1")),
    ],
    ids=["under-the-hint", "last-slash", "outside-the-hint", "stated-namespace", "keyless"],
)
def test_the_address_follows_the_mapping(
    fields: dict[str, Any], hint: str | None, address: tuple[str, str]
) -> None:
    namespace, write = record_input_to_entry_write(record(**fields), hint)
    assert (namespace, write.key) == address


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"key": "city"}, InvalidKey),
        ({}, InvalidKey),  # neither key nor id
        ({"key": "App/city"}, InvalidNamespace),
        ({"key": "app/a/../b", "metadata": {"namespace": "app"}}, InvalidKey),
        ({"key": "app/x", "metadata": {"tags": "geo"}}, ValueError),
        ({"key": "app/x", "metadata": {"ttl_s": -1}}, ValueError),
    ],
    ids=["no-namespace", "no-key-no-id", "bad-namespace", "dot-segment", "tags", "ttl"],
)
def test_what_cannot_be_an_entry_is_a_value_error(
    fields: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        record_input_to_entry_write(record(**fields), "app")


@pytest.mark.parametrize(
    ("fields", "kinds", "expected"),
    [
        ({"uri": "file:///a.png"}, None, "external"),
        ({"tier": "facts"}, {"facts": "procedural"}, "procedural"),
        ({"metadata": {"type": "episodic"}}, None, "episodic"),
        ({"metadata": {"type": "external"}}, None, "semantic"),  # only a uri makes one
        ({"metadata": {"type": "nonsense"}}, None, "semantic"),
        ({}, None, "semantic"),
    ],
)
def test_the_type_follows_the_reading_rule(
    fields: dict[str, Any], kinds: dict[str, str] | None, expected: str
) -> None:
    _, write = record_input_to_entry_write(record(key="app/k", **fields), kind_of_tier=kinds)
    assert write.type == expected


def test_the_value_is_the_structured_one_when_there_is_one() -> None:
    _, plain = record_input_to_entry_write(record(key="app/k", content="Paris"))
    assert plain.value == "Paris"
    _, structured = record_input_to_entry_write(
        record(key="app/k", content="a summary", metadata={"value": [1, 2]})
    )
    assert structured.value == [1, 2]
    _, bare = record_input_to_entry_write(record(key="app/k", content="", uri="s3://b/k"))
    assert bare.value == "s3://b/k"
    _, described = record_input_to_entry_write(
        record(key="app/k", content="the q3 report", uri="s3://b/k")
    )
    assert described.value == {"uri": "s3://b/k", "text": "the q3 report"}


def test_meta_is_metadata_without_the_reserved_keys_and_salience_is_confidence() -> None:
    _, write = record_input_to_entry_write(
        record(
            key="app/k",
            salience=0.4,
            metadata={"namespace": "app", "type": "semantic", "tags": ["a"], "note": None},
        )
    )
    assert write.meta is not None
    assert write.meta.model_dump(exclude_unset=True) == {
        "tags": ["a"],
        "note": None,
        "confidence": 0.4,
    }
    _, stated = record_input_to_entry_write(
        record(key="app/k", salience=0.4, metadata={"confidence": 0.9})
    )
    assert stated.meta is not None
    assert stated.meta.confidence == 0.9  # what metadata states wins
    for salience in (0.0, 3.5):  # the default, and no confidence at all
        _, none = record_input_to_entry_write(record(key="app/k", salience=salience))
        assert none.meta is None


# --- the round trips -----------------------------------------------------------------------

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
META = st.fixed_dictionaries(
    {},
    optional={
        "source_agent": st.text(min_size=1, max_size=10),
        "source_framework": st.sampled_from(["langchain", "n8n", "crewai"]),
        "ttl_s": st.integers(1, 10**6),
        "tags": st.lists(st.text(min_size=1, max_size=8), max_size=3),
        "confidence": st.floats(0.01, 1.0),
        "custom": JSON,
    },
)


@given(
    namespace=st.sampled_from(["app", "app/wf-42", "numel/wf-42/sess-abc/agent-0"]),
    key=st.sampled_from(["city", "user/goal", "events/1712345678901", "ünïcode key"]),
    type_=st.sampled_from(["working", "episodic", "semantic", "procedural"]),
    value=JSON,
    embedding=st.none() | st.lists(st.floats(-1, 1, width=32), min_size=1, max_size=4),
    meta=st.none() | META,
)
def test_an_entry_write_survives_the_round_trip_through_a_record(
    namespace: str, key: str, type_: str, value: Any, embedding: Any, meta: Any
) -> None:
    write = EntryWrite.model_validate(
        {
            "key": key,
            "type": type_,
            "value": value,
            "embedding": embedding,
            "meta": None if meta is None else EntryMetaWrite.model_validate(meta),
        }
    )
    as_record = entry_to_record_input(write, namespace)
    back_namespace, back = record_input_to_entry_write(as_record)
    assert back_namespace == namespace
    assert back.model_dump(exclude_unset=True) == write.model_dump(exclude_unset=True) or (
        meta == {} and back.meta is None  # an empty meta says nothing
    )


@pytest.mark.parametrize(
    "value", ["file:///tmp/cat.png", {"uri": "https://x.test/r", "title": "R", "text": "body"}]
)
def test_an_external_entry_survives_the_round_trip(value: Any) -> None:
    write = EntryWrite(key="doc", type="external", value=value)
    namespace, back = record_input_to_entry_write(entry_to_record_input(write, "app"))
    assert (namespace, back.type, back.value) == ("app", "external", value)


def test_an_entry_reads_back_as_the_record_the_server_would_hold() -> None:
    entry = Entry(
        id="e-1",
        key="user/goal",
        namespace="app/wf-42",
        type="procedural",
        value={"steps": 3},
        embedding=[0.5, 0.25],
        meta=EntryMeta(
            source_agent="a1", tags=["x"], confidence=0.8, created_at=CREATED, updated_at=UPDATED
        ),
    )
    record = entry_to_record(entry, score=0.7)
    assert record.to_wire() == {
        "id": "e-1",
        "content": '{"steps":3}',
        "created_at": "2026-07-28T10:15:30.123Z",
        "metadata": {
            "source_agent": "a1",
            "tags": ["x"],
            "confidence": 0.8,
            "namespace": "app/wf-42",
            "type": "procedural",
            "value": {"steps": 3},
        },
        "salience": 0.8,
        "key": "app/wf-42/user/goal",
        "embedding": [0.5, 0.25],
        "score": 0.7,
        "updated_at": "2026-07-29T08:00:00.000Z",
    }
    # ... and that record reads as the same entry, by the server's own rule.
    assert record_to_entry(record, namespace_hint="app/wf-42", updated_at=UPDATED) == entry


def test_defaults_add_nothing_and_a_missing_timestamp_is_refused() -> None:
    bare = Entry(
        id="e-2",
        key="k",
        namespace="app",
        type="semantic",
        value="v",
        meta=EntryMeta(created_at=CREATED, updated_at=CREATED),
    )
    assert entry_to_record(bare).to_wire() == {
        "id": "e-2",
        "content": "v",
        "created_at": "2026-07-28T10:15:30.123Z",
        "metadata": {"namespace": "app", "type": "semantic"},
        "key": "app/k",
    }
    with pytest.raises(ValueError, match="created_at"):
        entry_to_record(bare.model_copy(update={"meta": EntryMeta()}))
