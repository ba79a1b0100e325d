"""JSON text for what a store keeps (metadata, event payloads, lists of ids), fast where a
faster encoder writes (or a faster parser reads) the same values.

Each write dumps a record's metadata and its event's payload, and the standard library's
encoder costs a few microseconds per small object, more than orjson by several times.
orjson is used, when installed, only where its text reads back as the standard library's
value: anything it refuses (a type JSON lacks, an integer past 64 bits, a lone surrogate),
and any text holding ``null`` (orjson writes NaN and infinity as ``null``, the standard
library refuses them), is dumped by the standard library, whose text and errors decide."""

from __future__ import annotations

import json
from typing import Any

from a2m_types.plain_json import NOT_READ, fast_dumps, fast_loads

__all__ = ["dump_json", "load_json"]

# One encoder for every dump: ``json.dumps`` with options builds a new one per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dump_json(value: Any) -> str:
    """``value`` as compact JSON text (UTF-8 characters unescaped); raises ``ValueError``
    for NaN or infinity and ``TypeError`` for what JSON cannot hold, as
    ``json.dumps(value, allow_nan=False)`` does."""
    raw = fast_dumps(value)
    if raw is not None and b"null" not in raw:
        return raw.decode("utf-8")
    return _ENCODER.encode(value)


def load_json(text: str) -> Any:
    """The value of JSON text a store kept, as ``json.loads`` reads it: by orjson unless
    an integer in it may pass 64 bits or orjson refuses it (a lone surrogate, written
    escaped by the standard library), which the standard library then reads."""
    value = fast_loads(text)
    return json.loads(text) if value is NOT_READ else value
