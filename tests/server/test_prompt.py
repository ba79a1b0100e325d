"""The template renderer behind the ``prompt`` option (§4.16): styles, citations,
multi-line entries and budgets that drop whole records."""

from __future__ import annotations

import re
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2m_server.prompt import render_prompt
from a2m_types import PromptOptions

pytestmark = pytest.mark.spec("4.16")

Style = Literal["auto", "facts", "transcript"]


def _record(record_id: str, content: str, **fields: Any) -> dict[str, Any]:
    return {"id": record_id, "content": content, **fields}


def _conversation() -> list[dict[str, Any]]:
    return [
        _record("1", "hi", role="user", created_at="2026-01-01T00:00:01.000Z"),
        _record("2", "x" * 30, role="assistant", created_at="2026-01-01T00:00:02.000Z"),
        _record("3", "bye", role="user", created_at="2026-01-01T00:00:03.000Z"),
        _record("4", "ok", role="assistant", created_at="2026-01-01T00:00:04.000Z"),
    ]


def test_facts_renders_one_bullet_per_record_in_the_given_order() -> None:
    records = [_record("b", "Prefers dark mode."), _record("a", "Lives in Berlin.")]
    rendered = render_prompt(records, PromptOptions(style="facts"), chronological=False)
    assert rendered == ("- Prefers dark mode.\n- Lives in Berlin.", ["b", "a"])


def test_transcript_prefixes_each_turn_with_its_role_and_memory_when_there_is_none() -> None:
    records = [
        _record("1", "What is my editor?", role="user"),
        _record("2", "Vim.", role="assistant"),
        _record("3", "Editor is vim."),
        _record("4", "Blank role.", role="  "),
    ]
    text, ids = render_prompt(records, PromptOptions(style="transcript"), chronological=True)
    assert text == (
        "user: What is my editor?\nassistant: Vim.\nmemory: Editor is vim.\nmemory: Blank role."
    )
    assert ids == ["1", "2", "3", "4"]


def test_empty_records_render_nothing() -> None:
    assert render_prompt([], PromptOptions(), chronological=True) == ("", [])
    assert render_prompt([], PromptOptions(budget=0), chronological=False) == ("", [])


@pytest.mark.parametrize("method", ["model", "none"])
def test_only_the_template_method_is_rendered_here(method: Literal["model", "none"]) -> None:
    with pytest.raises(ValueError, match="template"):
        render_prompt([_record("1", "x")], PromptOptions(method=method), chronological=False)


def test_the_defaults_render_every_record_as_facts_for_recall() -> None:
    records = [_record("1", "One.", role="user"), _record("2", "Two.", role="assistant")]
    assert render_prompt(records, PromptOptions(), chronological=False) == (
        "- One.\n- Two.",
        ["1", "2"],
    )


# --- auto ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("roles", "chronological", "expected"),
    [
        (
            ["user", "assistant", None, "memory"],
            True,
            "user: a\nassistant: b\nmemory: c\nmemory: d",
        ),
        (
            ["user", "tool", "system", "assistant"],
            True,
            "user: a\ntool: b\nsystem: c\nassistant: d",
        ),
        (["user", None, "memory", "note"], True, "- a\n- b\n- c\n- d"),
        (["user", "assistant", "user", "assistant"], False, "- a\n- b\n- c\n- d"),
        (["User", "ASSISTANT", None, None], True, "User: a\nASSISTANT: b\nmemory: c\nmemory: d"),
    ],
    ids=["half-conversational", "all-conversational", "mostly-facts", "recall", "role-case"],
)
def test_auto_is_a_transcript_only_for_a_chronological_conversation(
    roles: list[str | None], chronological: bool, expected: str
) -> None:
    records = [
        _record(str(i), content, **({"role": role} if role is not None else {}))
        for i, (content, role) in enumerate(zip("abcd", roles, strict=True))
    ]
    text, ids = render_prompt(records, PromptOptions(style="auto"), chronological=chronological)
    assert text == expected
    assert ids == ["0", "1", "2", "3"]


# --- one entry stays one entry -------------------------------------------------------


