"""The extractive summarizer behind ``memory/summarize`` (§4.15): it only ever repeats
sentences from its sources, and declines when there is nothing durable to say."""

# Full-width CJK punctuation is what several of these tests are about.
# ruff: noqa: RUF001

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2m_server.summarizer import summarize

pytestmark = pytest.mark.spec("4.15")

# Term statistics (document frequency x sentence frequency, averaged over a sentence's
# terms): alice and berlin score 3 x 3, lives/in/is 2 x 2, every other term 1 x 1. The
# second and last sentences tie at 27/5, ahead of the first at 25/6.
ALICE = [
    ("a", "Alice moved to Berlin in May. She likes jazz."),
    ("b", "Alice lives in Berlin now. The cat is grey."),
    ("c", "Berlin is where Alice lives."),
]


# --- declining -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "sources",
    [
        [],
        [("a", "")],
        [("a", "   \n\t ")],
        [("a", "Ok. Thanks! Yes?"), ("b", "Sure thing.")],
        [("a", "东京。好！")],
    ],
    ids=["no-sources", "empty", "blank", "too-short", "cjk-too-short"],
)
def test_declines_when_no_sentence_has_three_terms(sources: list[tuple[str, str]]) -> None:
    assert summarize(sources) is None


def test_declines_when_every_sentence_is_longer_than_the_limit() -> None:
    assert summarize([("a", "Alice lives in Berlin now.")], max_chars=10) is None


@pytest.mark.parametrize(("max_sentences", "max_chars"), [(0, 100), (5, 0)])
def test_limits_below_one_are_refused(max_sentences: int, max_chars: int) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        summarize(ALICE, max_sentences=max_sentences, max_chars=max_chars)


# --- sentences -----------------------------------------------------------------------


def test_sentences_keep_their_punctuation_and_are_joined_by_one_space() -> None:
    content = "One two three.\n\n   Four five six!   Seven eight nine?\r\nTen eleven twelve"
    assert summarize([("a", content)], max_sentences=10) == (
        "One two three. Four five six! Seven eight nine? Ten eleven twelve"
    )


def test_dots_inside_numbers_and_names_do_not_end_a_sentence_but_an_ellipsis_does() -> None:
    content = "Pi is 3.14 and docs live at a2m.dev today. We all waited… and it works now."
    assert summarize([("a", content)], max_sentences=10) == content
    # Cut at "waited…", the two-term "Then waited…" is too short to keep.
    assert summarize([("a", "Then waited… and it works now.")]) == "and it works now."


def test_cjk_terminals_end_sentences_without_a_space() -> None:
    content = "我住在东京。我喜欢喝咖啡！你喜欢喝咖啡吗？"
    assert summarize([("a", content)], max_sentences=10) == (
        "我住在东京。 我喜欢喝咖啡！ 你喜欢喝咖啡吗？"
    )


# --- choosing ------------------------------------------------------------------------


def test_the_most_central_sentence_wins_and_ties_go_to_the_earlier_source() -> None:
    assert summarize(ALICE, max_sentences=1) == "Alice lives in Berlin now."
    assert summarize(list(reversed(ALICE)), max_sentences=1) == "Berlin is where Alice lives."


def test_the_chosen_sentences_come_out_in_source_order_not_score_order() -> None:
    assert summarize(ALICE, max_sentences=3) == (
        "Alice moved to Berlin in May. Alice lives in Berlin now. Berlin is where Alice lives."
    )


def test_max_sentences_caps_the_summary() -> None:
    assert summarize(ALICE, max_sentences=2) == (
        "Alice lives in Berlin now. Berlin is where Alice lives."
    )
    assert summarize(ALICE) == (
        "Alice moved to Berlin in May. She likes jazz. Alice lives in Berlin now."
        " The cat is grey. Berlin is where Alice lives."
    )


def test_a_sentence_over_max_chars_is_skipped_whole_and_a_later_one_may_fit() -> None:
    assert summarize(ALICE, max_sentences=1, max_chars=25) == "The cat is grey."
    summary = summarize(ALICE, max_chars=45)
    assert summary == "Alice lives in Berlin now. The cat is grey."
    assert len(summary) <= 45


def test_the_limit_counts_the_joining_spaces() -> None:
    two = "Alice lives in Berlin now. Berlin is where Alice lives."
    assert summarize(ALICE, max_sentences=2, max_chars=len(two)) == two
    assert summarize(ALICE, max_sentences=2, max_chars=len(two) - 1) == (
        "Alice lives in Berlin now. The cat is grey."
    )


