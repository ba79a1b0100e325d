# ruff: noqa: RUF001  (Cyrillic and Greek letters are the point of the multilingual cases)
"""§4.3 ``memory/recall``, §4.4 ``memory/timeline``, §4.5 ``memory/forget``, §5.2 ``where``
and §5.3 ``score``; multilingual lexical recall."""

from __future__ import annotations

import random
from typing import Any

import pytest
from spec_support import Peer, rpc_error, timeline_ids, uid


def _tagged(peer: Peer, contents: list[str], **fields: Any) -> tuple[str, list[str]]:
    """Write ``contents`` one call each (so creation order is write order); tag and ids."""
    tag = uid("tag")
    session = uid("session")
    ids = [
        peer.remember({"content": c, "metadata": {"tag": tag}, **fields}, session=session)[0]
        for c in contents
    ]
    return tag, ids


def _assert_scores(records: list[dict[str, Any]]) -> None:
    scores = [r["score"] for r in records]
    assert all(isinstance(s, (int, float)) for s in scores)
    assert scores == sorted(scores, reverse=True), "§5.3: scores MUST descend"
    assert all(0.0 <= s <= 1.0 for s in scores), "§5.3: scores SHOULD lie in [0, 1]"


# --- §4.3 recall -------------------------------------------------------------------------------


@pytest.mark.spec("4.3")
@pytest.mark.parametrize("query", [None, ""], ids=["absent", "empty"])
def test_4_3_recall_without_a_query_returns_most_recent_first(
    peer: Peer, query: str | None
) -> None:
    tag, ids = _tagged(peer, [f"record {i}" for i in range(5)])
    params: dict[str, Any] = {"where": {"tag": tag}}
    if query is not None:
        params["query"] = query
    result = peer.call("memory/recall", params)["records"]
    assert [r["id"] for r in result] == ids[::-1]
    _assert_scores(result)


@pytest.mark.spec("4.3")
def test_4_3_recall_ranks_the_relevant_record_first(peer: Peer) -> None:
    tag, ids = _tagged(
        peer,
        [
            "the deploy key rotates every 90 days",
            "lunch is at noon on fridays",
            "the office plants need water",
            "deploy scripts live in the ops repository",
        ],
    )
    result = peer.recall(query="how often does the deploy key rotate?", where={"tag": tag})
    assert result[0]["id"] == ids[0]
    assert ids[1] not in [r["id"] for r in result[:2]]
    _assert_scores(result)


@pytest.mark.spec("5.3")
@pytest.mark.parametrize(
    "query",
    [
        "alpha",
        "alpha beta",
        "beta gamma delta",
        "alpha alpha alpha",
        "gamma",
        "nothing-matches-this",
    ],
)
def test_5_3_scores_descend_within_every_recall(peer: Peer, query: str) -> None:
    tag, _ = _tagged(
        peer,
        [
            "alpha",
            "alpha beta",
            "alpha beta gamma",
            "beta gamma delta epsilon",
            "gamma gamma gamma",
            "delta alpha",
            "unrelated words entirely",
        ],
    )
    result = peer.recall(query=query, where={"tag": tag}, limit=20)
    _assert_scores(result)
    if query == "nothing-matches-this":
        assert result == []


@pytest.mark.spec("4.3")
def test_4_3_limit_caps_the_result_and_a_default_applies(peer: Peer) -> None:
    tag, ids = _tagged(peer, [f"limited record {i}" for i in range(14)])
    assert len(peer.recall(where={"tag": tag}, limit=3)) == 3
    assert len(peer.recall(query="limited record", where={"tag": tag}, limit=5)) == 5
    default = peer.recall(where={"tag": tag})
    assert 1 <= len(default) <= len(ids)
    assert [r["id"] for r in default] == ids[::-1][: len(default)]


@pytest.mark.spec("4.3")
@pytest.mark.parametrize("limit", [-1, 1.5, "3", True])
def test_4_3_a_limit_that_is_not_a_non_negative_integer_is_32602(peer: Peer, limit: Any) -> None:
    assert rpc_error(peer, "memory/recall", {"limit": limit}).code == -32602


