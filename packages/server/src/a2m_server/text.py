"""Text as the lexical index sees it: the one analyser that turns stored content and
queries alike into index terms, so a question finds a fact written in other words of
the same language.

Per script (a documented, deterministic choice; no language detection):

- every script: NFKC, then Unicode case folding; outside CJK, diacritics are removed
  (``café`` and ``cafe`` are one term, as are Cyrillic yo and ye);
- Latin script: the English Snowball stemmer (Porter2) after folding, so ``rotates``,
  ``rotating`` and ``rotate`` meet, and then a final single ``s`` is dropped (Porter2
  keeps it after ``u`` or without a vowel: ``gpus``, ``vms``); other Latin-script
  languages get folding and the same stemmer, which mostly strips plural and verb
  endings;
- Cyrillic: the Russian Snowball stemmer, before diacritics are removed (it needs ``й``);
- Han, Hiragana, Katakana and Hangul, written without spaces: stored text is indexed as
  single characters and overlapping bigrams, a query as bigrams (a single character when
  a run has only one), so a question shares bigrams with the fact it asks about;
- anything else (Greek, Arabic, Devanagari …): folded words, no stemming.

Words are runs of letters and digits. Queries drop stop words (English, French, Spanish,
German, Portuguese, Russian) unless nothing else is left, so ``when does the`` cannot
outweigh the words that carry the question.

A second store ranks like this one by indexing :func:`index_terms` of the content and
searching :func:`query_terms` of the query; nothing here depends on SQLite."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import Stemmer  # type: ignore[import-not-found]  # PyStemmer ships no stubs

from ._stopwords import STOP_WORDS as _STOP_WORDS

__all__ = ["ANALYZER", "index_terms", "index_text", "is_stop_word", "query_terms"]

ANALYZER = "a2m-text-2"
"""Names the analysis: a store whose index was built by another one rebuilds it."""

# Han, Hiragana, Katakana, Hangul, and their extensions: scripts where words are not
# separated by spaces, so single characters and bigrams are the searchable units.
_CJK = (
    "\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0002fa1f"
)
_CJK_RUN = re.compile(f"[{_CJK}]+")
_WORD = re.compile(rf"[^\W_]+|[{_CJK}]+", re.UNICODE)
_PLAIN_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CYRILLIC = re.compile("[\u0400-\u04ff]")
_LATIN = re.compile("[a-z]")

_ENGLISH = Stemmer.Stemmer("english")
_RUSSIAN = Stemmer.Stemmer("russian")


def _strip_diacritics(word: str) -> str:
    decomposed = unicodedata.normalize("NFD", word)
    if decomposed.isascii():
        return decomposed
    kept = "".join(c for c in decomposed if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", kept)


@lru_cache(maxsize=200_000)
def _fold(word: str) -> str:
    """One non-CJK word (already NFKC) as its folded form, before stemming."""
    folded = word.casefold()
    if _CYRILLIC.search(folded):
        folded = folded.replace("\u0451", "\u0435")
    return _strip_diacritics(folded)


@lru_cache(maxsize=200_000)
def _term(word: str) -> str:
    """One non-CJK word (already NFKC) as its index term."""
    folded = word.casefold()
    if _CYRILLIC.search(folded):
        return _strip_diacritics(str(_RUSSIAN.stemWord(folded.replace("\u0451", "\u0435"))))
    folded = _strip_diacritics(folded)
    if _LATIN.match(folded):
        stem = str(_ENGLISH.stemWord(folded))
        # Porter2 keeps the s of "gpus", "vms" and "ssds" (no vowel before it to cut at);
        # dropping a final single s on both sides makes "GPUs" meet "GPU".
        if len(stem) >= 3 and stem.endswith("s") and not stem.endswith("ss"):
            stem = stem[:-1]
        return stem
    return folded


def is_stop_word(word: str) -> bool:
    """Whether ``word`` is too common to carry a query."""
    return _fold(unicodedata.normalize("NFKC", word)) in _STOP_WORDS


def _cjk_units(run: str, *, for_query: bool) -> list[str]:
    if len(run) == 1:
        return [run]
    bigrams = [run[i : i + 2] for i in range(len(run) - 1)]
    if for_query:
        return bigrams
    # Stored text carries unigrams too, so a one-character query still finds it.
    return list(run) + bigrams


def _units(text: str, *, for_query: bool) -> list[tuple[str, str]]:
    """(term, folded word) pairs of ``text`` in order; CJK units are their own word."""
    units: list[tuple[str, str]] = []
    for match in _WORD.finditer(unicodedata.normalize("NFKC", text)):
        token = match.group(0)
        if not _CJK_RUN.search(token):
            units.append((_term(token), _fold(token)))
            continue
        # A token may mix scripts ("abc東京"): split the CJK runs out of it.
        start = 0
        for run in _CJK_RUN.finditer(token):
            if run.start() > start:
                part = token[start : run.start()]
                units.append((_term(part), _fold(part)))
            units.extend((unit, unit) for unit in _cjk_units(run.group(0), for_query=for_query))
            start = run.end()
        if start < len(token):
            part = token[start:]
            units.append((_term(part), _fold(part)))
    return units


def index_terms(content: str) -> list[str]:
    """The index terms of ``content``, in order, repeats kept (they count in BM25)."""
    # Every write analyses its content, so the common case skips the general path:
    # ASCII is already NFKC, and text without CJK needs no splitting of runs.
    text = content if content.isascii() else unicodedata.normalize("NFKC", content)
    if text.isascii() or not _CJK_RUN.search(text):
        return [_term(word) for word in _PLAIN_WORD.findall(text)]
    return [term for term, _ in _units(content, for_query=False)]


def index_text(content: str) -> str:
    """The text to put in the full-text index for ``content``: its terms, space-separated.

    Terms are runs of letters and digits, so any tokenizer that splits on spaces (FTS5
    ``unicode61``, PostgreSQL's ``simple`` configuration) indexes exactly these."""
    return " ".join(index_terms(content))


def query_terms(query: str, *, keep_stop_words: bool = False) -> list[str]:
    """The distinct search terms of ``query``, in order of first appearance.

    Stop words are dropped unless ``keep_stop_words`` (a query that must match every
    word, as ``forget`` does) or unless the query has nothing else."""
    units = _units(query, for_query=True)
    if not keep_stop_words:
        carrying = [term for term, word in units if word not in _STOP_WORDS]
        terms = carrying or [term for term, _ in units]
    else:
        terms = [term for term, _ in units]
    return list(dict.fromkeys(terms))
