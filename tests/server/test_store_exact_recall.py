"""Recall is exact about what exists, on both stores: whatever the store caches about its
terms, a recall answers as a store without a cache would. A word searched for before any
record held it is found once written; forgotten records are never returned; and under
concurrent writers no recall fails (cached figures from one snapshot once exceeded
another's totals and BM25's logarithm failed with a math domain error)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a2m_server import A2MServer
from a2m_server.text import index_terms, query_terms

# Words no stop list holds, each more than one edit from every other, so the typo
# correction never turns one into another.
WORDS = ("walrus", "quokka", "narwhal", "okapi", "tapir", "gecko", "ibis", "axolotl")
# Query words no record ever holds: one near a stored word (a typo), one far from all.
ABSENT = ("walrux", "pangolin")
GROUPS = ("red", "blue")


def test_a_word_searched_before_it_was_written_is_found(store_backend: str) -> None:
    with A2MServer() as server:
        peer = server.connect()
        assert peer.call("memory/recall", {"query": "walrus"})["records"] == []
        written = peer.call("memory/remember", {"records": [{"content": "a walrus swims"}]})
        found = peer.call("memory/recall", {"query": "walrus"})["records"]
        assert [r["id"] for r in found] == written["ids"]
        # A correction cached while only "walrus" was held does not hide a new exact word.
        assert [r["id"] for r in peer.call("memory/recall", {"query": "walrux"})["records"]] == (
            written["ids"]
        )
        more = peer.call("memory/remember", {"records": [{"content": "a walrux too"}]})
        found = peer.call("memory/recall", {"query": "walrux"})["records"]
        assert more["ids"][0] in [r["id"] for r in found]


def test_a_forgotten_word_is_not_found(store_backend: str) -> None:
    with A2MServer() as server:
        peer = server.connect()
        ids = peer.call("memory/remember", {"records": [{"content": "the okapi hides"}]})["ids"]
        assert len(peer.call("memory/recall", {"query": "okapi"})["records"]) == 1
        peer.call("memory/forget", {"ids": ids})
        assert peer.call("memory/recall", {"query": "okapi"})["records"] == []
        again = peer.call("memory/remember", {"records": [{"content": "an okapi again"}]})["ids"]
        assert [r["id"] for r in peer.call("memory/recall", {"query": "okapi"})["records"]] == (
            again
        )


def test_a_typo_guess_never_pushes_out_a_record_holding_a_word_as_given(
    store_backend: str,
) -> None:
    """ "walrux" is no record's word, so its correction "walrus" is searched too; but every
    record holding "gecko" or "axolotl" as asked comes first, even where those words are
    so common that their BM25 weight is nil, and the guesses fill what is left, their
    scores no higher than the last record found by what was asked."""
    contents = [
        "okapi sea",
        "the axolotl",
        "narwhal walrus quokka okapi sea",
        "axolotl",
        "sea tapir walrus",
        "ibis axolotl walrus tapir gecko",
        "okapi walrus tapir axolotl quokka",
        "quokka walrus",
    ]
    with A2MServer() as server:
        peer = server.connect()
        for content in contents:  # one call each: the newest are the walrus-only ones
            peer.call("memory/remember", {"records": [{"content": content}]})
        asked = {c for c in contents if {"gecko", "axolotl"} & set(c.split())}
        for limit in (len(asked), len(asked) + 2, 20):
            found = peer.call("memory/recall", {"query": "gecko axolotl walrux", "limit": limit})[
                "records"
            ]
            texts = [r["content"] for r in found]
            assert set(texts[: len(asked)]) == asked, (limit, texts)
            guesses = texts[len(asked) :]
            assert all("walrus" in t.split() and not asked & {t} for t in guesses)
            assert len(found) == min(limit, len(asked) + 3)
            scores = [r["score"] for r in found]
            assert scores == sorted(scores, reverse=True)


class World:
    """One store and a brute-force account of what it holds."""

    def __init__(self, server: A2MServer) -> None:
        self.server = server
        self.peer = server.connect()
        # id -> (index terms, group)
        self.alive: dict[str, tuple[frozenset[str], str]] = {}

    def remember(self, contents: list[tuple[str, str]]) -> None:
        records = [{"content": text, "metadata": {"colour": group}} for text, group in contents]
        ids = self.peer.call("memory/remember", {"records": records})["ids"]
        for record_id, (text, group) in zip(ids, contents, strict=True):
            self.alive[record_id] = (frozenset(index_terms(text)), group)

    def forget(self, picks: list[int]) -> None:
        if not self.alive:
            return
        known = sorted(self.alive)
        ids = sorted({known[p % len(known)] for p in picks})
        self.peer.call("memory/forget", {"ids": ids})
        for record_id in ids:
            del self.alive[record_id]

    def recall(self, words: list[str], group: str | None, limit: int) -> None:
        query = " ".join(words)
        params: dict[str, Any] = {"query": query, "limit": limit}
        if group is not None:
            params["where"] = {"colour": group}
        found = [r["id"] for r in self.peer.call("memory/recall", params)["records"]]
        terms = set(query_terms(query))
        expected = {
            record_id
            for record_id, (held, in_group) in self.alive.items()
            if held & terms and (group is None or in_group == group)
        }
        assert len(found) == len(set(found)), found
        assert set(found) <= set(self.alive), "a forgotten record was recalled"
        if group is not None:
            assert all(self.alive[i][1] == group for i in found), "the filter was not applied"
        if len(expected) <= limit:
            missing = expected - set(found)
            assert not missing, f"{query!r} (where {group}) missed {len(missing)} record(s)"
        else:
            assert len(found) == limit
        # A record found only through a typo's guess never comes before one holding a
        # query word as given.
        holders = min(len(expected), limit)
        assert set(found[:holders]) == set(found) & expected, (
            f"{query!r} (where {group}) ranked a guess before a record holding a word asked for"
        )


@pytest.fixture
def world(store_backend: str) -> Iterator[World]:
    with A2MServer() as server:
        yield World(server)


sentence = st.lists(st.sampled_from((*WORDS, "the", "and", "sea")), min_size=1, max_size=5).map(
    " ".join
)
operation = st.one_of(
    st.tuples(
        st.just("remember"),
        st.lists(st.tuples(sentence, st.sampled_from(GROUPS)), min_size=1, max_size=6),
    ),
    st.tuples(st.just("forget"), st.lists(st.integers(0, 1000), min_size=1, max_size=3)),
    st.tuples(
        st.just("recall"),
        st.tuples(
            st.lists(st.sampled_from(WORDS + ABSENT), min_size=1, max_size=3),
            st.one_of(st.none(), st.sampled_from(GROUPS)),
            st.integers(1, 40),
        ),
    ),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operations=st.lists(operation, min_size=1, max_size=25))
def test_recall_never_misses_a_record_holding_a_query_term(
    world: World, operations: list[tuple[str, Any]]
) -> None:
    """Interleaved writes, forgets and one- and many-word recalls, each recall checked
    against the brute-force account. The store lives across examples, so each example
    also starts from whatever the ones before left (and whatever they left cached)."""
    for kind, argument in operations:
        if kind == "remember":
            world.remember(argument)
        elif kind == "forget":
            world.forget(argument)
        else:
            world.recall(*argument)


@pytest.mark.timeout(120)
def test_concurrent_writers_and_readers_see_no_error(store_backend: str, tmp_path: Path) -> None:
    """Writers and readers on one file store for a few seconds, every recall sharing a
    word with every record (past the posting budget, so its share is rescored from
    counted figures): not one call fails, and every recall finds records."""
    seconds = 4.0
    with A2MServer(db=tmp_path / "busy.db") as server:
        seed = server.connect()
        for start in range(0, 2500, 250):
            seed.call(
                "memory/remember",
                {"records": [{"content": f"shared walrus note {start + n}"} for n in range(250)]},
            )
        errors: list[BaseException] = []
        calls = [0]
        deadline = time.monotonic() + seconds
        lock = threading.Lock()

        def writer(number: int) -> None:
            peer = server.connect()
            rng = random.Random(number)
            written: list[str] = []
            while time.monotonic() < deadline and not errors:
                try:
                    if written and rng.random() < 0.3:
                        peer.call("memory/forget", {"ids": [written.pop(0)]})
                    else:
                        words = " ".join(rng.choices(WORDS, k=3))
                        records = [{"content": f"walrus {words}"} for _ in range(rng.randint(1, 5))]
                        written += peer.call("memory/remember", {"records": records})["ids"]
                except BaseException as error:
                    errors.append(error)
                with lock:
                    calls[0] += 1

        def reader(number: int) -> None:
            peer = server.connect()
            rng = random.Random(100 + number)
            while time.monotonic() < deadline and not errors:
                try:
                    query = " ".join(["walrus", *rng.choices(WORDS, k=rng.randint(0, 2))])
                    found = peer.call("memory/recall", {"query": query, "limit": 5})["records"]
                    assert found, query
                except BaseException as error:
                    errors.append(error)
                with lock:
                    calls[0] += 1

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
        threads += [threading.Thread(target=reader, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=seconds + 60)
        assert not any(thread.is_alive() for thread in threads)
        assert not errors, errors[:3]
        assert calls[0] > 20


def test_a_word_of_any_length_is_found_again(store_backend: str) -> None:
    """A word past PostgreSQL's 2,046-byte lexeme limit is indexed (as a digest of it)
    and found, as SQLite finds it; forget(query=) deletes just that record."""
    long_word = "q" * 2100
    wide_word = "é" * 1100  # 2,200 bytes in UTF-8
    with A2MServer() as server, server.connect() as peer:
        peer.call(
            "memory/remember",
            {"records": [
                {"content": f"prefix {long_word}", "key": "long"},
                {"content": f"{wide_word} suffix", "key": "wide"},
                {"content": "unrelated words", "key": "other"},
            ]},
        )  # fmt: skip
        for word, key in ((long_word, "long"), (wide_word, "wide")):
            found = peer.call("memory/recall", {"query": word, "limit": 5})["records"]
            assert [r["key"] for r in found] == [key]
        assert peer.call("memory/forget", {"query": long_word})["forgotten"] == 1
        left = {r["key"] for r in peer.call("memory/timeline", {})["records"]}
        assert left == {"wide", "other"}