def test_exact_duplicates_up_to_case_and_spacing_are_said_once() -> None:
    sources = [
        ("a", "The user prefers tea. Alice lives in Berlin."),
        ("b", "the  user prefers TEA."),
    ]
    assert summarize(sources) == "The user prefers tea. Alice lives in Berlin."


def test_near_duplicates_are_said_once() -> None:
    # 7 shared terms of 8: Jaccard 0.875.
    sources = [
        ("a", "The user prefers dark mode in the editor. The user works at night."),
        ("b", "The user prefers dark mode in the editor today. The user drinks tea."),
    ]
    assert summarize(sources) == (
        "The user prefers dark mode in the editor. The user works at night. The user drinks tea."
    )


def test_sentences_at_the_near_duplicate_threshold_are_both_kept() -> None:
    # 7 shared terms of 10: Jaccard exactly 0.7, which is not above it.
    sources = [
        ("a", "one two three four five six seven."),
        ("b", "one two three four five six seven eight nine ten."),
    ]
    assert summarize(sources) == (
        "one two three four five six seven. one two three four five six seven eight nine ten."
    )


# --- scripts -------------------------------------------------------------------------


def test_cyrillic_terms_are_counted_across_sources() -> None:
    sources = [
        ("a", "Я живу в Москве. Я люблю чай."),
        ("b", "Я живу в Москве уже десять лет. Зимой здесь холодно."),
    ]
    assert summarize(sources, max_sentences=1) == "Я живу в Москве."


def test_cjk_text_is_scored_by_bigrams() -> None:
    # 喝咖啡 ("drink coffee") is what the two records share.
    sources = [("a", "我住在东京。我喜欢喝咖啡。"), ("b", "我每天早上喝咖啡！东京的天气很好。")]
    assert summarize(sources, max_sentences=2) == "我喜欢喝咖啡。 我每天早上喝咖啡！"


def test_accented_terms_match_across_case_and_come_out_verbatim() -> None:
    sources = [
        ("a", "Le café de Zoé est délicieux. Il pleut."),
        ("b", "LE CAFÉ DE ZOÉ ouvre à huit heures."),
    ]
    assert summarize(sources, max_sentences=1) == "Le café de Zoé est délicieux."


def test_the_same_input_gives_the_same_summary() -> None:
    assert summarize(ALICE, max_sentences=3) == summarize(list(ALICE), max_sentences=3)


# --- property ------------------------------------------------------------------------

_WORDS = ["alice", "Berlin", "tea", "café", "Zoé", "Москва", "чай", "東京", "喝咖啡", "3.14"]
_BREAKS = [" ", " ", " ", ". ", "! ", "? ", "… ", "。", "！", "\n", "  "]


def _partition(summary: str, contents: list[str], limit: int) -> bool:
    """Whether ``summary`` is at most ``limit`` source substrings joined by single spaces."""
    cuts = [0] + [i + 1 for i, char in enumerate(summary) if char == " "]
    fewest: dict[int, int] = {0: 0}
    for start in cuts:
        if start not in fewest:
            continue
        for end in [*(c - 1 for c in cuts if c > start), len(summary)]:
            piece = summary[start:end]
            if piece and piece == piece.strip() and any(piece in c for c in contents):
                following = end + 1 if end < len(summary) else end
                fewest[following] = min(fewest.get(following, limit + 1), fewest[start] + 1)
    return fewest.get(len(summary), limit + 1) <= limit


@settings(max_examples=200, deadline=None)
@given(
    contents=st.lists(
        st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_BREAKS)), max_size=25).map(
            lambda pairs: "".join(word + gap for word, gap in pairs)
        ),
        max_size=5,
    ),
    max_sentences=st.integers(min_value=1, max_value=6),
    max_chars=st.integers(min_value=1, max_value=200),
)
def test_a_summary_only_repeats_sentences_from_its_sources(
    contents: list[str], max_sentences: int, max_chars: int
) -> None:
    sources = [(f"r{i}", content) for i, content in enumerate(contents)]
    summary = summarize(sources, max_sentences=max_sentences, max_chars=max_chars)
    assert summary == summarize(sources, max_sentences=max_sentences, max_chars=max_chars)
    if summary is None:
        return
    assert 0 < len(summary) <= max_chars
    assert _partition(summary, contents, max_sentences)