@pytest.mark.spec("4.3")
def test_4_3_min_score_drops_what_scores_below_it(peer: Peer) -> None:
    tag, ids = _tagged(
        peer,
        [
            "walrus walrus walrus tusks",
            "a walrus",
            "a long sentence that mentions walrus once among many others",
        ],
    )
    everything = peer.recall(query="walrus tusks", where={"tag": tag})
    assert len(everything) == 3
    scores = [r["score"] for r in everything]
    at_zero = peer.recall(query="walrus tusks", where={"tag": tag}, min_score=0)
    assert {r["id"] for r in at_zero} == set(ids)
    assert peer.recall(query="walrus tusks", where={"tag": tag}, min_score=1.01) == []
    assert scores[0] - scores[-1] > 0.01
    threshold = (scores[0] + scores[-1]) / 2
    kept = peer.recall(query="walrus tusks", where={"tag": tag}, min_score=threshold)
    assert kept
    assert all(r["score"] >= threshold for r in kept)
    assert everything[0]["id"] in [r["id"] for r in kept]
    assert everything[-1]["id"] not in [r["id"] for r in kept]


@pytest.mark.spec("4.3")
def test_4_3_recall_with_no_match_is_empty_not_an_error(peer: Peer) -> None:
    tag, _ = _tagged(peer, ["something"])
    assert peer.recall(query="xylophone", where={"tag": tag}) == []


def _made_up_word(length: int) -> str:
    """A word of distinct consonants no other test writes, which the analyser keeps as
    it is (no vowel, no suffix a stemmer would take off)."""
    letters = random.Random(uid()).sample("bcdfghjlmnpqrtvwxz", length - 1)
    return "".join(letters) + "k"


@pytest.mark.spec("4.3")
def test_4_3_a_misspelt_word_finds_the_indexed_word_one_edit_away(peer: Peer) -> None:
    """A query word of five letters or more that no record holds is read as the indexed
    word one edit away (substitution, swap of neighbours, deletion, insertion) starting
    with the same letter; of two such words, the one more records hold."""
    word = _made_up_word(8)
    popular = word[:4] + "a" + word[5:]  # one substitution from word, held twice as often
    short = _made_up_word(4)
    peer.remember(
        {"content": f"{word} once"},
        {"content": f"{popular} first"},
        {"content": f"{popular} second"},
        {"content": f"{short} tiny"},
    )

    def found(query: str) -> set[str]:
        return {r["content"] for r in peer.recall(query=query, limit=10)}

    word_only = {f"{word} once"}
    assert found(word[:4] + "o" + word[5:]) == {f"{popular} first", f"{popular} second"}
    assert found(word[0] + word[2] + word[1] + word[3:]) == word_only  # neighbours swapped
    assert found(word[:-1]) == word_only  # a letter missing
    assert found(word[:3] + word[3] + word[3:]) == word_only  # a letter doubled
    assert found(word) == word_only  # a word the index holds is taken as it is
    assert found("o" + word[1:]) == set()  # the first letter is never the typo
    assert found(short[:2] + "o" + short[3:]) == set()  # too short to tell from a typo


# --- §5.2 where ----------------------------------------------------------------------------------


@pytest.fixture
def where_records(peer: Peer) -> tuple[str, dict[str, str]]:
    tag = uid("tag")
    session = uid("session")
    rows: dict[str, dict[str, Any]] = {
        "u-red": {"role": "user", "metadata": {"color": "red", "n": 1, "flag": True}},
        "u-blue": {"role": "user", "metadata": {"color": "blue", "n": 2, "flag": False}},
        "a-red": {"role": "assistant", "metadata": {"color": "red", "n": 3, "flag": 1}},
        "t-none": {"role": "tool", "metadata": {"color": None, "n": 1.5}},
        "s-nometa": {"role": "system"},
    }
    ids = peer.remember(
        *(
            {
                "content": f"where probe {name}",
                **row,
                "metadata": {"tag": tag, **row.get("metadata", {})},
            }
            for name, row in rows.items()
        ),
        session=session,
    )
    return tag, dict(zip(ids, rows, strict=True))


def _names(records: list[dict[str, Any]], names: dict[str, str]) -> set[str]:
    return {names[r["id"]] for r in records}


@pytest.mark.spec("5.2")
@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"role": "user"}, {"u-red", "u-blue"}),
        ({"color": "red"}, {"u-red", "a-red"}),
        ({"role": "user", "color": "red"}, {"u-red"}),
        ({"role": ["user", "tool"]}, {"u-red", "u-blue", "t-none"}),
        ({"color": ["blue", "red"], "role": ["assistant", "system"]}, {"a-red"}),
        ({"n": 1}, {"u-red"}),
        ({"n": [2, 1.5]}, {"u-blue", "t-none"}),
        ({"flag": True}, {"u-red"}),
        ({"flag": False}, {"u-blue"}),
        ({"color": "green"}, set()),
        ({"missing_key": "x"}, set()),
        ({"role": []}, set()),
    ],
    ids=lambda value: repr(value) if isinstance(value, dict) else None,
)
def test_5_2_where_is_a_conjunction_of_equalities_on_fields_then_metadata(
    peer: Peer, where_records: tuple[str, dict[str, str]], where: dict[str, Any], expected: set[str]
) -> None:
    """§5.2: equality on record fields, falling back to metadata keys; a list means "any
    of"; keys conjoin. Booleans are not numbers (``flag: true`` never matches ``1``)."""
    tag, names = where_records
    full = {"tag": tag, **where}
    assert _names(peer.recall(where=full, limit=50), names) == expected
    assert _names(peer.recall(query="where probe", where=full, limit=50), names) == expected
    assert _names(peer.timeline(where=full), names) == expected


