"""What the adapter's batched and paged calls cost, counted by a transport passing every
request to the bundled server in process, as the client README and docs/adapters.md
state it:

- a batch of up to L' keys (``max_recall_limit``, less one where the server declares
  ``scopes``, since owners may share a key) is three calls; in process the bundled server
  declares ``scopes``, so 999 entries are three calls there and a thousand are four;
- ``list(limit, cursor=…)`` is one ``memory/timeline`` page, and more only while entries
  filtered here leave the page short, at most ``MAX_CALLS_PER_PAGE`` (10);
- ``iter_entries(page_size=P)`` sends one ``memory/timeline`` per page as iteration
  reaches it, and nothing before."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from a2m import A2MClient
from a2m.adapter import MAX_CALLS_PER_PAGE, A2MAdapter
from a2m.transports import InProcessTransport, Transport
from a2m_server import A2MServer
from a2m_server.config import LimitsConfig, ServerConfig


class Counting(Transport):
    """Every request's method, then the in-process server's answer."""

    def __init__(self, server: A2MServer) -> None:
        self.inner = InProcessTransport(server)
        self.sent: list[str] = []

    def handle_request(self, request: dict[str, Any], *, timeout: float | None) -> dict[str, Any]:
        self.sent.append(request["method"])
        return self.inner.handle_request(request, timeout=timeout)

    def close(self) -> None:
        self.inner.close()

    def taken(self) -> list[str]:
        """The methods sent since the last look."""
        sent, self.sent = self.sent, []
        return sent


@pytest.fixture
def wire() -> Iterator[tuple[Counting, A2MClient]]:
    with A2MServer() as server:
        transport = Counting(server)
        with A2MClient(transport=transport) as client:
            client.describe()
            transport.taken()
            yield transport, client


def test_a_cursor_page_stops_after_ten_calls_when_filtering_here_leaves_it_short(
    wire: tuple[Counting, A2MClient],
) -> None:
    transport, client = wire
    assert MAX_CALLS_PER_PAGE == 10
    kid = A2MAdapter(client, "acme/wf/kid")
    kid.write_many([{"key": f"k{n:03d}", "type": "semantic", "value": n} for n in range(200)])
    parent = A2MAdapter(client, "acme/wf")
    parent.write("mine", "semantic", "the parent's own entry")
    transport.taken()

    # The parent's exact namespace excludes the child's entries, which the server's key
    # prefix takes in: each page of five is filtered to nothing here.
    page = parent.list(limit=5, cursor="")
    assert page.entries == []
    assert page.next_cursor is not None  # short, not the end
    assert transport.taken() == ["memory/timeline"] * MAX_CALLS_PER_PAGE

    keys: list[str] = []
    cursor = page.next_cursor
    while cursor is not None:
        page = parent.list(limit=5, cursor=cursor)
        keys += [entry.key for entry in page.entries]
        cursor = page.next_cursor
    assert keys == ["mine"]  # paging on reaches it
    assert 1 <= len(transport.taken()) <= MAX_CALLS_PER_PAGE * 4

    whole = kid.list(limit=5, cursor="")  # nothing filtered here: one call
    assert [entry.key for entry in whole.entries] == [f"k{n:03d}" for n in range(5)]
    assert transport.taken() == ["memory/timeline"]


def test_iter_entries_sends_one_timeline_per_page_as_iteration_reaches_it(
    wire: tuple[Counting, A2MClient],
) -> None:
    transport, client = wire
    adapter = A2MAdapter(client, "acme/iter")
    adapter.write_many([{"key": f"k{n:02d}", "type": "semantic", "value": n} for n in range(25)])
    transport.taken()

    entries = adapter.iter_entries(page_size=10)
    assert transport.taken() == []  # nothing is sent until iteration starts
    first = next(entries)
    assert first.key == "k00"
    assert transport.taken() == ["memory/timeline"]
    rest = [next(entries).key for _ in range(9)]
    assert rest == [f"k{n:02d}" for n in range(1, 10)]
    assert transport.taken() == []  # the first page is still being read
    assert next(entries).key == "k10"
    assert transport.taken() == ["memory/timeline"]
    remaining = [entry.key for entry in entries]
    assert remaining == [f"k{n:02d}" for n in range(11, 25)]
    assert transport.taken() == ["memory/timeline"]  # the third, last page: ⌈25/10⌉ in all


@pytest.fixture
def server() -> Iterator[A2MServer]:
    with A2MServer() as server:
        yield server


@pytest.mark.parametrize(
    ("count", "timelines_first"),
    [(999, 1), (1000, 2)],  # L' = 999: a full page of 1000 is asked for again in halves
)
def test_a_batch_costs_three_calls_up_to_l_prime(
    server: A2MServer, count: int, timelines_first: int
) -> None:
    transport = Counting(server)
    with A2MClient(transport=transport) as client:
        assert client.supports("scopes")
        transport.taken()
        adapter = A2MAdapter(client, "acme/batch")
        batch = [{"key": f"k{n:04d}", "type": "semantic", "value": n} for n in range(count)]
        assert len(adapter.write_many(batch)) == count
        assert transport.taken() == [
            *["memory/timeline"] * timelines_first,
            "memory/remember",
            "memory/timeline",
        ]


def test_a_query_is_one_recall_and_a_timeline_when_filtered_here(
    wire: tuple[Counting, A2MClient],
) -> None:
    """``query(...)``: one ``memory/recall``; a ``memory/timeline`` by id for the winners'
    vectors when the query was filtered here (``tags``, an exact ``namespace``)."""
    transport, client = wire
    adapter = A2MAdapter(client, "acme/asked")
    adapter.write("plan", "semantic", "ship the translator", meta={"tags": ["goal"]})
    A2MAdapter(client, "acme/asked/kid").write("plan", "semantic", "ship the kid's translator")
    transport.taken()

    assert len(adapter.query(text="translator")) == 2  # every namespace: the server filters
    assert transport.taken() == ["memory/recall"]
    assert [hit.entry.namespace for hit in adapter.query(text="translator", tags=["goal"])] == [
        "acme/asked"
    ]
    assert transport.taken() == ["memory/recall", "memory/timeline"]
    exact = adapter.query(text="translator", namespace="acme/asked")
    assert [hit.entry.namespace for hit in exact] == ["acme/asked"]
    assert transport.taken() == ["memory/recall", "memory/timeline"]
    assert adapter.filter_operators()  # what describe declared: no call
    assert transport.taken() == []


def test_a_listing_by_offset_reads_the_whole_listing_a_page_of_l_at_a_time() -> None:
    """``list(limit, offset)`` against a server paging by cursor: ``⌈n/L⌉`` timelines, for
    the exact ``total``."""
    with A2MServer(ServerConfig(limits=LimitsConfig(max_recall_limit=10))) as server:
        transport = Counting(server)
        with A2MClient(transport=transport) as client:
            adapter = A2MAdapter(client, "acme/offset")
            adapter.write_many(
                [{"key": f"k{n:02d}", "type": "semantic", "value": n} for n in range(25)]
            )
            transport.taken()
            page = adapter.list(limit=5, offset=20)
            assert [entry.key for entry in page.entries] == [f"k{n:02d}" for n in range(20, 25)]
            assert page.total == 25
            assert transport.taken() == ["memory/timeline"] * 3  # ⌈25/10⌉
