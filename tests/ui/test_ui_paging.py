"""The memory page's keyset pages, newest first, where many records share a millisecond
(one batch): every record exactly once, in order, however the pages fall; and a page
after records of the cursor's millisecond were deleted still starts right after the
cursor's row."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from a2m_server import A2MServer
from a2m_server.store import RecordFilter, StoredRecord
from a2m_server.ui._listing import BadRequest, Filters, read_page, selector_for


@pytest.fixture
def server() -> Iterator[A2MServer]:
    with A2MServer() as running:
        connection = running.connect()
        for batch, size in enumerate((130, 7, 64)):
            records = [{"content": f"b{batch} r{i:03d}", "tier": "episodic"} for i in range(size)]
            connection.call("memory/remember", {"records": records})
        yield running


def _pages(server: A2MServer, limit: int, cursor: str = "") -> Iterator[list[StoredRecord]]:
    ctx = server.connect(transport="http").context
    selector = selector_for(server.protocol, ctx, Filters(), None)
    while True:
        page = read_page(server.protocol, selector, Filters(cursor=cursor), limit=limit)
        yield page.records
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def _newest_first(server: A2MServer) -> list[str]:
    with server.store.reading() as reader:
        return [r.content for r in reader.select(RecordFilter(), order="created_desc")]


@pytest.mark.parametrize("limit", [1, 7, 50, 129, 130, 131, 500])
def test_every_record_once_in_order(server: A2MServer, limit: int) -> None:
    shown = [r.content for page in _pages(server, limit) for r in page]
    assert shown == _newest_first(server)
    assert len(shown) == 201


def test_a_page_after_deletions_in_the_cursors_millisecond(server: A2MServer) -> None:
    ctx = server.connect(transport="http").context
    selector = selector_for(server.protocol, ctx, Filters(), None)
    first = read_page(server.protocol, selector, Filters(), limit=100)
    assert first.next_cursor is not None
    last = first.records[-1]
    # Remove rows shown before the cursor's row, in its millisecond, and the row itself.
    same_ms = [r.id for r in first.records if r.created_at == last.created_at]
    server.connect().call("memory/forget", {"ids": [*same_ms[:5], last.id]})
    second = read_page(server.protocol, selector, Filters(cursor=first.next_cursor), limit=100)
    expected = [c for c in _newest_first(server) if c not in {r.content for r in first.records}]
    assert [r.content for r in second.records] == expected[:100]


def test_a_cursor_of_another_principal_does_not_fit(server: A2MServer) -> None:
    alice = server.connect(transport="http", principal="alice").context
    bob = server.connect(transport="http", principal="bob").context
    mine = read_page(
        server.protocol, selector_for(server.protocol, alice, Filters(), None), Filters(), limit=5
    )
    assert mine.next_cursor is not None
    with pytest.raises(BadRequest, match="another listing"):
        read_page(
            server.protocol,
            selector_for(server.protocol, bob, Filters(), None),
            Filters(cursor=mine.next_cursor),
        )