@pytest.mark.spec("5.2")
def test_5_2_where_on_tier_and_session_fields(peer: Peer) -> None:
    tag = uid("tag")
    session = uid("session")
    working, episodic, semantic = peer.remember(
        {"content": "w", "metadata": {"tag": tag}},
        {"content": "e", "tier": "episodic", "metadata": {"tag": tag}},
        {"content": "s", "tier": "semantic", "metadata": {"tag": tag}},
        session=session,
    )
    assert set(timeline_ids(peer, tag=tag, tier=["episodic", "semantic"])) == {episodic, semantic}
    assert timeline_ids(peer, tag=tag, tier="working") == [working]
    assert set(timeline_ids(peer, tag=tag, session=session)) == {working, episodic, semantic}


@pytest.mark.spec("5.2")
@pytest.mark.parametrize("field", ["created_at", "accessed_at"])
def test_5_2_where_matches_timestamp_fields_too(peer: Peer, field: str) -> None:
    """§5.2: equality tests run against record *fields* first; ``created_at`` and
    ``accessed_at`` are record fields (§3.1), so a record's own value must select it.
    The server only knows a fixed list of columns and looks these up in metadata."""
    tag, ids = _tagged(peer, ["stamped"])
    peer.recall(where={"tag": tag})  # sets accessed_at
    (record,) = peer.timeline(where={"tag": tag})
    assert timeline_ids(peer, tag=tag, **{field: record[field]}) == ids


@pytest.mark.spec("5.2")
@pytest.mark.parametrize("where", [{"k": {"nested": 1}}, {"k": [[1]]}, "role=user", ["role"]])
def test_5_2_a_malformed_where_is_32602(peer: Peer, where: Any) -> None:
    assert rpc_error(peer, "memory/recall", {"where": where}).code == -32602


# --- §4.4 timeline --------------------------------------------------------------------------------


@pytest.mark.spec("4.4")
def test_4_4_timeline_is_ascending_by_created_at(peer: Peer) -> None:
    tag, ids = _tagged(peer, [f"turn {i}" for i in range(6)])
    records = peer.timeline(where={"tag": tag})
    assert [r["id"] for r in records] == ids
    stamps = [r["created_at"] for r in records]
    assert stamps == sorted(stamps)


@pytest.mark.spec("4.4")
@pytest.mark.parametrize("limit", [1, 3, 5])
def test_4_4_timeline_limit_takes_the_newest_still_ascending(peer: Peer, limit: int) -> None:
    tag, ids = _tagged(peer, [f"turn {i}" for i in range(8)])
    assert timeline_ids(peer, tag=tag) == ids
    records = peer.timeline(where={"tag": tag}, limit=limit)
    assert [r["id"] for r in records] == ids[-limit:]


@pytest.mark.spec("4.4")
def test_4_4_timeline_is_creation_order_not_relevance(peer: Peer) -> None:
    """§4.4: timeline MUST NOT be implemented in terms of recall."""
    tag, ids = _tagged(peer, ["orca", "orca orca orca", "nothing", "orca orca"])
    assert timeline_ids(peer, tag=tag) == ids
    assert peer.recall(query="orca", where={"tag": tag})[0]["id"] != ids[0]


@pytest.mark.spec("4.4")
def test_4_4_timeline_carries_no_scores(peer: Peer) -> None:
    tag, _ = _tagged(peer, ["a", "b"])
    assert all("score" not in r for r in peer.timeline(where={"tag": tag}))


# --- §4.5 forget ---------------------------------------------------------------------------------


