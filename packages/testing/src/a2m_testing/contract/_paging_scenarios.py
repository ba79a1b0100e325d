"""The contract's checks of complete listing and of ``where`` filters: ``list`` by offset
and by cursor, ``iter_entries``, and operators on record fields and metadata, written once
for sync and async adapters (see :mod:`._driver`)."""

from __future__ import annotations

from typing import Any

from ._driver import Handle, Scenario
from ._entries import as_entry, as_hits, instant

__all__ = ["LARGE_LISTING"]

LARGE_LISTING = 5000
"""Entries in the paging scenario: five times what one bundled-server call carries."""
_PAGE = 500
_MAX_PAGES = 4 * LARGE_LISTING // _PAGE
"""A listing that needs more pages than this is looping."""


def _page(result: Any) -> tuple[list[dict[str, Any]], Any]:
    """A list result's entries (as dicts) and its ``next_cursor``."""
    dump = getattr(result, "model_dump", None)
    if callable(dump):
        result = dump(mode="json")
    assert isinstance(result, dict), f"list returns a page ({{entries, …}}), got {result!r}"
    return [as_entry(entry) for entry in result["entries"]], result.get("next_cursor")


def _keys(entries: list[dict[str, Any]]) -> list[str]:
    return [entry["key"] for entry in entries]


def _oldest_first(entries: list[dict[str, Any]]) -> None:
    stamps = [instant(entry["meta"]["created_at"]) for entry in entries]
    assert stamps == sorted(stamps), "a listing is oldest first"


def listing_by_cursor_is_complete_and_stable(adapter: Handle) -> Scenario:
    originals = [f"e/{n:05d}" for n in range(LARGE_LISTING)]
    yield adapter.write_many([{"key": k, "type": "semantic", "value": k} for k in originals])
    seen: list[dict[str, Any]] = []
    deleted: set[str] = set()
    late: list[str] = []
    cursor: Any = ""
    pages = 0
    while cursor is not None:
        page, cursor = _page((yield adapter.list(limit=_PAGE, cursor=cursor)))
        seen += page
        pages += 1
        assert pages <= _MAX_PAGES, f"{pages} pages of {_PAGE} for {LARGE_LISTING} entries"
        if pages * _PAGE >= LARGE_LISTING:
            continue  # the writer stops, so the listing can reach its end
        # Another writer at work between pages: new entries, replacements of entries
        # listed and not yet listed, and a delete of one not yet listed.
        ahead = originals[pages * _PAGE + 7]
        behind = originals[(pages - 1) * _PAGE]
        new = [f"late/{pages:03d}/{n}" for n in range(5)]
        late += new
        yield adapter.write_many(
            [{"key": k, "type": "semantic", "value": k} for k in new]
            + [{"key": k, "type": "semantic", "value": f"{k} again"} for k in (ahead, behind)]
        )
        doomed = originals[LARGE_LISTING - pages]
        yield adapter.delete_many([doomed])
        deleted.add(doomed)
    keys = _keys(seen)
    assert len(keys) == len(set(keys)), "no entry is listed twice"
    missing = [k for k in originals if k not in deleted and k not in set(keys)]
    assert not missing, f"{len(missing)} entries present throughout were not listed: {missing[:5]}"
    assert not deleted & set(keys), "an entry deleted before its page came is not listed"
    _oldest_first(seen)
    assert [k for k in keys if k.startswith("late/")] == late, (
        "entries written after the cursor's position are listed, in the order written"
    )
    last_original = max(i for i, k in enumerate(keys) if k.startswith("e/"))
    assert all(k.startswith("late/") for k in keys[last_original + 1 :])
    assert all(not k.startswith("late/") for k in keys[: last_original + 1]), (
        "entries written during the listing come after every older one"
    )


def iter_entries_yields_every_entry_once(adapter: Handle) -> Scenario:
    keys = [f"it/{n:04d}" for n in range(1234)]
    yield adapter.write_many(
        [{"key": k, "type": "episodic", "value": {"n": n}} for n, k in enumerate(keys)]
    )
    entries, iterator = yield adapter.iter_entries(page_size=100)
    listed = _keys([as_entry(entry) for entry in entries])
    assert listed == keys, "iter_entries yields every entry once, oldest first"
    assert getattr(iterator, "truncated", False) is False, "a complete listing is not truncated"
    only, _ = yield adapter.iter_entries(type="semantic")
    assert only == [], "type narrows the listing"


def list_by_offset_is_complete(adapter: Handle) -> Scenario:
    keys = [f"off/{n:04d}" for n in range(1203)]
    yield adapter.write_many(
        [{"key": k, "type": "semantic", "value": n} for n, k in enumerate(keys)]
    )
    collected: list[str] = []
    offset: Any = 0
    while offset is not None:
        result = yield adapter.list(limit=_PAGE, offset=offset)
        page, _ = _page(result)
        dumped = result.model_dump() if hasattr(result, "model_dump") else result
        assert dumped["total"] == len(keys), "the total counts every entry"
        collected += _keys(page)
        offset = dumped["next_offset"]
    assert collected == keys


