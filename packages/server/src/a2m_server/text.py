"""Text as the lexical index sees it: words for alphabetic scripts, overlapping bigrams
for scripts written without spaces (CJK), all case- and accent-folded by FTS5.

The same function prepares stored content and queries, so a query finds text written
in the same script whatever the language."""

from __future__ import annotations

import re
import unicodedata

__all__ = ["index_text", "query_terms"]

# Han, Hiragana, Katakana, Hangul, and their extensions: scripts where words are not
# separated by spaces, so single characters and bigrams are the searchable units.
_CJK = (
    "\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0002fa1f"
)
_CJK_RUN = re.compile(f"[{_CJK}]+")
_WORD = re.compile(rf"[^\W_]+|[{_CJK}]+", re.UNICODE)


def _cjk_units(run: str, *, for_query: bool) -> list[str]:
    if len(run) == 1:
        return [run]
    bigrams = [run[i : i + 2] for i in range(len(run) - 1)]
    if for_query:
        return bigrams
    # Stored text carries unigrams too, so a one-character query still finds it.
    return list(run) + bigrams


def _fold(word: str) -> str:
    return unicodedata.normalize("NFKC", word).casefold()


def _units(text: str, *, for_query: bool) -> list[str]:
    units: list[str] = []
    for match in _WORD.finditer(unicodedata.normalize("NFKC", text)):
        token = match.group(0)
        if _CJK_RUN.fullmatch(token):
            units.extend(_cjk_units(token, for_query=for_query))
        else:
            # A token may still mix scripts ("abc東京"): split CJK runs out of it.
            start = 0
            for run in _CJK_RUN.finditer(token):
                if run.start() > start:
                    units.append(_fold(token[start : run.start()]))
                units.extend(_cjk_units(run.group(0), for_query=for_query))
                start = run.end()
            if start < len(token):
                units.append(_fold(token[start:]))
    return units


def index_text(content: str) -> str:
    """The text to put in the full-text index for ``content``.

    FTS5's own tokenizer already folds case and accents for alphabetic scripts, so only
    runs of CJK characters are rewritten, into their unigrams and bigrams."""
    if not _CJK_RUN.search(content):
        return content
    return _CJK_RUN.sub(
        lambda run: " " + " ".join(_cjk_units(run.group(0), for_query=False)) + " ", content
    )


def query_terms(query: str) -> list[str]:
    """The distinct search terms of ``query``, in order of first appearance."""
    seen: dict[str, None] = {}
    for unit in _units(query, for_query=True):
        seen.setdefault(unit, None)
    return list(seen)