@pytest.mark.spec("4.5")
@pytest.mark.parametrize(
    "params",
    [{}, {"owner": "someone"}, {"limit": 5}, {"where": {}}, {"where": {}, "query": ""}],
    ids=["empty", "owner-only", "limit-only", "empty-where", "empty-where-and-query"],
)
def test_4_5_forget_without_a_selector_is_32602(peer: Peer, params: dict[str, Any]) -> None:
    tag, ids = _tagged(peer, ["must survive"])
    if peer.binding == "http":
        params = {k: v for k, v in params.items() if k != "owner"}  # scopes is not declared
    assert rpc_error(peer, "memory/forget", params).code == -32602
    assert timeline_ids(peer, tag=tag) == ids


@pytest.mark.spec("4.5")
def test_4_5_forget_by_ids_counts_only_what_it_removed(peer: Peer) -> None:
    tag, ids = _tagged(peer, ["one", "two", "three"])
    result = peer.call("memory/forget", {"ids": [ids[0], ids[2], uid("absent")]})
    assert result == {"forgotten": 2}
    assert timeline_ids(peer, tag=tag) == [ids[1]]
    assert peer.call("memory/forget", {"ids": [ids[0]]}) == {"forgotten": 0}
    assert peer.call("memory/forget", {"ids": []}) == {"forgotten": 0}


@pytest.mark.spec("4.5")
def test_4_5_forget_by_where(peer: Peer) -> None:
    tag, ids = _tagged(peer, ["keep", "drop"])
    peer.remember({"content": "also drop", "metadata": {"tag": tag, "drop": True}})
    assert peer.call("memory/forget", {"where": {"tag": tag, "drop": True}}) == {"forgotten": 1}
    assert peer.call("memory/forget", {"where": {"tag": tag}, "ids": [ids[1]]}) == {"forgotten": 1}
    assert timeline_ids(peer, tag=tag) == [ids[0]]


@pytest.mark.spec("4.5")
def test_4_5_forget_by_query(peer: Peer) -> None:
    tag, ids = _tagged(peer, ["the narwhal tusk", "a different animal", "narwhal migration"])
    forgotten = peer.call("memory/forget", {"query": "narwhal", "where": {"tag": tag}})["forgotten"]
    assert forgotten == 2
    assert timeline_ids(peer, tag=tag) == [ids[1]]


@pytest.mark.spec("4.5")
def test_4_5_forgotten_records_are_gone_everywhere(peer: Peer) -> None:
    key = f"{uid('forget')}/k"
    tag, (record_id,) = _tagged(peer, ["an ibex on the ridge"], key=key)
    assert peer.call("memory/forget", {"ids": [record_id]}) == {"forgotten": 1}
    assert peer.recall(query="ibex ridge", where={"tag": tag}) == []
    assert peer.timeline(where={"tag": tag}) == []
    assert peer.call("memory/fetch", {"key": key}) == {"record": None}


# --- multilingual lexical recall -----------------------------------------------------------------

MULTILINGUAL = {
    "french": (
        "Le café est très chaud à Zürich ce matin",
        ["café", "cafe", "tres", "Zurich", "ZÜRICH"],
    ),
    "spanish": ("La niña comió piñata en Málaga", ["niña", "nina", "malaga", "piñata"]),
    "german": ("Die Straße führt über die Brücke", ["Brücke", "brucke", "fuhrt"]),
    "russian": ("Москва — столица России, город на реке", ["Москва", "москва", "столица", "РЕКЕ"]),
    "greek": ("Η Αθήνα είναι η πρωτεύουσα της Ελλάδας", ["Αθήνα", "αθήνα", "ΑΘΉΝΑ", "πρωτεύουσα"]),
    "chinese": ("我喜欢在北京吃烤鸭和饺子", ["北京", "烤鸭", "饺子", "北京烤鸭"]),
    "japanese": ("東京タワーは夜になると赤く光ります", ["東京", "タワー", "東京タワー", "赤く"]),
    "korean": ("서울은 한국의 수도입니다", ["서울은", "한국의", "수도입니다"]),
}


@pytest.mark.spec("5.1")
@pytest.mark.parametrize("language", sorted(MULTILINGUAL))
def test_text_in_every_script_is_found_by_a_query_in_that_script(peer: Peer, language: str) -> None:
    """Issue 2: accented Latin (with and without the accents), Cyrillic, Greek and CJK text
    is found by a query in the same script, ranked above unrelated text."""
    content, queries = MULTILINGUAL[language]
    others = [text for name, (text, _) in MULTILINGUAL.items() if name != language]
    tag, ids = _tagged(peer, [*others, content])
    target = ids[-1]
    for query in queries:
        result = peer.recall(query=query, where={"tag": tag})
        assert result, f"{language}: {query!r} found nothing"
        assert result[0]["id"] == target, (
            f"{language}: {query!r} ranked {result[0]['content']!r} first"
        )
