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

try:  # optional, as in the client
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised where orjson is absent
    _orjson = None  # type: ignore[assignment]

__all__ = ["dump_json", "load_json"]

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


# A run of 19 digits is the shortest integer literal that may reach 2**63, past which orjson
# reads an integer as a float (the standard library keeps it exact). The text is mapped to
# "0" for each digit and " " for all else, and searched for such a run, at C speed.
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_LONG_DIGIT_RUN = b"0" * 19


def load_json(text: str) -> Any:
    """The value of JSON text a store kept, as ``json.loads`` reads it: by orjson unless
    an integer in it may pass 64 bits or orjson refuses it (a lone surrogate, written
    escaped by the standard library), which the standard library then reads."""
    if _orjson is not None:
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError:
            raw = None
        if raw is not None and _LONG_DIGIT_RUN not in raw.translate(_DIGITS_AS_ZEROS):
            try:
                return _orjson.loads(raw)
            except _orjson.JSONDecodeError:
                pass
    return json.loads(text)
