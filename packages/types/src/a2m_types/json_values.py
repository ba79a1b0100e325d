"""What JSON a record may carry, and the one check of it that the client, the server and
the adapters share: a value is refused before it is sent or stored, naming its path, when
JSON cannot carry it exactly or when it nests past :data:`MAX_JSON_DEPTH`."""

from __future__ import annotations

import math
from typing import Any, Final

__all__ = [
    "MAX_JSON_DEPTH",
    "JSONValueError",
    "check_json_value",
    "is_utf8_text",
]

MAX_JSON_DEPTH: Final = 64
"""How many levels of objects and arrays any JSON value of a record (``metadata``, a
structured field) may nest, the outermost counting as 1. Deep enough for any real
document; shallow enough that every reader, in any language, parses and serialises a
stored record without meeting its own recursion limit."""


class JSONValueError(ValueError):
    """A value JSON cannot carry exactly, or one nested too deep, at ``path``."""

    def __init__(self, path: str, reason: str) -> None:
        # The message shortens a path nested past reading (the full one stays in .path).
        shown = path if len(path) <= 120 else f"{path[:60]}…{path[-40:]}"
        super().__init__(f"{shown} {reason}")
        self.path = path
        self.reason = reason


def _describe(value: Any) -> str:
    kind = type(value)
    if kind is float:
        return (
            f"holds {value!r}, which JSON cannot carry (NaN and infinities are not numbers in JSON)"
        )
    if kind is str:
        return "holds a lone surrogate, which is not text in UTF-8"
    if isinstance(value, (set, frozenset)):
        return "holds a set, which JSON cannot carry: pass a list"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "holds bytes, which JSON cannot carry: decode them to text or base64 first"
    if isinstance(value, tuple):
        return "holds a tuple, which JSON reads back as a list: pass a list"
    return f"holds a {kind.__name__}, which is not a JSON value"


def is_utf8_text(text: str) -> bool:
    """Whether ``text`` is text in UTF-8: it holds no lone surrogate, which JSON's
    ``\\ud800`` escape can spell but UTF-8, and so no store or wire, can carry."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_json_value(value: Any, path: str, *, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise :class:`JSONValueError` naming the first place in ``value`` that JSON cannot
    carry exactly: a non-finite float, a set, bytes, a tuple, a key that is not a string,
    text with a lone surrogate, any other type, or nesting past ``max_depth`` levels.

    Exact ``dict``, ``list``, ``str``, ``int``, ``float``, ``bool`` and ``None`` pass
    (``bool`` and ``int`` subclasses such as enums with a JSON base are left to the
    encoder). Iterative, so a value nested ten thousand levels deep is refused, not a
    ``RecursionError``."""
    pending: list[tuple[Any, str, int]] = [(value, path, 1)]
    pop, push = pending.pop, pending.append
    while pending:
        item, where, depth = pop()
        kind = type(item)
        if kind is dict:
            if depth > max_depth:
                raise JSONValueError(where, f"nests deeper than {max_depth} levels")
            for key, entry in item.items():
                if type(key) is not str:
                    raise JSONValueError(
                        where,
                        f"has the key {key!r} of type {type(key).__name__}: JSON keys are text",
                    )
                if not is_utf8_text(key):
                    raise JSONValueError(
                        where, "has a key with a lone surrogate, which is not text in UTF-8"
                    )
                push((entry, f"{where}.{key}", depth + 1))
        elif kind is list:
            if depth > max_depth:
                raise JSONValueError(where, f"nests deeper than {max_depth} levels")
            for index, entry in enumerate(item):
                push((entry, f"{where}[{index}]", depth + 1))
        elif kind is str:
            if not is_utf8_text(item):
                raise JSONValueError(where, _describe(item))
        elif kind is float:
            if not math.isfinite(item):
                raise JSONValueError(where, _describe(item))
        elif item is None or kind is bool or kind is int:
            continue
        elif isinstance(item, (int, float)) and not isinstance(item, bool):
            # int and float subclasses (IntEnum, numpy scalars registered as numbers) are
            # written by their numeric value; only a non-finite one cannot be.
            if isinstance(item, float) and not math.isfinite(item):
                raise JSONValueError(where, _describe(float(item)))
        elif isinstance(item, str):
            if not is_utf8_text(item):
                raise JSONValueError(where, _describe(str(item)))
        else:
            raise JSONValueError(where, _describe(item))
