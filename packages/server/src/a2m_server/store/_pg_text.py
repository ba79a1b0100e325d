"""Text as PostgreSQL's full-text index sees it: the terms of the one analyser both
stores share (:mod:`a2m_server.text`: folding, per-script stemming, CJK unigrams and
bigrams), handed over as a ``tsvector`` literal with positions (for term frequency), and
queries as a ``tsquery`` literal. PostgreSQL's own parser and dictionaries are never
used, so results do not depend on the server's locale or text-search configuration,
and a query finds on PostgreSQL exactly what it finds on SQLite."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from a2m_server.text import index_terms

__all__ = ["query_lexemes", "tsquery", "tsvector"]

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# PostgreSQL's limits: a lexeme under 2 KB, positions up to 16383.
_MAX_LEXEME_BYTES = 2046
_MAX_POSITION = 16383


def tsvector(content: str) -> tuple[str, int]:
    """The ``tsvector`` literal for ``content`` (its :func:`~a2m_server.text.index_terms`,
    with positions), and its length in terms."""
    positions: dict[str, list[int]] = {}
    tokens = [_lexeme(term) for term in index_terms(content) if _usable(term)]
    for position, lexeme in enumerate(tokens, start=1):
        places = positions.setdefault(lexeme, [])
        if len(places) < 256:
            places.append(min(position, _MAX_POSITION))
    literal = " ".join(
        f"'{lexeme}':{','.join(map(str, places))}" for lexeme, places in positions.items()
    )
    return literal, len(tokens)


def _usable(term: str) -> bool:
    # Terms are runs of letters and digits; anything else could not be quoted safely.
    return bool(term) and bool(_TOKEN.fullmatch(term))


def _lexeme(term: str) -> str:
    """The lexeme standing for ``term``: itself, or, past PostgreSQL's limit on a lexeme,
    a digest of it (SQLite indexes a term of any length, and finds it again). The ``_``
    keeps a digest from ever equalling a term, which holds only letters and digits."""
    if len(term.encode("utf-8")) <= _MAX_LEXEME_BYTES:
        return term
    return "long_" + hashlib.sha256(term.encode("utf-8")).hexdigest()


def query_lexemes(terms: Sequence[str]) -> list[str]:
    """The search terms (already analysed by :func:`~a2m_server.text.query_terms`) that
    can be lexemes, as lexemes, in order, once each."""
    return list(dict.fromkeys(_lexeme(term) for term in terms if _usable(term)))


def tsquery(lexemes: Sequence[str], *, match_all: bool = False) -> str:
    """A ``tsquery`` literal matching any (or every) one of ``lexemes``."""
    joiner = " & " if match_all else " | "
    return joiner.join(f"'{lexeme}'" for lexeme in lexemes)
