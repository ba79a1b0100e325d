"""The contract's checks of batched calls (``write_many``, ``read_many``, ``delete_many``),
written once for sync and async adapters (see :mod:`._driver`)."""

from __future__ import annotations

from typing import Any

from ._driver import Handle, Scenario
from ._entries import as_entry, check_entry, instant
from ._scenarios import MIDDLE, NEAR

__all__ = ["BATCH_SIZE"]

BATCH_SIZE = 250
"""Entries in the large-batch scenario: more than one call of most per-item designs."""


def _entries(found: Any) -> dict[str, dict[str, Any]]:
    assert isinstance(found, dict), f"read_many returns a dict by key, got {found!r}"
    return {key: as_entry(entry) for key, entry in found.items()}


def write_many_returns_the_entries_in_order(adapter: Handle) -> Scenario:
    batch: list[dict[str, Any]] = [
        {"key": "user/goal", "type": "semantic", "value": "Ship the translator", "embedding": NEAR},
        {"key": "turn/1", "type": "episodic", "value": {"said": "hello"}, "meta": {"tags": ["t"]}},
        {"key": "steps", "type": "procedural", "value": ["open", "export"], "embedding": MIDDLE},
    ]
    written = yield adapter.write_many(batch)
    assert isinstance(written, list), f"write_many returns a list, got {written!r}"
    assert len(written) == 3, f"write_many returns one entry per entry given, got {written!r}"
    for given, entry in zip(batch, written, strict=True):
        check_entry(
            entry,
            key=given["key"],
            namespace=adapter.namespace,
            type=given["type"],
            value=given["value"],
            embedding=given.get("embedding"),
        )
    assert len({as_entry(entry)["id"] for entry in written}) == 3, "three entries, three ids"
    assert as_entry(written[1])["meta"]["tags"] == ["t"]
    read = _entries((yield adapter.read_many([given["key"] for given in batch])))
    assert sorted(read) == sorted(given["key"] for given in batch)
    for entry in written:
        found = read[as_entry(entry)["key"]]
        assert found["id"] == as_entry(entry)["id"], "read_many reads what write_many wrote"


def write_many_is_atomic(adapter: Handle) -> Scenario:
    yield adapter.write("keep", "semantic", "written before")
    batch = [
        {"key": "a", "type": "semantic", "value": "first"},
        {"key": "keep", "type": "semantic", "value": "overwritten?"},
        {"key": "bad", "type": "memo", "value": "not one of the five types"},
        {"key": "b", "type": "semantic", "value": "last"},
    ]
    refused: Exception | None = None
    try:
        yield adapter.write_many(batch)
    except Exception as error:
        refused = error
    assert refused is not None, "a batch with an invalid entry is refused"
    read = _entries((yield adapter.read_many(["a", "keep", "bad", "b"])))
    assert sorted(read) == ["keep"], f"a refused batch writes nothing, found {sorted(read)}"
    assert read["keep"]["value"] == "written before", "a refused batch replaces nothing"
    missing_key: Exception | None = None
    try:
        yield adapter.write_many([{"key": "c", "type": "semantic", "value": 1}, {"type": "x"}])
    except Exception as error:
        missing_key = error
    assert missing_key is not None, "an entry without a key is refused"
    assert (yield adapter.read("c")) is None, "a refused batch writes nothing"


def write_many_replaces_keeping_id_and_created_at(adapter: Handle) -> Scenario:
    first = as_entry((yield adapter.write("user/city", "semantic", "Paris")))
    written = yield adapter.write_many(
        [
            {"key": "user/city", "type": "semantic", "value": "Lisbon"},
            {"key": "user/lang", "type": "semantic", "value": "pt"},
        ]
    )
    city = as_entry(written[0])
    assert city["id"] == first["id"], "a batched upsert keeps the entry's id"
    assert instant(city["meta"]["created_at"]) == instant(first["meta"]["created_at"])
    assert city["value"] == "Lisbon"
    assert as_entry((yield adapter.read("user/city")))["value"] == "Lisbon"


def a_key_given_twice_keeps_its_last_value(adapter: Handle) -> Scenario:
    written = yield adapter.write_many(
        [
            {"key": "k", "type": "semantic", "value": "first"},
            {"key": "k", "type": "semantic", "value": "second"},
        ]
    )
    assert [as_entry(entry)["value"] for entry in written] == ["second", "second"]
    assert as_entry((yield adapter.read("k")))["value"] == "second"


def a_large_batch_is_written_whole(adapter: Handle) -> Scenario:
    batch: list[dict[str, Any]] = [
        {"key": f"item/{n:04d}", "type": "semantic", "value": {"n": n}} for n in range(BATCH_SIZE)
    ]
    written = yield adapter.write_many(batch)
    assert [as_entry(e)["key"] for e in written] == [e["key"] for e in batch]
    read = _entries((yield adapter.read_many([e["key"] for e in batch])))
    assert len(read) == BATCH_SIZE, f"wrote {BATCH_SIZE}, read back {len(read)}"
    assert all(read[f"item/{n:04d}"]["value"] == {"n": n} for n in range(BATCH_SIZE))


def read_many_leaves_out_missing_keys(adapter: Handle) -> Scenario:
    yield adapter.write("here", "semantic", "present", NEAR)
    read = _entries((yield adapter.read_many(["here", "never/written"])))
    assert sorted(read) == ["here"], "a key that holds nothing is absent from read_many"
    check_entry(
        read["here"],
        key="here",
        namespace=adapter.namespace,
        type="semantic",
        value="present",
        embedding=NEAR,
    )


def delete_many_returns_how_many_went(adapter: Handle) -> Scenario:
    yield adapter.write_many([{"key": k, "type": "semantic", "value": k} for k in ("a", "b", "c")])
    gone = yield adapter.delete_many(["a", "b", "never/written"])
    assert gone == 2, f"two entries existed among the keys; delete_many said {gone}"
    read = _entries((yield adapter.read_many(["a", "b", "c"])))
    assert sorted(read) == ["c"]
    assert (yield adapter.delete_many(["a", "b"])) == 0, "deleting twice deletes nothing"


def empty_batches_do_nothing(adapter: Handle) -> Scenario:
    assert (yield adapter.write_many([])) == []
    assert (yield adapter.read_many([])) == {}
    assert (yield adapter.delete_many([])) == 0


def batches_stay_in_their_namespace(adapter: Handle, other: Handle) -> Scenario:
    path = adapter.namespace[len(other.namespace) + 1 :]
    yield adapter.write_many([{"key": "note", "type": "semantic", "value": "the agent's"}])
    yield other.write_many([{"key": "note", "type": "semantic", "value": "the workflow's"}])
    assert (yield other.delete_many(["nothing", f"{path}/note"])) == 0, (
        f"an adapter scoped to {other.namespace!r} deleted an entry of {adapter.namespace!r}"
    )
    mine = _entries((yield adapter.read_many(["note"])))
    theirs = _entries((yield other.read_many(["note"])))
    assert mine["note"]["value"] == "the agent's"
    assert theirs["note"]["value"] == "the workflow's"
    across = _entries((yield other.read_many(["note"], namespace=adapter.namespace)))
    assert across["note"]["value"] == "the agent's", "reads cross namespaces, by name"
