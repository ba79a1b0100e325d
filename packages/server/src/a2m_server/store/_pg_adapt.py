"""How values travel to PostgreSQL. Strings as PostgreSQL can hold them: a text value may not contain U+0000, which JSON
(and SQLite) allow. Every string sent is escaped reversibly (U+0000 becomes U+E000
U+E002, and U+E000 itself U+E000 U+E001), and every text read back unescaped, so a
record holding either character round-trips exactly. The substitution works character
by character, so equality, prefixes and key ranges keep their meaning."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg import pq
from psycopg.adapt import Dumper
from psycopg.types.string import StrDumperUnknown, TextLoader

__all__ = ["Float4Vector", "Float8Array", "configure", "escape", "unescape"]

_FLOAT8_OID = 701
_FLOAT8_ARRAY_OID = 1022

_ESCAPE = "\ue000"


def escape(text: str) -> str:
    if "\x00" not in text and _ESCAPE not in text:
        return text
    return text.replace(_ESCAPE, "\ue000\ue001").replace("\x00", "\ue000\ue002")


def unescape(text: str) -> str:
    if _ESCAPE not in text:
        return text
    out: list[str] = []
    chars = iter(text)
    for ch in chars:
        if ch == _ESCAPE:
            follower = next(chars, "")
            out.append("\x00" if follower == "\ue002" else _ESCAPE)
        else:
            out.append(ch)
    return "".join(out)


class _EscapingDumper(StrDumperUnknown):
    def dump(self, obj: str) -> bytes:
        return escape(obj).encode("utf-8")


class _UnescapingLoader(TextLoader):
    def load(self, data: Any) -> str:
        return unescape(bytes(data).decode("utf-8"))


class Float8Array:
    """A flat float64 array sent as ``float8[]`` in binary (``%b``): exact, and built by
    numpy rather than one Python call per number."""

    def __init__(self, values: npt.NDArray[np.float64]) -> None:
        self.values = values


class _Float8ArrayDumper(Dumper):
    format = pq.Format.BINARY
    oid = _FLOAT8_ARRAY_OID

    def dump(self, obj: Float8Array) -> bytes:
        values = obj.values.reshape(-1)
        # PostgreSQL's binary array: dimensions, flags, element type, size and lower
        # bound, then each element as a length and a big-endian double.
        header = struct.pack("!iiIii", 1, 0, _FLOAT8_OID, values.size, 1)
        body = np.empty(values.size, dtype=[("length", ">i4"), ("value", ">f8")])
        body["length"] = 8
        body["value"] = values
        return header + body.tobytes()


class Float4Vector:
    """A pgvector ``vector`` sent in binary (``%b::vector``): float32 as the column holds
    it, without formatting and parsing a decimal text per number."""

    def __init__(self, values: npt.NDArray[np.float32]) -> None:
        self.values = values


class _Float4VectorDumper(Dumper):
    format = pq.Format.BINARY
    # The type is the extension's (its oid differs per database); the cast names it.
    oid = 0

    def dump(self, obj: Float4Vector) -> bytes:
        # pgvector's binary input: the dimensions and a reserved word, then big-endian floats.
        return struct.pack("!hh", obj.values.size, 0) + obj.values.astype(">f4").tobytes()


def configure(conn: Any) -> None:
    """Install the escaping and the array dumper on one connection (every pool
    connection gets them)."""
    conn.adapters.register_dumper(Float8Array, _Float8ArrayDumper)
    conn.adapters.register_dumper(Float4Vector, _Float4VectorDumper)
    conn.adapters.register_dumper(str, _EscapingDumper)
    for name in ("text", "varchar"):
        conn.adapters.register_loader(name, _UnescapingLoader)
