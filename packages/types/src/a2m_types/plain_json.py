"""Which Python values are plain JSON: the one test the client, the server and the
adapters apply before taking a fast path (orjson, or no dump at all) that is only right
for values the standard library would write the same way."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["is_plain_json", "orjson_matches_stdlib"]

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
