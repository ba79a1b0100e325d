"""The SQLite full-text index: what it holds, how it is rebuilt, and how it is searched.

The index holds :func:`a2m_server.text.index_text` of each record (the analyser's terms,
space-separated) and FTS5 splits on the spaces; queries are the analyser's
:func:`~a2m_server.text.query_terms`. Relevance is FTS5's BM25 (k1 1.2, b 0.75) of the
terms OR-ed, with two additions:

- a query term of five letters or more that the index does not hold is taken as a typo
  and replaced by the indexed term one edit away (insertion, deletion, substitution or
  swap of neighbours) that most records hold, starting with the same letter;
- the posting budget: BM25 walks every posting of every term, so only records holding
  one of the rarest terms whose postings fit :data:`POSTING_BUDGET` are candidates; the
  best :data:`RESCORE_POOL` of them by those terms are rescored with the whole query
  (the common terms' share added), and records holding nothing but terms beyond the
  budget, whose BM25 weight is small, are left out. When even the rarest term is beyond
  it, the most recent quarter-budget of matches is ranked. ``posting_budget=None`` on
  the store ranks every match exactly (slower on large stores; the benchmark measures
  both).
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from a2m_server.text import ANALYZER, index_text

__all__ = [
    "POSTING_BUDGET",
    "RECENT_WINDOW_DIVISOR",
    "TermStats",
    "TermView",
    "ensure_index",
    "ranked_search",
]

log = logging.getLogger("a2m_server.store")

POSTING_BUDGET = 2000
RECENT_WINDOW_DIVISOR = 4
"""The newest matches ranked when every term is beyond the budget: budget / this."""
TYPO_MIN = 5
RESCORE_POOL = 300
"""Records holding a kept term that are rescored with the common terms' share."""
_CACHE_SIZE = 100_000
_VOCABULARY_SCAN = 50_000
_REBUILD_BATCH = 5000
_T = TypeVar("_T")
_H = TypeVar("_H", bound=tuple[Any, ...])

FTS_DDL = (
    "CREATE VIRTUAL TABLE records_fts USING fts5 (body, tokenize = 'unicode61 remove_diacritics 0')"
)
VOCAB_DDL = "CREATE VIRTUAL TABLE IF NOT EXISTS records_vocab USING fts5vocab (records_fts, row)"


