"""The shared wire models: timestamps, unknown fields, strict params, events, the method
table, and agreement with the spec's JSON Schema."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import jsonschema
import pytest
from pydantic import TypeAdapter, ValidationError

import a2m_types
from a2m_types import (
    METHODS,
    DescribeResult,
    Event,
    Params,
    PromptOptions,
    RecallParams,
    Record,
    RecordInput,
    RememberParams,
    UnknownEvent,
    WrittenEvent,
    field_capabilities,
    format_timestamp,
    is_compatible,
    json_schema,
    new_id,
    parse_timestamp,
)


def test_public_names_are_pinned() -> None:
    assert a2m_types.__all__ == sorted(a2m_types.__all__, key=lambda n: (not n.isupper(), n))
    for name in a2m_types.__all__:
        assert hasattr(a2m_types, name), name


@pytest.mark.spec("3.3")
def test_timestamps_travel_as_utc_with_milliseconds() -> None:
    moment = datetime(2026, 7, 28, 12, 15, 30, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert format_timestamp(moment) == "2026-07-28T10:15:30.123Z"
    assert parse_timestamp("2026-07-28T10:15:30.123Z") == datetime(
        2026, 7, 28, 10, 15, 30, 123000, tzinfo=timezone.utc
    )
    record = Record.model_validate(
        {"id": "a", "content": "x", "created_at": "2026-07-28T10:15:30.123Z"}
    )
    assert record.created_at.tzinfo is not None
    assert record.to_wire()["created_at"] == "2026-07-28T10:15:30.123Z"


@pytest.mark.spec("3.3")
@pytest.mark.parametrize("value", [1785233730, 1785233730.5, "2026-07-28T10:15:30"])
def test_numeric_epochs_and_zoneless_strings_are_refused(value: object) -> None:
    with pytest.raises(ValidationError):
        Record.model_validate({"id": "a", "content": "x", "created_at": value})


@pytest.mark.spec("2")
def test_results_keep_fields_they_do_not_know() -> None:
    record = Record.model_validate(
        {"id": "a", "content": "x", "created_at": "2026-07-28T10:15:30.123Z", "mood": "calm"}
    )
    assert record.to_wire()["mood"] == "calm"
    described = DescribeResult.model_validate(
        {"protocol": "a2m/0.2", "name": "n", "capabilities": ["core", "telepathy"], "methods": []}
    )
    assert "telepathy" in described.capabilities


@pytest.mark.spec("2")
def test_params_ignore_unknown_names_but_refuse_wrong_types() -> None:
    params = RecallParams.model_validate({"query": "q", "from_the_future": True})
    assert params.to_wire() == {"query": "q"}
    with pytest.raises(ValidationError) as caught:
        RecallParams.model_validate({"limit": "5"})
    assert caught.value.errors()[0]["loc"] == ("limit",)


def test_params_send_only_what_was_set_and_keep_explicit_nulls() -> None:
    params = RememberParams(records=[RecordInput(content="x", owner=None)])
    assert params.to_wire() == {"records": [{"content": "x", "owner": None}]}


def test_metadata_round_trips_nulls_and_nesting_unchanged() -> None:
    metadata: dict[str, Any] = {"a": None, "b": [1, {"c": None}], "é": "ü"}
    record = Record.model_validate(
        {"id": "a", "content": "x", "created_at": "2026-07-28T10:15:30.123Z", "metadata": metadata}
    )
    assert record.to_wire()["metadata"] == metadata


@pytest.mark.spec("4.12")
def test_known_events_are_typed_and_unknown_kinds_kept() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(Event)
    written = adapter.validate_python({"kind": "written", "at": "2026-07-28T10:15:30Z", "id": "r"})
    assert isinstance(written, WrittenEvent)
    strange = adapter.validate_python(
        {"kind": "reindexed", "at": "2026-07-28T10:15:30Z", "shards": 3}
    )
    assert isinstance(strange, UnknownEvent)
    assert strange.to_wire()["shards"] == 3


def test_capability_fields_are_tagged() -> None:
    assert field_capabilities(RecordInput) == {
        "tier": "tiers",
        "salience": "salience",
        "owner": "scopes",
        "session": "sessions",
        "key": "keys",
        "embedding": "embeddings",
        "uri": "external",
        "media_type": "external",
    }
    assert field_capabilities(RecallParams)["key_prefix"] == "keys"
    assert field_capabilities(PromptOptions) == {}


def test_the_method_table_matches_the_schema() -> None:
    schema = json_schema()
    assert set(METHODS) == set(schema["methods"])
    for name, spec in METHODS.items():
        assert spec.capability == schema["methods"][name]["capability"], name
        assert issubclass(spec.params, Params)


@pytest.mark.spec("9")
@pytest.mark.parametrize(
    ("theirs", "compatible"),
    [("a2m/0.1", True), ("a2m/0.2", False), ("a2m/1.0", False), ("nonsense", False)],
)
def test_zero_versions_need_an_exact_minor_match(theirs: str, compatible: bool) -> None:
    assert is_compatible("a2m/0.1", theirs) is compatible


def test_new_ids_are_unique_and_time_ordered() -> None:
    ids = [new_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)


def test_a_record_dumped_by_the_model_validates_against_the_schema() -> None:
    schema = json_schema()
    record = Record.model_validate(
        {
            "id": new_id(),
            "content": "x",
            "created_at": "2026-07-28T10:15:30.123Z",
            "owner": None,
            "metadata": {"k": 1},
        }
    )
    validator = jsonschema.Draft202012Validator(
        {"$ref": "#/$defs/record", "$defs": schema["$defs"]}
    )
    validator.validate(record.to_wire())
