"""An extractive summarizer for ``memory/summarize`` (§4.15) that needs no model: it
picks the sentences most central to a set of records and never writes one of its own.

A sentence scores the mean, over its distinct terms, of (sources containing the term)
x (sentences containing it); the best are taken greedily, skipping duplicates and near
duplicates, and returned in source order."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from a2m_server.text import query_terms

__all__ = ["summarize"]

# A sentence needs this many terms to say something durable; shorter ones ("Ok.",
# "Thanks!") are acknowledgements, not facts.
_MIN_TERMS = 3
_NEAR_DUPLICATE = 0.7

# Latin terminals (. ! ? and the ellipsis) end a sentence only before whitespace or the
# end, so "3.14" and "a2m.dev" stay whole; CJK terminals (the ideographic full stop and
# full-width ! ?) need no following space. Closing quotes and brackets stay with the
# sentence they close.
_BOUNDARY = re.compile(
    r"[.!?\u2026]+[\"')\]\u2019\u201d\u00bb]*(?=\s|$)"
    r"|[\u3002\uff01\uff1f]+[\u300d\u300f\u2019\u201d\uff09]*"
    r"|[\n\r\u2028\u2029]"
)


@dataclass(frozen=True)
class _Sentence:
    text: str
    source: int
    position: int
    terms: frozenset[str]


def summarize(
    sources: Sequence[tuple[str, str]], *, max_sentences: int = 5, max_chars: int = 1200
) -> str | None:
    """The summary of ``sources`` (``(record_id, content)`` pairs, in selection order).

    The summary is made only of sentences found verbatim in the sources, joined by a
    single space, at most ``max_sentences`` of them and at most ``max_chars`` characters.
    ``None`` means there is nothing durable to say, which is not an error.
    """
    if max_sentences < 1 or max_chars < 1:
        raise ValueError("max_sentences and max_chars must be at least 1")
    sentences: list[_Sentence] = []
    # Document frequency counts each source once per term, however often it repeats it.
    document_frequency: Counter[str] = Counter()
    for source, (_, content) in enumerate(sources):
        found = [
            _Sentence(text, source, position, frozenset(query_terms(text, keep_stop_words=True)))
            for position, text in enumerate(_split_sentences(content))
        ]
        document_frequency.update(frozenset(t for s in found for t in s.terms))
        sentences.extend(found)
    candidates = [s for s in sentences if len(s.terms) >= _MIN_TERMS]
    if not candidates:
        return None
    sentence_frequency: Counter[str] = Counter(t for s in sentences for t in s.terms)

    def centrality(sentence: _Sentence) -> float:
        total = sum(document_frequency[t] * sentence_frequency[t] for t in sentence.terms)
        return total / len(sentence.terms)

    ranked = sorted(candidates, key=lambda s: (-centrality(s), s.source, s.position))
    chosen: list[_Sentence] = []
    used = 0
    for sentence in ranked:
        if len(chosen) == max_sentences:
            break
        # Equal text (up to case and spacing) has equal terms, so this also drops exact repeats.
        if any(_jaccard(sentence.terms, other.terms) > _NEAR_DUPLICATE for other in chosen):
            continue
        cost = len(sentence.text) + (1 if chosen else 0)
        if used + cost > max_chars:
            continue
        chosen.append(sentence)
        used += cost
    if not chosen:
        return None
    chosen.sort(key=lambda s: (s.source, s.position))
    return " ".join(s.text for s in chosen)


def _split_sentences(content: str) -> list[str]:
    """``content`` cut into sentences, each keeping its terminal punctuation, stripped."""
    pieces: list[str] = []
    start = 0
    for boundary in _BOUNDARY.finditer(content):
        pieces.append(content[start : boundary.end()].strip())
        start = boundary.end()
    pieces.append(content[start:].strip())
    return [piece for piece in pieces if piece]


def _jaccard(left: frozenset[str], right: frozenset[str]) -> float:
    return len(left & right) / len(left | right)
