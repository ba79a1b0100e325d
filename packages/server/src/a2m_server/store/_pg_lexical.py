"""Lexical ranking on PostgreSQL, as the SQLite store ranks (:mod:`._fts`): BM25 (FTS5's
k1 and b) of the query's terms OR-ed, over exact term statistics the triggers keep, with
the same typo correction and posting budget.

- A query term of five letters or more that no record holds is taken as a typo and
  replaced by the indexed term one edit away (insertion, deletion, substitution or swap
  of neighbours) that most records hold, starting with the same letter, read from the
  kept term statistics exactly as SQLite reads its vocabulary (in byte order, the same
  bounded scan, ties to the first). Records found only through such a guess rank after
  every record holding a term as given.
- The posting budget: only records holding one of the rarest terms whose postings fit it
  are candidates; each is scored with the whole query (the common terms' share added,
  as SQLite rescores its best candidates). When even the rarest term is beyond it, the
  most recent matches of it alone are ranked. No budget ranks every match exactly."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._fts import _VOCABULARY_SCAN, RECENT_WINDOW_DIVISOR, TYPO_MIN, _edits, asked_then_guessed
from ._pg_filter import Sql
from ._pg_text import query_lexemes, tsquery

__all__ = ["correction", "lexical_search", "term_statistics"]

Rows = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]

# FTS5's k1 and b.
_K1 = 1.2
_B = 0.75


def term_statistics(rows: Rows, lexemes: Sequence[str]) -> tuple[dict[str, int], int, float]:
    """(records holding each lexeme, records, average tokens per record), exact."""
    found = rows(
        "SELECT lexeme, docs FROM term_stats WHERE lexeme = ANY(%s::text[]) "
        "UNION ALL SELECT NULL, records FROM corpus_stats "
        "UNION ALL SELECT NULL, tokens FROM corpus_stats",
        (list(lexemes),),
    )
    frequency = {lexeme: int(docs) for lexeme, docs in found[:-2] if lexeme is not None}
    records, tokens = int(found[-2][1]), int(found[-1][1])
    return frequency, records, max(tokens / records, 1.0) if records else 1.0


def correction(rows: Rows, term: str) -> tuple[str, int] | None:
    """The indexed term one edit from ``term`` that most records hold, and how many do.

    The same candidates as SQLite's vocabulary scan (terms starting with the same
    letter, in byte order, the first :data:`~._fts._VOCABULARY_SCAN` of them); only those
    within one letter of the length leave the database."""
    first = term[0]
    following = ord(first) + 1
    if 0xD800 <= following <= 0xDFFF:  # no surrogate is a character; none sorts between
        following = 0xE000
    candidates = rows(
        "SELECT lexeme, docs FROM (SELECT lexeme, docs FROM term_stats WHERE docs > 0 AND "
        'lexeme COLLATE "C" >= %s AND lexeme COLLATE "C" < %s '
        'ORDER BY lexeme COLLATE "C" LIMIT %s) AS v WHERE length(lexeme) BETWEEN %s AND %s '
        'ORDER BY lexeme COLLATE "C"',
        (first, chr(following), _VOCABULARY_SCAN, len(term) - 1, len(term) + 1),
    )
    best: tuple[int, str] | None = None
    for candidate, documents in candidates:
        near = candidate != term and _edits(term, candidate) <= 1
        if near and (best is None or documents > best[0]):
            best = (int(documents), str(candidate))
    return None if best is None else (best[1], best[0])


def lexical_search(
    rows: Rows,
    where: Sql,
    terms: Sequence[str],
    limit: int | None,
    *,
    match_all: bool,
    posting_budget: int | None,
    columns: str = "r.id",
) -> list[tuple[Any, ...]]:
    """Rows of ``columns`` (of ``records AS r``), BM25 relevance and ``guessed`` last, for
    records matching ``terms`` (any of them; or, with ``match_all``, every one as given)
    and ``where``: those holding a term as given first, best first; then, to fill what is
    left of ``limit``, those found only through the typo correction of a term no record
    holds (``guessed`` true), best first, as on SQLite."""
    lexemes = query_lexemes(terms)
    if not lexemes or (limit is not None and limit <= 0):
        return []
    counts, records, average = term_statistics(rows, lexemes)
    frequency = {lexeme: counts.get(lexeme, 0) for lexeme in lexemes}
    corpus = (records, average)
    if match_all:
        found = _bm25(
            rows, lexemes, lexemes, frequency, corpus, where, limit, columns, match_all=True
        )
        return [(*row, False) for row in found]
    given: list[str] = []
    guesses: list[str] = []
    for lexeme in lexemes:
        if frequency[lexeme] == 0 and len(lexeme) >= TYPO_MIN and lexeme.isalpha():
            corrected = correction(rows, lexeme)
            if corrected is not None:
                guesses.append(corrected[0])
                frequency[corrected[0]] = corrected[1]
            continue
        given.append(lexeme)
    given = list(dict.fromkeys(given))

    def search(found: Sequence[str]) -> list[tuple[Any, ...]]:
        return _ranked(rows, found, frequency, corpus, where, limit, columns, posting_budget)

    guesses = [g for g in dict.fromkeys(guesses) if g not in given]
    hits = asked_then_guessed(search(given), (lambda: search(guesses)) if guesses else None, limit)
    return [(*row, guessed) for row, guessed in hits]


def _ranked(
    rows: Rows,
    lexemes: Sequence[str],
    frequency: Mapping[str, int],
    corpus: tuple[int, float],
    where: Sql,
    limit: int | None,
    columns: str,
    posting_budget: int | None,
) -> list[tuple[Any, ...]]:
    """Rows of ``columns`` and BM25 relevance, best first, for records holding any of
    ``lexemes``, within the posting budget."""
    present = sorted((t for t in lexemes if frequency[t] > 0), key=lambda t: frequency[t])
    if not present:
        return []
    if posting_budget is None:
        return _bm25(
            rows, present, present, frequency, corpus, where, limit, columns, match_all=False
        )
    kept: list[str] = []
    postings = 0
    for lexeme in present:
        if kept and postings + frequency[lexeme] > posting_budget:
            break
        kept.append(lexeme)
        postings += frequency[lexeme]
    if postings > posting_budget:
        # As on SQLite: the newest matches of the rarest term alone, a quarter-budget.
        window = max(posting_budget // RECENT_WINDOW_DIVISOR, 1)
        return _bm25(rows, kept, kept, frequency, corpus, where, limit, columns, match_all=False,
                     recent=window)  # fmt: skip
    return _bm25(rows, kept, present, frequency, corpus, where, limit, columns, match_all=False)


def _bm25(
    rows: Rows,
    matched: list[str],
    scored: list[str],
    frequency: Mapping[str, int],
    corpus: tuple[int, float],
    where: Sql,
    limit: int | None,
    columns: str,
    *,
    match_all: bool,
    recent: int | None = None,
) -> list[tuple[Any, ...]]:
    """BM25 by ``scored`` terms of the records holding ``matched`` ones (any, or all), or
    of the ``recent`` newest of them."""
    records, average = corpus
    idf = [_bm25_idf(records, frequency.get(lexeme, 0)) for lexeme in scored]
    match = tsquery(matched, match_all=match_all)
    window = "" if recent is None else f"ORDER BY r.rowid DESC LIMIT {int(recent)}"
    query = (
        "WITH terms (lexeme, idf) AS (SELECT * FROM unnest(%s::text[], %s::float8[])), "
        "hits AS (SELECT r.rowid, r.body, r.body_length FROM records AS r "
        f"WHERE r.body @@ %s::tsquery AND {where.text()} {window}), "
        # Each hit's entries for the scored terms alone (marked with weight A, then kept
        # by weight, in C), joined with the terms and grouped: no subquery per hit, and
        # no row per term of its text. Every hit holds a matched term, and every matched
        # term is scored, so none is lost.
        "scores AS (SELECT h.rowid, sum(t.idf * (cardinality(u.positions) * %s) / "
        "(cardinality(u.positions) + %s * (1 - %s + %s * h.body_length / %s))) AS score "
        "FROM hits AS h "
        "CROSS JOIN LATERAL unnest(ts_filter(setweight(h.body, 'A', %s::text[]), '{a}')) AS u "
        "JOIN terms AS t ON t.lexeme = u.lexeme "
        "GROUP BY h.rowid ORDER BY score DESC, h.rowid"
    )
    params: list[Any] = [scored, idf, match, *where.params, _K1 + 1, _K1, _B, _B, average, scored]
    if limit is not None:
        query += " LIMIT %s"
        params.append(limit)
    # The winners' columns are read once they are known, by rowid.
    query += (
        f") SELECT {columns}, s.score FROM scores AS s JOIN records AS r ON r.rowid = s.rowid "
        "ORDER BY s.score DESC, s.rowid"
    )
    return [(*row[:-1], max(float(row[-1] or 0.0), 0.0)) for row in rows(query, params)]


def _bm25_idf(records: int, hits: int) -> float:
    records = max(records, hits)
    idf = math.log((records - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0 else 1e-6
