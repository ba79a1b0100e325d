"""The one mapping between a REST entry and an A2M record (``a2m_types.rest``), as pure
functions: namespaces and keys, the A2M key, reading a record back as an entry, and the
error table."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from a2m_types import (
    KEY_PATTERN,
    NAMESPACE_PATTERN,
    REST_ERROR_STATUS,
    EntryWrite,
    InvalidKey,
    InvalidNamespace,
    Record,
    a2m_code_for,
    entry_to_record_input,
    entry_type,
    key_matches,
    readable_text,
    record_key,
    record_to_entry,
    rest_error_for,
    split_record_key,
    ttl_seconds,
    validate_key,
    validate_namespace,
)

KINDS = {
    "working": "working",
    "episodic": "episodic",
    "semantic": "semantic",
    "procedural": "procedural",
}
NOW = datetime(2026, 7, 28, 10, 15, 30, 123000, tzinfo=timezone.utc)


def _write(**fields: Any) -> EntryWrite:
    return EntryWrite.model_validate({"key": "k", "type": "semantic", "value": "v", **fields})


def _record(stored: dict[str, Any], tier: str | None = None, **extra: Any) -> Record:
    return Record.model_validate(
        {**stored, "id": "r1", "created_at": "2026-07-28T10:15:30.123Z", "tier": tier, **extra}
    )


@pytest.mark.parametrize("namespace", ["a", "numel/wf-42/sess-abc/agent-0", "a_b/c-d/0", "x" * 256])
def test_valid_namespaces(namespace: str) -> None:
    assert validate_namespace(namespace) == namespace
    assert re.match(NAMESPACE_PATTERN, namespace)


@pytest.mark.parametrize(
    "namespace",
    [
        "",
        "A",
        "a/",
        "/a",
        "a//b",
        "a b",
        "a.b",
        "a:b",
        "é",
        "a/entries",
        "query",
        "x/subscribe/y",
        "x" * 257,
    ],
)
def test_invalid_namespaces(namespace: str) -> None:
    with pytest.raises(InvalidNamespace):
        validate_namespace(namespace)
    if len(namespace) <= 256:
        assert not re.match(NAMESPACE_PATTERN, namespace)


@pytest.mark.parametrize("key", ["k", "user/goal", "a b/c?d#e%f", "ü/😀", "k" * 512, "a/.b/c.."])
def test_valid_keys(key: str) -> None:
    assert validate_key(key) == key
    assert re.match(KEY_PATTERN, key)


@pytest.mark.parametrize(
    "key", ["", "/a", "a/", "a//b", ".", "a/./b", "..", "a/..", "a\nb", "\x7f", "k" * 513]
)
def test_invalid_keys(key: str) -> None:
    with pytest.raises(InvalidKey):
        validate_key(key)
    if len(key) <= 512:
        assert not re.match(KEY_PATTERN, key)


@given(st.from_regex(NAMESPACE_PATTERN, fullmatch=True).filter(lambda n: len(n) <= 256))
def test_the_namespace_pattern_admits_only_valid_namespaces(namespace: str) -> None:
    validate_namespace(namespace)


@given(st.from_regex(KEY_PATTERN, fullmatch=True).filter(lambda k: len(k) <= 512))
def test_the_key_pattern_admits_only_valid_keys(key: str) -> None:
    validate_key(key)


def test_the_a2m_key_and_back() -> None:
    assert record_key("app/wf", "user/goal") == "app/wf/user/goal"
    assert split_record_key("app/wf/user/goal", {"namespace": "app/wf"}) == ("app/wf", "user/goal")
    # Without a stated namespace: the caller's hint when the key lies beneath it, else
    # everything before the last "/".
    assert split_record_key("app/wf/user/goal", None, "app") == ("app", "wf/user/goal")
    assert split_record_key("app/wf/user/goal", {}, "other") == ("app/wf/user", "goal")
    assert split_record_key("app/wf/user/goal", {"namespace": "app/wf"}, "app") == (
        "app/wf",
        "user/goal",
    )
    # A stated namespace the key does not lie beneath is ignored.
    assert split_record_key("a/b", {"namespace": "zzz"}) == ("a", "b")
    assert split_record_key("flat", None) is None
    assert split_record_key("a/", None) is None


@pytest.mark.parametrize(
    ("pattern", "key", "matches"),
    [
        (None, "any/thing", True),
        ("user/*", "user/goal", True),
        ("user/*", "user/goal/city", False),
        ("user/*", "users/goal", False),
        ("*", "k", True),
        ("*", "a/b", False),
        ("*/city", "user/city", True),
        ("go?l", "goal", True),
        ("g*", "goal", True),
    ],
)
def test_subscription_globs_stay_within_segments(
    pattern: str | None, key: str, matches: bool
) -> None:
    assert key_matches(pattern, key) is matches


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain", "plain"),
        ({"a": [1, "é"]}, '{"a":[1,"é"]}'),
        ([1, 2], "[1,2]"),
        (None, "null"),
        (True, "true"),
    ],
)
def test_readable_text(value: Any, text: str) -> None:
    assert readable_text(value) == text


def test_an_entry_write_becomes_a_record() -> None:
    write = _write(
        key="user/goal",
        value={"goal": "x"},
        embedding=[0.5, 1],
        meta={
            "tags": ["a"],
            "confidence": 0.9,
            "ttl_s": 60,
            "source_agent": "p",
            "x": None,
            "value": 1,
        },
    )
    record = entry_to_record_input(write, "app/wf", tier_for_kind=KINDS)
    assert record.to_wire() == {
        "content": '{"goal":"x"}',
        "key": "app/wf/user/goal",
        "metadata": {
            "source_agent": "p",
            "ttl_s": 60,
            "tags": ["a"],
            "confidence": 0.9,
            "x": None,
            "namespace": "app/wf",
            "type": "semantic",
            "value": {"goal": "x"},
        },
        "tier": "semantic",
        "salience": 0.9,
        "embedding": [0.5, 1.0],
    }
    assert ttl_seconds(write) == 60


def test_external_entries_map_to_uri_and_content() -> None:
    plain = entry_to_record_input(
        _write(type="external", value="s3://b/k"), "ns", tier_for_kind=KINDS
    )
    assert (plain.uri, plain.content, plain.tier) == ("s3://b/k", "s3://b/k", "semantic")
    rich = entry_to_record_input(
        _write(type="external", value={"uri": "u", "title": "T", "text": "body"}), "ns"
    )
    assert (rich.uri, rich.content, rich.tier) == ("u", "T\nbody", None)
    with pytest.raises(ValidationError):
        _write(type="external", value={"title": "no uri"})


def test_a_record_reads_back_as_the_entry_that_was_written() -> None:
    write = _write(value=[1, 2], meta={"tags": ["t"], "confidence": 0.25})
    stored = entry_to_record_input(write, "app", tier_for_kind=KINDS).to_wire()
    entry = record_to_entry(
        _record(stored, "semantic", salience=0.25), kind_of_tier=KINDS, updated_at=NOW
    )
    assert entry is not None
    assert entry.to_wire() == {
        "id": "r1",
        "key": "k",
        "namespace": "app",
        "type": "semantic",
        "value": [1, 2],
        "embedding": None,
        "meta": {
            "source_agent": None,
            "source_framework": None,
            "created_at": "2026-07-28T10:15:30.123Z",
            "updated_at": "2026-07-28T10:15:30.123Z",
            "ttl_s": None,
            "tags": ["t"],
            "confidence": 0.25,
        },
    }


def test_reading_a_record_written_over_json_rpc() -> None:
    record = _record(
        {
            "content": "Rome",
            "key": "app/user/city",
            "metadata": {"tags": 7, "ttl_s": True},
        },
        "episodic",
        salience=0.0,
    )
    entry = record_to_entry(record, kind_of_tier=KINDS)
    assert entry is not None
    assert (entry.namespace, entry.key, entry.type, entry.value) == (
        "app/user",
        "city",
        "episodic",
        "Rome",
    )
    # Fields of the wrong shape read as their defaults; salience 0 says nothing.
    assert (entry.meta.tags, entry.meta.ttl_s, entry.meta.confidence) == ([], None, None)
    assert record_to_entry(_record({"content": "x", "key": "flat"})) is None
    assert record_to_entry(_record({"content": "x"})) is None
    # A lone string is the one tag the tag filter matches in it.
    lone = record_to_entry(_record({"content": "x", "key": "a/b", "metadata": {"tags": "t"}}))
    assert lone is not None
    assert lone.meta.tags == ["t"]


@pytest.mark.parametrize(
    ("tier", "metadata", "extra", "expected"),
    [
        ("working", {"type": "semantic"}, {}, "working"),  # where it lives now
        ("semantic", {}, {"uri": "u"}, "external"),
        (None, {"type": "procedural"}, {}, "procedural"),
        ("attic", {"type": "episodic"}, {}, "episodic"),  # a tier without a kind
        (None, {"type": "external"}, {}, "semantic"),  # only a uri makes an entry external
        (None, {"type": "nonsense"}, {}, "semantic"),
        (None, {}, {}, "semantic"),
    ],
)
def test_the_type_of_a_record(
    tier: str | None, metadata: dict[str, Any], extra: dict[str, Any], expected: str
) -> None:
    record = _record({"content": "x", "key": "a/b", "metadata": metadata, **extra}, tier)
    assert entry_type(record, KINDS) == expected


def test_the_error_table() -> None:
    assert rest_error_for(-32008) == (422, "DIMENSION_MISMATCH")
    assert rest_error_for(-32602) == (400, "INVALID_BODY")
    assert rest_error_for(-32601) == (404, "UNKNOWN_METHOD")
    assert rest_error_for(-32003) == (501, "CAPABILITY_NOT_SUPPORTED")
    assert rest_error_for(-1) == (500, "BACKEND_ERROR")
    assert a2m_code_for("DIMENSION_MISMATCH") == -32008
    assert a2m_code_for("INVALID_BODY") == -32602
    assert a2m_code_for("ENTRY_NOT_FOUND") is None
    assert all(400 <= status < 600 for status in REST_ERROR_STATUS.values())
