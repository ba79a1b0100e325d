"""Generated operation sequences, run on A2MStore and on LangGraph's InMemoryStore side by
side: every read must give the same answer (in the order the interface defines one)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore
from store_kit import WordHashEmbeddings, drop_empty_namespaces, same_ranking, view

from a2m import A2MClient
from a2m_langchain.langgraph import A2MStore
from a2m_server.server import A2MServer

NAMESPACES = [("a",), ("a", "b"), ("a", "B/é"), ("a", "entries"), ("a", "--x"), ("c",)]
WORDS = ["python", "rust", "guide", "async", "memory", "graph"]

keys = st.one_of(
    st.sampled_from(["k", "k/1", "%", "..", "é", "K"]),
    st.text(alphabet="ab/%-é.", max_size=4),
)
values = st.fixed_dictionaries(
    {
        "text": st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
        "n": st.one_of(
            st.integers(-5, 5),
            st.floats(-5, 5, allow_nan=False),
            st.booleans(),
            st.sampled_from(["3", "-1.5", " 2 ", "1e0"]),  # float() takes them: numbers too
        ),
        "tag": st.sampled_from(["red", "blue", None]),
    }
)
filters = st.one_of(
    st.none(),
    st.fixed_dictionaries({"tag": st.sampled_from(["red", "blue", None])}),
    st.builds(
        lambda op, bound: {"n": {op: bound}},
        st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]),
        st.one_of(st.integers(-5, 5), st.sampled_from([0.5, True, False, 1.0])),
    ),
)
namespaces = st.sampled_from(NAMESPACES)
ops = st.one_of(
    st.tuples(st.just("put"), namespaces, keys, values),
    st.tuples(st.just("delete"), namespaces, keys),
    st.tuples(st.just("get"), namespaces, keys),
    st.tuples(
        st.just("search"),
        st.sampled_from([*NAMESPACES, ("a",), ()]),
        filters,
        st.integers(1, 6),
        st.integers(0, 4),
    ),
    st.tuples(st.just("semantic"), st.sampled_from(NAMESPACES), st.sampled_from(WORDS)),
    st.tuples(
        st.just("namespaces"),
        st.sampled_from([None, ("a",), ("a", "*"), ("*", "b")]),
        st.sampled_from([None, ("b",), ("*",)]),
        st.sampled_from([None, 1, 2]),
        st.integers(0, 2),
    ),
)


def _apply(op: tuple[Any, ...], ours: A2MStore, theirs: InMemoryStore) -> None:
    kind = op[0]
    if kind == "put":
        _, namespace, key, value = op
        ours.put(namespace, key, value)
        theirs.put(namespace, key, value)
    elif kind == "delete":
        _, namespace, key = op
        ours.delete(namespace, key)
        theirs.delete(namespace, key)
    elif kind == "get":
        _, namespace, key = op
        assert view([ours.get(namespace, key)]) == view([theirs.get(namespace, key)])
    elif kind == "search":
        _, prefix, filter, limit, offset = op
        got = ours.search(prefix, filter=filter, limit=limit, offset=offset)
        want = theirs.search(prefix, filter=filter, limit=limit, offset=offset)
        if prefix in NAMESPACES and prefix != ("a",):
            assert view(got) == view(want)
        else:  # across namespaces the order is each store's own: compare whole answers
            every = sorted(map(repr, view(ours.search(prefix, filter=filter, limit=200))))
            assert every == sorted(map(repr, view(theirs.search(prefix, filter=filter, limit=200))))
            assert len(got) == len(want)
    elif kind == "semantic":
        _, namespace, query = op
        got = ours.search(namespace, query=query, limit=3)
        want = theirs.search(namespace, query=query, limit=3)
        assert same_ranking(got, want)
    else:
        _, prefix, suffix, depth, offset = op
        drop_empty_namespaces(theirs)
        options = {"prefix": prefix, "suffix": suffix, "max_depth": depth, "offset": offset}
        assert ours.list_namespaces(**options) == theirs.list_namespaces(**options)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(ops, min_size=1, max_size=25))
def test_generated_sequences_match_inmemory(sequence: list[tuple[Any, ...]]) -> None:
    index = {"dims": 64, "embed": WordHashEmbeddings(), "fields": ["text"]}
    with A2MServer() as server, A2MClient.in_process(server) as client:
        ours = A2MStore(client, index=index)  # type: ignore[arg-type]
        theirs = InMemoryStore(index=index)  # type: ignore[arg-type]
        for op in sequence:
            _apply(op, ours, theirs)
