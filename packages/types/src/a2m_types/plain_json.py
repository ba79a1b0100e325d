"""Which Python values are plain JSON, and orjson where it gives the standard library's
JSON: the tests and the fast codec the client, the server and the adapters share before
taking a path (orjson, or no dump at all) that is only right where the standard library
would write or read the same value. Where orjson is not installed every fast call says
so, and the caller uses the standard library."""

from __future__ import annotations

import math
from typing import Any, Final

try:  # optional here; the client and the server declare it
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised where orjson is absent
    _orjson = None  # type: ignore[assignment]
_HAVE_ORJSON = _orjson is not None

__all__ = [
    "NOT_READ",
    "fast_dumps",
    "fast_loads",
    "is_plain_json",
    "orjson_matches_stdlib",
]

_SCALARS = frozenset({str, int, bool, type(None)})


def is_plain_json(value: Any) -> bool:
    """Whether ``value`` is made only of exact JSON types (``dict`` with ``str`` keys,
    ``list``, ``str``, ``int``, finite ``float``, ``bool``, ``None``): what dumping to JSON
    and reading back leaves as it is. Subclasses, tuples and NaN are not plain."""
    kind = type(value)
    if kind is not dict and kind is not list:
        if kind is float:
            return math.isfinite(value)
        return kind in _SCALARS
    pending = [value]
    pop, push = pending.pop, pending.append
    while pending:
        item = pop()
        if type(item) is dict:
            for key in item:
                if type(key) is not str:
                    return False
            items = item.values()
        else:
            items = item
        # Scalars are settled in the loop, without a call each: most of a value is.
        for entry in items:
            kind = type(entry)
            if kind is str or kind is int or entry is None or kind is bool:
                continue
            if kind is float:
                if not math.isfinite(entry):
                    return False
            elif kind is dict or kind is list:
                push(entry)
            else:
                return False
    return True


def orjson_matches_stdlib(value: Any) -> bool:
    """Whether orjson, run with its passthrough options (datetime, dataclass, subclass),
    writes ``value`` as the same JSON value the standard library writes: built of exact
    ``dict`` (``str`` keys), ``list``, ``str``, ``int``, ``bool``, ``None`` and finite
    ``float``. Looser than :func:`is_plain_json` in one place, for speed: a list of numbers
    costs one C-speed ``sum``, and a number of another type in it (a numpy scalar, a
    ``Decimal``, a ``float`` subclass) is left to make orjson raise ``TypeError`` under
    those options, so the caller falls back to the standard library."""
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            # strings, ints and None settled here: most of a record, without a call each
            item_kind = type(item)
            if type(key) is not str or (
                item_kind is not str
                and item_kind is not int
                and item is not None
                and not orjson_matches_stdlib(item)
            ):
                return False
        return True
    if kind is list:
        try:
            total = sum(value)
        except (TypeError, OverflowError):  # not all numbers (or huge ints): look at each
            return all(orjson_matches_stdlib(item) for item in value)
        # ints of any size sum exactly; a float total is finite iff every float was,
        # unless finite floats overflowed, which the close look settles.
        if type(total) is float and not math.isfinite(total):
            return all(orjson_matches_stdlib(item) for item in value)
        return True
    if kind is float:
        return math.isfinite(value)
    return kind in _SCALARS


# What orjson would encode where the standard library refuses (or encodes otherwise):
# handed to ``_refuse_type`` instead, so the standard library decides.
_PASSTHROUGH = (
    0
    if _orjson is None
    else _orjson.OPT_PASSTHROUGH_DATETIME
    | _orjson.OPT_PASSTHROUGH_DATACLASS
    | _orjson.OPT_PASSTHROUGH_SUBCLASS
)


def _refuse_type(value: Any) -> Any:
    raise TypeError(type(value).__name__)


def fast_dumps(value: Any) -> bytes | None:
    """orjson's compact JSON for ``value``, or ``None`` where orjson is not installed or
    refuses it (a type JSON lacks or a subclass, an integer past 64 bits, a lone
    surrogate): the caller then dumps with the standard library. orjson writes NaN and
    infinity as ``null``; a caller that may hold them checks first
    (:func:`orjson_matches_stdlib`) or after (no ``null`` in the text)."""
    if not _HAVE_ORJSON:
        return None
    try:
        return _orjson.dumps(value, default=_refuse_type, option=_PASSTHROUGH)
    except TypeError:
        return None


class _NotRead:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_READ"


NOT_READ: Final = _NotRead()
"""What :func:`fast_loads` returns when the standard library must read the text."""

# A run of 19 digits is the shortest integer literal that may reach 2**63, past which orjson
# reads an integer as a float (the standard library keeps it exact). The text is mapped to
# "0" for each digit and " " for all else, and searched for such a run, at C speed.
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_LONG_DIGIT_RUN = b"0" * 19


def fast_loads(raw: bytes | bytearray | str) -> Any:
    """The value of JSON text as orjson reads it, where that is the standard library's
    value; :data:`NOT_READ` where the standard library must decide: orjson is not
    installed, an integer in the text may pass 64 bits (a run of 19 digits anywhere,
    strings included), or orjson refuses it (NaN, 1e400, a lone surrogate, deep nesting)."""
    if not _HAVE_ORJSON:
        return NOT_READ
    if isinstance(raw, str):
        try:
            raw = raw.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate
            return NOT_READ
    if _LONG_DIGIT_RUN in raw.translate(_DIGITS_AS_ZEROS):
        return NOT_READ
    try:
        return _orjson.loads(raw)
    except _orjson.JSONDecodeError:
        return NOT_READ
