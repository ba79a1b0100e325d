"""JSON text for what a store keeps (metadata, event payloads, lists of ids), fast where a
faster encoder writes the same values.

Each write dumps a record's metadata and its event's payload, and the standard library's
encoder costs a few microseconds per small object, more than orjson by several times.
orjson is used, when installed, only where its text reads back as the standard library's
value: anything it refuses (a type JSON lacks, an integer past 64 bits, a lone surrogate),
and any text holding ``null`` (orjson writes NaN and infinity as ``null``, the standard
library refuses them), is dumped by the standard library, whose text and errors decide."""

from __future__ import annotations

import json
from typing import Any

try:  # optional, as in the client
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised where orjson is absent
    _orjson = None  # type: ignore[assignment]

__all__ = ["dump_json"]

# One encoder for every dump: ``json.dumps`` with options builds a new one per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
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


def dump_json(value: Any) -> str:
    """``value`` as compact JSON text (UTF-8 characters unescaped); raises ``ValueError``
    for NaN or infinity and ``TypeError`` for what JSON cannot hold, as
    ``json.dumps(value, allow_nan=False)`` does."""
    if _orjson is not None:
        try:
            raw = _orjson.dumps(value, default=_refuse_type, option=_PASSTHROUGH)
        except TypeError:
            pass
        else:
            if b"null" not in raw:
                return raw.decode("utf-8")
    return _ENCODER.encode(value)
