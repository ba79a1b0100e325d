"""The response decoder: orjson, where installed, for what it reads as the standard library
does; the standard library for the rest (an integer that may pass 64 bits, NaN, 1e400, a
lone surrogate, deep nesting). Either way the same values and the same refusals."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2m import ResponseValidationError
from a2m.transports._base import decode_message

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**62, max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _same(left: Any, right: Any) -> bool:
    """Equal, and of the same types throughout (1 is not 1.0 here, -0.0 is not 0.0)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return list(left) == list(right) and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(map(_same, left, right))
    if isinstance(left, float):
        return left.hex() == right.hex()
    return bool(left == right)


@given(_JSON)
def test_a_message_reads_as_the_standard_library_reads_it(value: Any) -> None:
    for text in (
        json.dumps({"jsonrpc": "2.0", "id": 1, "result": value}, ensure_ascii=False),
        json.dumps(value, separators=(",", ":")),
    ):
        assert _same(decode_message(text.encode("utf-8")), json.loads(text))
        assert _same(decode_message(text), json.loads(text))


@pytest.mark.parametrize(
    "text",
    [
        '{"n": 18446744073709551616}',  # past 64 bits: orjson would read a float
        '{"n": -9223372036854775809}',
        '{"n": 9223372036854775807, "m": 18446744073709551615}',
        '{"id": "1234567890123456789012", "n": 1}',  # a long run of digits in a string
        '{"x": 1e400}',  # the standard library reads infinity
        '{"s": "\\ud800"}',  # a lone surrogate, escaped
        '{"a": 1, "a": 2}',  # the last of a repeated key
        '{"f": [0.1, 5e-324, 1.7976931348623157e308, -0.0, 1E5, 12345678901234567.0]}',
    ],
)
def test_the_values_the_fast_reader_would_misread_are_the_standard_librarys(text: str) -> None:
    for raw in (text, text.encode(), bytearray(text.encode())):
        assert _same(decode_message(raw), json.loads(text))


@pytest.mark.parametrize(
    "text", ["NaN", '{"x": Infinity}', '{"x": -Infinity}', "[" * 5000 + "]" * 5000, '{"a": 1', ""]
)
def test_what_is_not_json_is_refused(text: str) -> None:
    with pytest.raises(ResponseValidationError, match="not JSON"):
        decode_message(text.encode(), method="memory/timeline")


def test_infinity_from_a_huge_number_is_kept_as_before() -> None:
    assert decode_message(b'{"x": 1e400}') == {"x": math.inf}
