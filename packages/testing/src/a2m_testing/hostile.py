"""Values a framework's Python API accepts but JSON cannot carry exactly: an adapter handed
one must refuse it with a clear error before writing anything, never store a rewritten
copy (NaN as null, a set as a list) or fail with a bare ``TypeError`` or
``RecursionError``. Adapter test suites parametrise over :data:`HOSTILE_VALUES`."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["HOSTILE_VALUES", "nested"]


def nested(levels: int) -> dict[str, Any]:
    """``{"a": {"a": … {}}}``, ``levels`` objects deep: past any depth a store carries."""
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"a": value}
    return value


HOSTILE_VALUES: dict[str, Any] = {
    "nan": math.nan,
    "infinity": -math.inf,
    "set": {1, 2},
    "bytes": b"\x00\x01",
    "tuple": (1, 2),
    "int key": {1: "one"},
    "lone surrogate": "\ud800",
    "ten thousand levels": nested(10_000),
    "object": object(),
}
"""Each by a label naming what is wrong with it, for test ids."""
