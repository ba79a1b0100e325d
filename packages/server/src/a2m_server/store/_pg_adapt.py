"""Strings as PostgreSQL can hold them: a text value may not contain U+0000, which JSON
(and SQLite) allow. Every string sent is escaped reversibly (U+0000 becomes U+E000
U+E002, and U+E000 itself U+E000 U+E001), and every text read back unescaped, so a
record holding either character round-trips exactly. The substitution works character
by character, so equality, prefixes and key ranges keep their meaning."""

from __future__ import annotations

from typing import Any

from psycopg.types.string import StrDumperUnknown, TextLoader

__all__ = ["configure", "escape", "unescape"]

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


def configure(conn: Any) -> None:
    """Install the escaping on one connection (every pool connection gets it)."""
    conn.adapters.register_dumper(str, _EscapingDumper)
    for name in ("text", "varchar"):
        conn.adapters.register_loader(name, _UnescapingLoader)