def _scored(n: int) -> dict[str, Any]:
    meta: dict[str, Any] = {"team": "red" if n % 2 else "blue", "nested": {"level": n % 3}}
    if n % 5:
        meta["score"] = n
    return {"key": f"f/{n:02d}", "type": "semantic", "value": f"note {n}", "meta": meta}


def _expected(test: Any) -> list[str]:
    return [entry["key"] for entry in map(_scored, range(20)) if test(entry["meta"])]


FILTERS: dict[str, tuple[dict[str, Any], Any]] = {
    "$gte": ({"score": {"$gte": 14}}, lambda m: m.get("score", -1) >= 14),
    "$gt and $lt": ({"score": {"$gt": 3, "$lt": 8}}, lambda m: 3 < m.get("score", -1) < 8),
    "$lte": ({"score": {"$lte": 2}}, lambda m: "score" in m and m["score"] <= 2),
    "$eq": ({"score": {"$eq": 7}}, lambda m: m.get("score") == 7),
    "$ne": ({"team": {"$ne": "red"}}, lambda m: m["team"] != "red"),
    "$in": ({"score": {"$in": [1, 2, 3, 99]}}, lambda m: m.get("score") in (1, 2, 3)),
    "$nin": ({"team": {"$nin": ["blue"]}}, lambda m: m["team"] == "red"),
    "$exists": ({"score": {"$exists": False}}, lambda m: "score" not in m),
    "nested path": ({"metadata.nested.level": 0}, lambda m: m["nested"]["level"] == 0),
    "nested $gt": ({"metadata.nested.level": {"$gt": 1}}, lambda m: m["nested"]["level"] > 1),
    "equality": ({"team": "blue"}, lambda m: m["team"] == "blue"),
    "a string never orders a number": ({"score": {"$gt": "1"}}, lambda m: False),
    "a missing key never matches $gt": ({"absent": {"$gt": 0}}, lambda m: False),
}
"""Each filter of the scenario, and which of the scenario's entries it keeps."""


def where_narrows_listing_and_query(adapter: Handle) -> Scenario:
    yield adapter.write_many([_scored(n) for n in range(20)])
    for name, (where, test) in FILTERS.items():
        expected = _expected(test)
        page, _ = _page((yield adapter.list(where=where)))
        assert _keys(page) == expected, f"list(where=…) with {name}: {where}"
        entries, _ = yield adapter.iter_entries(where=where, page_size=7)
        assert _keys([as_entry(e) for e in entries]) == expected, f"iter_entries with {name}"
        by_cursor, _ = _page((yield adapter.list(where=where, cursor="", limit=100)))
        assert _keys(by_cursor) == expected, f"list(cursor=…) with {name}"
    hits = as_hits((yield adapter.query(text="note", top_k=20, where={"score": {"$gte": 10}})))
    found = sorted(entry["key"] for entry, _ in hits)
    assert found == _expected(lambda m: m.get("score", -1) >= 10), "query(where=…) with $gte"


BAD_FILTERS: dict[str, dict[str, Any]] = {
    "unknown operator": {"score": {"$regex": "^1"}},
    "$gt with an object": {"score": {"$gt": {"n": 1}}},
    "empty $in": {"score": {"$in": []}},
    "empty operator object": {"score": {}},
    "$exists with a number": {"score": {"$exists": 1}},
}
"""Filters that cannot be meant, by the test id they run under."""


def a_bad_filter_or_cursor_is_refused(adapter: Handle) -> Scenario:
    yield adapter.write("kept", "semantic", "still here")
    yield adapter.write("also", "semantic", "here too")
    for name, where in BAD_FILTERS.items():
        for call in (adapter.list(where=where), adapter.query(text="here", where=where)):
            refused: Exception | None = None
            try:
                yield call
            except Exception as error:
                refused = error
            assert refused is not None, f"{call} ({name}) is refused"
    page, issued = _page((yield adapter.list(limit=1, cursor="")))
    assert _keys(page) == ["kept"]
    assert isinstance(issued, str), "a page with more after it has a next_cursor"
    tampered = issued[:-1] + ("B" if issued[-1] != "B" else "C")
    for cursor in ("not-a-cursor", tampered):
        refused = None
        try:
            yield adapter.list(limit=1, cursor=cursor)
        except Exception as error:
            refused = error
        assert refused is not None, f"the cursor {cursor!r} is refused"
    assert as_entry((yield adapter.read("kept")))["value"] == "still here", "nothing was lost"
