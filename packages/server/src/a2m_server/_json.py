"""Strict JSON parsing of request bodies and writing of responses, fast where orjson gives
the same value.

A ``memory/remember`` of vectors is mostly numbers, and the standard library parses them
several times slower than orjson. orjson is used, when installed, only where its value is
the standard library's: anything it refuses (NaN, 1e400, a lone surrogate, deep nesting)
and any number at or beyond 2**63 in size (orjson reads an integer past 64 bits as a
float) are parsed again by the standard library, whose values and errors are the
contract. A response is written by orjson only when it is made of plain JSON types and
holds no NaN or infinity (which orjson would write as ``null``, where the standard library
refuses them); anything else by the standard library."""

from __future__ import annotations

import json
import math
from typing import Any

from a2m_types.plain_json import fast_dumps, orjson_matches_stdlib

try:  # optional, as in the client
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised where orjson is absent
    _orjson = None  # type: ignore[assignment]

__all__ = ["dumps", "loads"]

# No float of this size is a vector component; an integer this size may have been rounded.
_BIG = 9.2e18


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _holds_big_number(value: Any) -> bool:
    kind = type(value)
    if kind is not dict and kind is not list:
        return (kind is float or kind is int) and abs(value) >= _BIG
    pending = [value]
    pop, push = pending.pop, pending.append
    while pending:
        item = pop()
        if type(item) is dict:
            items = item.values()
        else:
            try:  # a vector: one C-speed pass, no Python step per number
                # Every |x| is at most the Euclidean norm, so a norm under _BIG clears
                # the list; only a larger one needs the exact look at its extremes.
                if math.hypot(*item) < _BIG:
                    continue
                if max(item) >= _BIG or min(item) <= -_BIG:
                    return True
                continue
            except (TypeError, OverflowError):  # not all numbers, or an int past floats
                items = item
        # Scalars are settled here, without a trip through the stack each: most of a
        # record is strings.
        for entry in items:
            kind = type(entry)
            if kind is str or entry is None or kind is bool:
                continue
            if kind is float or kind is int:
                if abs(entry) >= _BIG:
                    return True
            else:
                push(entry)  # only dicts and lists come out of a parser
    return False


def loads(raw: str | bytes) -> Any:
    """Parse one JSON text strictly (no NaN or Infinity); raises ``ValueError`` (or
    ``RecursionError``) exactly as :func:`json.loads` would."""
    if _orjson is not None:
        try:
            value = _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass  # the standard library decides, with its own message
        else:
            if not _holds_big_number(value):
                return value
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).decode("utf-8")
    return json.loads(raw, parse_constant=_reject_constant)


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> str:
    """``value`` as one line of compact JSON (UTF-8 characters unescaped); raises
    ``ValueError`` for NaN or infinity and ``TypeError`` for what JSON cannot hold, as
    ``json.dumps(value, allow_nan=False)`` does."""
    if orjson_matches_stdlib(value):
        raw = fast_dumps(value)
        if raw is not None:
            return raw.decode()
    return _ENCODER.encode(value)