def ensure_index(conn: sqlite3.Connection) -> None:
    """Rebuild the full-text index when it was built by another analyser (a file written
    by an earlier release), once, under the write lock, logging progress."""
    if _analyzer(conn) == ANALYZER:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if _analyzer(conn) != ANALYZER:
            _rebuild(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _analyzer(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'analyzer'").fetchone()
    return None if row is None else str(row[0])


def _rebuild(conn: sqlite3.Connection) -> None:
    total = int(conn.execute("SELECT count(*) FROM records").fetchone()[0])
    if total:
        log.info("rebuilding the full-text index for %s: %d records", ANALYZER, total)
    conn.execute("DROP TABLE IF EXISTS records_vocab")
    conn.execute("DROP TABLE IF EXISTS records_fts")
    conn.execute(FTS_DDL)
    conn.execute(VOCAB_DDL)
    done, last = 0, -1
    while True:
        rows = conn.execute(
            "SELECT rowid, content FROM records WHERE rowid > ? ORDER BY rowid LIMIT ?",
            (last, _REBUILD_BATCH),
        ).fetchall()
        if not rows:
            break
        conn.executemany(
            "INSERT INTO records_fts (rowid, body) VALUES (?, ?)",
            [(rowid, index_text(content)) for rowid, content in rows],
        )
        done += len(rows)
        last = rows[-1][0]
        log.info("full-text index: %d of %d records", done, total)
    if total:
        conn.execute("INSERT INTO records_fts (records_fts) VALUES ('optimize')")
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('analyzer', ?)", (ANALYZER,))


def phrase(term: str) -> str:
    """``term`` as an FTS5 string (quoted, so no term is ever read as syntax)."""
    return '"' + term.replace('"', '""') + '"'


def match_expression(terms: Sequence[str], *, match_all: bool = False) -> str:
    return (" AND " if match_all else " OR ").join(phrase(t) for t in terms)


def _edits(a: str, b: str) -> int:
    """Optimal string alignment distance, giving up past 1 (all that is asked)."""
    if abs(len(a) - len(b)) > 1:
        return 2
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > 1:
            return 2
        previous2, previous = previous, current
    return previous[-1]


class TermStats:
    """Document frequencies and typo corrections, exact for the snapshot they are read in.

    Every figure is cached under the identity of the index state it was counted in (see
    :meth:`snapshot`), so a write, by this process or any other, makes the next search
    count afresh, and readers on different snapshots never share a figure: a store with
    this cache answers exactly as one without it. Frequencies are counted only up to
    just past the posting budget, which is all the budget needs to know."""

    def __init__(self, posting_budget: int | None) -> None:
        self.posting_budget = posting_budget
        self._snapshots: OrderedDict[tuple[bytes, int], _Figures] = OrderedDict()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._snapshots.clear()

    def snapshot(self, conn: sqlite3.Connection) -> TermView:
        """The figures of the index state ``conn`` reads now (call inside its read
        transaction, so every later statement reads the same state).

        FTS5 rewrites its structure record (``records_fts_data`` row 10) on every commit
        that changes the index, with a counter of segments written that only grows, so
        its bytes name a committed state; ``total_changes`` tells apart the uncommitted
        states of a connection that writes (the in-memory store reads on its writer)."""
        row = conn.execute("SELECT block FROM records_fts_data WHERE id = 10").fetchone()
        key = (bytes(row[0]) if row is not None and row[0] is not None else b"", conn.total_changes)
        with self._lock:
            figures = self._snapshots.get(key)
            if figures is None:
                figures = self._snapshots[key] = _Figures()
                while len(self._snapshots) > _SNAPSHOTS_KEPT:
                    self._snapshots.popitem(last=False)
            else:
                self._snapshots.move_to_end(key)
        return TermView(self.posting_budget, figures, self._lock, conn)


# Index states whose figures are kept: readers still on an older snapshot keep theirs
# while newer ones are counted.
_SNAPSHOTS_KEPT = 4


class _Figures:
    __slots__ = ("corrections", "frequency")

    def __init__(self) -> None:
        self.frequency: dict[str, int] = {}
        self.corrections: dict[str, str | None] = {}


class TermView:
    """The term statistics of one index state, read through one connection."""

    def __init__(
        self,
        posting_budget: int | None,
        figures: _Figures,
        lock: threading.Lock,
        conn: sqlite3.Connection,
    ) -> None:
        self.posting_budget = posting_budget
        self._figures = figures
        self._lock = lock
        self._conn = conn

    def frequency(self, expression: str) -> int:
        """How many records match ``expression``, counted to just past the budget."""
        cached = self._figures.frequency.get(expression)
        if cached is not None:
            return cached
        cap = -1 if self.posting_budget is None else self.posting_budget + 1
        row = self._conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM records_fts WHERE records_fts MATCH ? LIMIT ?)",
            (expression, cap),
        ).fetchone()
        count = int(row[0])
        self._remember(self._figures.frequency, expression, count)
        return count

    def exact_frequency(self, expression: str) -> int:
        """How many records match ``expression``, counted to the end (for BM25's idf)."""
        key = "=" + expression
        cached = self._figures.frequency.get(key)
        if cached is not None:
            return cached
        row = self._conn.execute(
            "SELECT count(*) FROM records_fts WHERE records_fts MATCH ?", (expression,)
        ).fetchone()
        count = int(row[0])
        self._remember(self._figures.frequency, key, count)
        return count

    def correction(self, term: str) -> str | None:
        """The indexed term one edit from ``term`` that most records hold, if any."""
        corrections = self._figures.corrections
        if term in corrections:
            return corrections[term]
        best: tuple[int, str] | None = None
        first = term[0]
        upper = first[:-1] + chr(ord(first[-1]) + 1)
        # Bounded: a vocabulary of a million ids starting with one letter is not read.
        for candidate, documents in self._conn.execute(
            "SELECT term, doc FROM records_vocab WHERE term >= ? AND term < ? LIMIT ?",
            (first, upper, _VOCABULARY_SCAN),
        ):
            if abs(len(candidate) - len(term)) > 1 or candidate == term:
                continue
            if _edits(term, candidate) <= 1 and (best is None or documents > best[0]):
                best = (int(documents), str(candidate))
        found = None if best is None else best[1]
        self._remember(corrections, term, found)
        return found

    def _remember(self, table: dict[str, _T], key: str, value: _T) -> None:
        with self._lock:
            if len(table) >= _CACHE_SIZE:
                table.clear()
            table[key] = value