def test_continuation_lines_are_indented_under_their_entry() -> None:
    records = [_record("1", "first line\nsecond line\n\nafter a blank"), _record("2", "next")]
    text, _ = render_prompt(records, PromptOptions(style="facts"), chronological=False)
    assert text == "- first line\n  second line\n  \n  after a blank\n- next"


def test_every_kind_of_line_break_is_indented() -> None:
    records = [_record("1", "a\r\nb\rc\u2028d", role="user")]
    text, _ = render_prompt(records, PromptOptions(style="transcript"), chronological=True)
    assert text == "user: a\r\n  b\r  c\u2028  d"
    assert all(line.startswith("  ") for line in text.splitlines()[1:])


def test_a_citation_follows_the_last_line_of_a_multi_line_entry() -> None:
    records = [_record("1", "line one\nline two", key="notes/today")]
    text, _ = render_prompt(records, PromptOptions(style="facts", cite=True), chronological=False)
    assert text == "- line one\n  line two [source: notes/today]"


# --- cite ----------------------------------------------------------------------------


def test_cite_names_the_uri_then_the_key_then_the_id() -> None:
    records = [
        _record("1", "Has all three.", uri="https://example.org/a", key="k1"),
        _record("2", "Has a key.", key="k2"),
        _record("3", "Has only an id."),
        _record("4", "Has an empty uri.", uri="", key="k4"),
    ]
    text, _ = render_prompt(records, PromptOptions(style="facts", cite=True), chronological=False)
    assert text.split("\n") == [
        "- Has all three. [source: https://example.org/a]",
        "- Has a key. [source: k2]",
        "- Has only an id. [source: 3]",
        "- Has an empty uri. [source: k4]",
    ]


def test_cite_applies_to_transcripts_too() -> None:
    records = [_record("1", "hello", role="user", uri="chat://1")]
    text, _ = render_prompt(
        records, PromptOptions(style="transcript", cite=True), chronological=True
    )
    assert text == "user: hello [source: chat://1]"


# --- budget --------------------------------------------------------------------------


def test_facts_skip_an_entry_that_does_not_fit_and_keep_a_later_one_that_does() -> None:
    records = [_record("a", "alpha"), _record("b", "b" * 20), _record("c", "gamma")]
    options = PromptOptions(style="facts", budget=15)
    assert render_prompt(records, options, chronological=False) == ("- alpha\n- gamma", ["a", "c"])


def test_a_budget_one_short_of_an_entry_drops_it_whole() -> None:
    records = [_record("a", "alpha"), _record("c", "gamma")]
    options = PromptOptions(style="facts", budget=14)
    assert render_prompt(records, options, chronological=False) == ("- alpha", ["a"])


def test_a_budget_that_fits_everything_exactly_keeps_everything() -> None:
    records = [_record("a", "alpha"), _record("c", "gamma")]
    options = PromptOptions(style="facts", budget=15)
    assert render_prompt(records, options, chronological=False) == ("- alpha\n- gamma", ["a", "c"])


def test_citations_count_against_the_budget() -> None:
    records = [_record("a", "alpha", key="k")]
    fits = PromptOptions(style="facts", cite=True, budget=len("- alpha [source: k]"))
    assert render_prompt(records, fits, chronological=False) == ("- alpha [source: k]", ["a"])
    short = PromptOptions(style="facts", cite=True, budget=len("- alpha [source: k]") - 1)
    assert render_prompt(records, short, chronological=False) == ("", [])


@pytest.mark.parametrize("style", ["facts", "transcript", "auto"])
def test_a_zero_budget_or_one_nothing_fits_renders_nothing(style: Style) -> None:
    records = _conversation()
    for budget in (0, 3):
        options = PromptOptions(style=style, budget=budget)
        assert render_prompt(records, options, chronological=True) == ("", [])


def test_a_transcript_keeps_the_newest_turns_and_never_leaves_a_hole() -> None:
    # "user: hi" would still fit after the long turn is dropped, but a transcript with
    # its middle missing misleads.
    options = PromptOptions(style="transcript", budget=40)
    text, ids = render_prompt(_conversation(), options, chronological=True)
    assert (text, ids) == ("user: bye\nassistant: ok", ["3", "4"])


