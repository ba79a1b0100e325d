"""Request bodies are parsed by orjson where it gives the standard library's value, and by
the standard library otherwise: a number orjson reads as a float past 64 bits, anywhere in
the body (a vector, metadata, a nested list), is parsed again, so its value is exact."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2m_server import _json


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


# Integers either side of where orjson stops reading them exactly, and floats either
# side of the size that makes the parse look closer.
_EDGES = [2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**64 + 7, -(2**63), -(2**63) - 1, 10**30]
_NUMBERS = st.one_of(
    st.integers(),
    st.sampled_from(_EDGES),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([9.2e18, -9.2e18, 9.1e18, 1.8446744073709552e19, 1e300, -0.0]),
)
_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.text(max_size=5), _NUMBERS),
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=4), inner, max_size=5)
    ),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_a_body_parses_to_the_standard_librarys_value(value: Any) -> None:
    text = json.dumps(value)
    assert _same(_json.loads(text.encode()), json.loads(text))
    assert _same(_json.loads(text), json.loads(text))


@pytest.mark.parametrize(
    "text",
    [
        "18446744073709551616",  # a top-level number past 64 bits
        "[0.5, 18446744073709551616, -0.25]",  # in a vector
        '{"records": [{"metadata": {"n": -9223372036854775809}}]}',  # nested in metadata
        '{"a": [[1, 2], [3, 100000000000000000000000000001]]}',  # a list of lists
        '{"a": ["x", 1e19, 2]}',  # a float that size, read as a float by both
        '{"a": 1e400}',  # inf in both
    ],
)
def test_numbers_past_64_bits_are_exact_wherever_they_sit(text: str) -> None:
    assert _same(_json.loads(text.encode()), json.loads(text))


def test_what_orjson_refuses_the_standard_library_decides() -> None:
    assert _json.loads('"\\ud800"') == "\ud800"  # a lone surrogate
    deep = "[" * 2000 + "]" * 2000
    with pytest.raises((ValueError, RecursionError)):
        json.loads(deep)
    with pytest.raises((ValueError, RecursionError)):
        _json.loads(deep)
    for constant in ("NaN", "[Infinity]", '{"a": -Infinity}'):
        with pytest.raises(ValueError, match="is not valid JSON"):
            _json.loads(constant)