def expressions_for(stats: TermView, terms: Sequence[str]) -> tuple[list[str], list[str]]:
    """The FTS5 expressions a ranked search looks for: the terms the index holds as given,
    and, apart, the corrections (the term one edit away) of those it does not hold."""
    given: list[str] = []
    corrected: list[str] = []
    for term in terms:
        expression = phrase(term)
        if stats.frequency(expression) == 0 and len(term) >= TYPO_MIN and term.isalpha():
            correction = stats.correction(term)
            if correction is not None:
                corrected.append(phrase(correction))
            continue
        given.append(expression)
    given = list(dict.fromkeys(given))
    return given, [e for e in dict.fromkeys(corrected) if e not in given]


def ranked_search(
    conn: sqlite3.Connection,
    stats: TermStats,
    terms: Sequence[str],
    where_sql: str,
    where_params: Sequence[object],
    limit: int | None,
    *,
    selective: bool = True,
) -> list[tuple[str, float, bool]]:
    """(id, BM25 relevance, guessed) triples for records matching any of ``terms``: those
    holding a term as given first, best first; then, to fill what is left of ``limit``,
    those found only through the typo correction of a term no record holds (``guessed``),
    best first. A guess never pushes out a record holding what was asked for.

    ``selective=False`` says the filter refuses nothing but expired records, so ranking
    the matches alone and checking the filter on the best few seldom has to look again."""
    view = stats.snapshot(conn)
    given, corrected = expressions_for(view, terms)

    def search(expressions: Sequence[str]) -> list[tuple[str, float]]:
        return _ranked(
            conn, view, stats, expressions, where_sql, where_params, limit, selective=selective
        )

    hits = asked_then_guessed(
        search(given), (lambda: search(corrected)) if corrected else None, limit
    )
    return [(record_id, score, guessed) for (record_id, score), guessed in hits]


def asked_then_guessed(
    asked: list[_H],
    guess: Callable[[], list[_H]] | None,
    limit: int | None,
) -> list[tuple[_H, bool]]:
    """``asked`` (the hits of the query's terms as given, each led by its record's key),
    then, to fill what is left of ``limit``, the hits of ``guess()`` (the typo corrections'
    search, run only when there is room) not already among them; each with whether it is
    a guess. Both stores rank this way, so a guess never pushes out what was asked for."""
    hits = [(hit, False) for hit in asked]
    if guess is None or (limit is not None and len(hits) >= limit):
        return hits
    # Up to limit guesses: those that also hold a given term are already above.
    found = {hit[0] for hit in asked}
    guesses = [(hit, True) for hit in guess() if hit[0] not in found]
    return hits + (guesses if limit is None else guesses[: limit - len(hits)])


