"""The params a ``memory/remember`` sends are read off the validated model when its
metadata is plain JSON, and dumped by pydantic otherwise: either way exactly what
``to_wire`` gives, for any metadata JSON carries exactly; anything else (NaN, a tuple, a
datetime) is refused unsent instead of rewritten."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from enum import IntEnum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2m import _core as core
from a2m._types import NOT_GIVEN
from a2m_types import RememberParams
from a2m_types.json_values import JSONValueError, check_json_value
from a2m_types.plain_json import is_plain_json


class _Level(IntEnum):
    HIGH = 2


class _Float(float):
    pass


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
# Values JSON dumping converts rather than leaves as they are: tuples, enums, float
# subclasses, datetimes.
_CONVERTED = st.one_of(
    st.just((1, "a")),
    st.just(_Level.HIGH),
    st.just(_Float(0.5)),
    st.just(datetime(2026, 1, 2, tzinfo=timezone.utc)),
)
_METADATA = st.recursive(
    st.one_of(_SCALARS, _CONVERTED),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


def _sent(metadata: dict[str, Any]) -> dict[str, Any] | None:
    records = [{"content": "x", "id": "r1", "metadata": metadata, "embedding": [0.5, -1.0]}]
    try:
        return core.prepare_remember(records, NOT_GIVEN, NOT_GIVEN).params
    except core.InvalidParams:
        return None


def _to_wire(metadata: dict[str, Any]) -> dict[str, Any] | None:
    try:
        check_json_value(metadata, "metadata")
    except JSONValueError:
        return None  # refused, not rewritten
    records = [{"content": "x", "id": "r1", "metadata": metadata, "embedding": [0.5, -1.0]}]
    try:
        return RememberParams.model_validate({"records": records}).to_wire()
    except ValueError:
        return None


def _same(a: Any, b: Any) -> bool:
    # NaN is never equal to itself; compare it by kind.
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=6), _METADATA, max_size=5))
def test_the_sent_params_are_what_to_wire_gives(metadata: dict[str, Any]) -> None:
    assert _same(_sent(metadata), _to_wire(metadata))


@pytest.mark.parametrize(
    "metadata",
    [
        {"n": 1, "tags": ["a"], "deep": {"x": [1.5, None, True, {"y": "z"}]}},
        {"nan": math.nan},
        {"deep": {"inf": [1.0, math.inf]}},
        {"tuple": (1, 2)},
        {"deep": [{"at": datetime(2026, 1, 2, tzinfo=timezone.utc)}]},
        {"sub": _Float(1.5)},
        {"enum": [_Level.HIGH]},
    ],
)
def test_metadata_of_every_kind_goes_as_to_wire_gives(metadata: dict[str, Any]) -> None:
    assert _same(_sent(metadata), _to_wire(metadata))


def test_only_plain_json_metadata_is_read_off_the_model() -> None:
    """Plain metadata is sent as the very object validated (no dump); anything else JSON
    carries is dumped, so an enum goes as its value; a tuple is refused."""
    plain = {"a": [1, {"b": 2.5}], "c": None}
    sent = _sent(plain)
    assert sent is not None
    assert sent["records"][0]["metadata"] == plain
    converted = _sent({"a": [_Level.HIGH]})
    assert converted is not None
    assert converted["records"][0]["metadata"] == {"a": [2]}
    assert _sent({"a": (1, 2)}) is None
    assert is_plain_json(plain)
    assert not is_plain_json({1: "non-string key"})
    assert not is_plain_json({"a": [[math.inf]]})
    assert not is_plain_json({"a": [_Float(1.0)]})
    assert not is_plain_json({"a": {"b": (1,)}})