def test_a_transcript_that_fits_is_rendered_oldest_first() -> None:
    text, ids = render_prompt(_conversation(), PromptOptions(budget=1000), chronological=True)
    assert text == f"user: hi\nassistant: {'x' * 30}\nuser: bye\nassistant: ok"
    assert ids == ["1", "2", "3", "4"]


def test_a_transcript_of_recalled_records_is_put_back_in_creation_order() -> None:
    recalled = list(reversed(_conversation()))
    options = PromptOptions(style="transcript", budget=23)
    assert render_prompt(recalled, options, chronological=False) == (
        "user: bye\nassistant: ok",
        ["3", "4"],
    )


def test_a_transcript_without_timestamps_keeps_the_given_order() -> None:
    records = [_record("2", "second", role="assistant"), _record("1", "first", role="user")]
    text, ids = render_prompt(records, PromptOptions(style="transcript"), chronological=False)
    assert (text, ids) == ("assistant: second\nuser: first", ["2", "1"])


def test_rendering_is_deterministic_and_leaves_the_records_alone() -> None:
    records = _conversation()
    before = [dict(r) for r in records]
    options = PromptOptions(style="transcript", cite=True, budget=30)
    first = render_prompt(records, options, chronological=True)
    assert render_prompt(records, options, chronological=True) == first
    assert records == before


# --- property ------------------------------------------------------------------------

_LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def _indented(content: str) -> str:
    return _LINE_BREAK.sub(lambda m: m.group(0) + "  ", content)


_optional_text = st.one_of(st.none(), st.text(min_size=1, max_size=12))


@st.composite
def _records(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(min_value=0, max_value=12))
    records = []
    for i in range(count):
        record: dict[str, Any] = {
            "id": f"r{i}",
            "content": draw(st.text(max_size=40)),
            "created_at": f"2026-01-01T00:00:{i:02d}.000Z",
        }
        for field, value in (
            ("role", draw(st.sampled_from([None, "user", "assistant", "tool", "memory", "x"]))),
            ("uri", draw(_optional_text)),
            ("key", draw(_optional_text)),
        ):
            if value is not None:
                record[field] = value
        records.append(record)
    return records


@settings(max_examples=300, deadline=None)
@given(
    records=_records(),
    budget=st.one_of(st.none(), st.integers(min_value=0, max_value=400)),
    style=st.sampled_from(["facts", "transcript"]),
    cite=st.booleans(),
    chronological=st.booleans(),
)
def test_a_budget_is_never_exceeded_and_only_whole_records_are_dropped(
    records: list[dict[str, Any]],
    budget: int | None,
    style: Style,
    cite: bool,
    chronological: bool,
) -> None:
    options = PromptOptions(style=style, cite=cite, budget=budget)
    text, ids = render_prompt(records, options, chronological=chronological)
    by_id = {r["id"]: r for r in records}

    if budget is not None:
        assert len(text) <= budget
    else:
        assert sorted(ids) == sorted(by_id)
    assert len(set(ids)) == len(ids)
    assert set(ids) <= set(by_id)
    for record_id in ids:
        assert _indented(by_id[record_id]["content"]) in text
    # The text is exactly the kept records rendered in full: nothing was cut.
    kept = [by_id[i] for i in ids]
    unbudgeted = PromptOptions(style=style, cite=cite)
    assert render_prompt(kept, unbudgeted, chronological=True) == (text, ids)

    order = [r["id"] for r in records]
    if style == "facts":
        assert ids == [i for i in order if i in set(ids)]
    elif ids:
        # Timestamps ascend in input order, so the transcript is a suffix of it.
        assert ids == order[len(order) - len(ids) :]
    if style == "transcript" and budget is not None and len(ids) < len(records):
        older = records[len(records) - len(ids) - 1]
        one_more = render_prompt([older, *kept], unbudgeted, chronological=True)[0]
        assert len(one_more) > budget