def _ranked(
    conn: sqlite3.Connection,
    view: TermView,
    stats: TermStats,
    expressions: Sequence[str],
    where_sql: str,
    where_params: Sequence[object],
    limit: int | None,
    *,
    selective: bool,
) -> list[tuple[str, float]]:
    """(id, BM25 relevance) pairs, best first, for records matching any of
    ``expressions``, within the posting budget."""
    frequency = {e: view.frequency(e) for e in expressions}
    present = sorted((e for e in expressions if frequency[e] > 0), key=lambda e: frequency[e])
    if not present:
        return []
    budget = stats.posting_budget
    kept: list[str] = []
    postings = 0
    for expression in present:
        if budget is not None and kept and postings + frequency[expression] > budget:
            break
        kept.append(expression)
        postings += frequency[expression]
    match = " OR ".join(kept)
    if budget is None or postings <= budget:
        dropped = present[len(kept) :]
        if not dropped:
            return bm25(conn, match, where_sql, where_params, limit, selective=selective)
        return _with_common_terms(
            conn, view, match, dropped, where_sql, where_params, limit, selective=selective
        )
    rows = conn.execute(
        "SELECT r.id, bm25(records_fts) AS rank FROM records_fts "
        "JOIN records AS r ON r.rowid = records_fts.rowid "
        f"WHERE records_fts MATCH ? AND {where_sql} "
        "ORDER BY records_fts.rowid DESC LIMIT ?",
        [match, *where_params, max(budget // RECENT_WINDOW_DIVISOR, 1)],
    ).fetchall()
    rows.sort(key=lambda row: row[1])
    if limit is not None:
        rows = rows[:limit]
    return [(record_id, max(-rank, 0.0)) for record_id, rank in rows]


# FTS5's bm25() constants, which the rescoring below must match.
K1 = 1.2
B = 0.75


def _with_common_terms(
    conn: sqlite3.Connection,
    stats: TermView,
    match: str,
    dropped: Sequence[str],
    where_sql: str,
    where_params: Sequence[object],
    limit: int | None,
    *,
    selective: bool,
) -> list[tuple[str, float]]:
    """The best records holding a kept term, rescored with the dropped terms' share of
    BM25 added, computed here as FTS5 computes it (the same N, average length, document
    frequency and term frequency), so their order is the full query's."""
    pool = RESCORE_POOL if limit is None else max(RESCORE_POOL, 2 * limit)
    ranked = _best(conn, match, where_sql, where_params, pool, selective=selective)
    totals = _averages(conn)
    if totals is None or not ranked:
        return [(record_id, max(-rank, 0.0)) for record_id, rank, _ in ranked][:limit]
    # The terms of the chosen few only, read from the index's own copy of them (FTS5's
    # content table): selecting them above would read them for every match before the
    # sort, and asking the index for them row by row costs twice as much.
    bodies = dict(
        conn.execute(
            "SELECT id, c0 FROM records_fts_content WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps([rowid for _, _, rowid in ranked]),),
        ).fetchall()
    )
    documents, tokens = totals
    average = tokens / documents if documents else 1.0
    weights = []
    for expression in dropped:
        hits = stats.exact_frequency(expression)
        # Both figures are of one snapshot, so hits <= documents; the bound keeps the
        # logarithm defined should FTS5's totals ever lag its postings.
        idf = math.log((max(documents, hits) - hits + 0.5) / (hits + 0.5))
        weights.append((expression[1:-1].replace('""', '"'), idf if idf > 0 else 1e-6))
    scored = []
    for record_id, rank, rowid in ranked:
        body = bodies.get(rowid) or ""
        score = -rank
        terms: list[str] | None = None
        for term, idf in weights:
            # A term that is not even a substring of the text is not one of its terms:
            # most records hold none of the dropped terms, and need no split.
            if term not in body:
                continue
            if terms is None:
                terms = body.split()
            tf = terms.count(term)
            if tf:
                norm = K1 * (1 - B + B * len(terms) / average)
                score += idf * tf * (K1 + 1) / (tf + norm)
        scored.append((record_id, max(score, 0.0)))
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored if limit is None else scored[:limit]


def _averages(conn: sqlite3.Connection) -> tuple[int, int] | None:
    """FTS5's committed row count and token total (its "averages" record), as bm25() reads
    them."""
    row = conn.execute("SELECT block FROM records_fts_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return None
    blob: bytes = row[0]
    documents, at = _varint(blob, 0)
    tokens, _ = _varint(blob, at)
    return documents, tokens


def _varint(blob: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint: seven bits a byte, high bit set to continue, the ninth byte whole."""
    value = 0
    for i in range(8):
        byte = blob[at + i]
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + i + 1
    return (value << 8) | blob[at + 8], at + 9


def bm25(
    conn: sqlite3.Connection,
    match: str,
    where_sql: str,
    where_params: Sequence[object],
    limit: int | None,
    *,
    selective: bool = True,
) -> list[tuple[str, float]]:
    """Exact BM25 over every record matching ``match`` and the filter."""
    if limit is None:
        rows = [
            (record_id, rank)
            for record_id, rank, _ in _joined(conn, match, where_sql, where_params, -1)
        ]
    else:
        rows = [
            (record_id, rank)
            for record_id, rank, _ in _best(
                conn, match, where_sql, where_params, limit, selective=selective
            )
        ]
    # bm25() is negative, more negative is better.
    return [(record_id, max(-rank, 0.0)) for record_id, rank in rows]


# How many more matches than asked for are ranked before the filter is checked: only an
# expired record fails a filter that is not selective.
_UNFILTERED_MARGIN = 16
_FILTERED_FACTOR = 2


def _best(
    conn: sqlite3.Connection,
    match: str,
    where_sql: str,
    where_params: Sequence[object],
    count: int,
    *,
    selective: bool,
) -> list[tuple[str, int | float, int]]:
    """(id, bm25, rowid) of the ``count`` best records matching ``match`` and the filter,
    best first and, among equals, oldest first.

    FTS5 ranks the matches alone and only the best of them are looked up to check the
    filter: joining every match to its record row first costs as much as ranking them.
    When too few of those pass, the filter is applied to every match after all; either
    way the answer is the same."""
    if count <= 0:
        return []
    fetch = count * _FILTERED_FACTOR if selective else count + _UNFILTERED_MARGIN
    ranked = conn.execute(
        "SELECT rowid, bm25(records_fts) AS rank FROM records_fts "
        "WHERE records_fts MATCH ? ORDER BY rank, rowid LIMIT ?",
        (match, fetch),
    ).fetchall()
    if not ranked:
        return []
    passed = dict(
        conn.execute(
            "SELECT r.rowid, r.id FROM records AS r "
            f"WHERE r.rowid IN (SELECT value FROM json_each(?)) AND {where_sql}",
            [json.dumps([rowid for rowid, _ in ranked]), *where_params],
        ).fetchall()
    )
    if len(passed) < count and len(ranked) == fetch:
        return _joined(conn, match, where_sql, where_params, count)
    best = [(passed[rowid], rank, rowid) for rowid, rank in ranked if rowid in passed]
    return best[:count]


def _joined(
    conn: sqlite3.Connection,
    match: str,
    where_sql: str,
    where_params: Sequence[object],
    count: int,
) -> list[tuple[str, int | float, int]]:
    """:func:`_best` by joining every match to its record (``count`` -1: all of them)."""
    rows: list[tuple[str, int | float, int]] = conn.execute(
        "SELECT r.id, bm25(records_fts) AS rank, records_fts.rowid FROM records_fts "
        "JOIN records AS r ON r.rowid = records_fts.rowid "
        f"WHERE records_fts MATCH ? AND {where_sql} ORDER BY rank, records_fts.rowid LIMIT ?",
        [match, *where_params, count],
    ).fetchall()
    return rows
