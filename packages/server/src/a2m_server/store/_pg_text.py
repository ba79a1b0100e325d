"""Text as PostgreSQL's full-text index sees it, made in Python so it matches SQLite's.

SQLite's FTS5 (``unicode61 remove_diacritics 2``) splits on anything that is not a
letter or digit and folds case and accents. PostgreSQL's parser would instead keep
e-mail addresses, paths and hyphenated words whole, and fold by the server's locale;
so the lexemes are made here with the same rules and handed over as a ``tsvector``
literal (positions included, for term frequency), and queries as a ``tsquery``
literal. CJK runs are first split into unigrams and bigrams by :mod:`a2m_server.text`,
exactly as for SQLite, so Chinese, Japanese and Korean are found by any two-character
sequence (or one character) of the stored text."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from a2m_server.text import index_text

__all__ = ["fold", "tsquery", "tsvector"]

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# PostgreSQL's limits: a lexeme under 2 KB, positions up to 16383.
_MAX_LEXEME_BYTES = 2046
_MAX_POSITION = 16383


def fold(token: str) -> str:
    """Case- and accent-folded, as FTS5's ``remove_diacritics 2`` does."""
    decomposed = unicodedata.normalize("NFKD", token.casefold())
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", stripped)


def _lexemes(text: str) -> list[str]:
    out: list[str] = []
    for match in _TOKEN.finditer(text):
        for part in _TOKEN.findall(fold(match.group(0))):
            if len(part.encode("utf-8")) <= _MAX_LEXEME_BYTES:
                out.append(part)
    return out


def tsvector(content: str) -> tuple[str, int]:
    """The ``tsvector`` literal for ``content``, and its length in tokens."""
    positions: dict[str, list[int]] = {}
    tokens = _lexemes(index_text(content))
    for position, lexeme in enumerate(tokens, start=1):
        places = positions.setdefault(lexeme, [])
        if len(places) < 256:
            places.append(min(position, _MAX_POSITION))
    literal = " ".join(
        f"'{lexeme}':{','.join(map(str, places))}" for lexeme, places in positions.items()
    )
    return literal, len(tokens)


def query_lexemes(terms: Sequence[str]) -> list[str]:
    """Each search term as the lexeme the index holds (empty ones dropped)."""
    seen: dict[str, None] = {}
    for term in terms:
        for lexeme in _lexemes(term):
            seen.setdefault(lexeme, None)
    return list(seen)


def tsquery(lexemes: Sequence[str], *, match_all: bool = False) -> str:
    """A ``tsquery`` literal matching any (or every) one of ``lexemes``."""
    joiner = " & " if match_all else " | "
    return joiner.join(f"'{lexeme}'" for lexeme in lexemes)
