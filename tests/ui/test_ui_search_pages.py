"""A text search pages through the server's own recall: page ``k`` shows the recall's
matches ``(k-1)*50+1`` to ``k*50`` in its order, links to the next page while there is
one, and says where the matches end (every match shown, or the server's recall limit
reached); a page number that cannot be meant is a 400 page."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from a2m_server import A2MServer, ServerConfig
from a2m_server.bindings.http import create_app
from a2m_server.config import LimitsConfig

TOKENS = {"alice-token": "alice", "bob-token": "bob"}
MATCHES = 130


def _seed(server: A2MServer) -> None:
    alice = server.connect(principal="alice")
    records = [
        {
            "content": f"invoice {i} was sent by billing" + " again" * (i % 7),
            "tier": "episodic",
            "metadata": {"source_agent": "planner", "tags": ["even" if i % 2 == 0 else "odd"]},
        }
        for i in range(MATCHES)
    ]
    records += [{"content": f"unrelated note {i}", "tier": "episodic"} for i in range(40)]
    alice.call("memory/remember", {"records": records})
    server.connect(principal="bob").call(
        "memory/remember", {"records": [{"content": "bob's billing secret", "tier": "episodic"}]}
    )


@pytest.fixture
def server() -> Iterator[A2MServer]:
    with A2MServer() as running:
        _seed(running)
        yield running


def _signed_in(server: A2MServer) -> TestClient:
    client = TestClient(create_app(server, tokens=TOKENS), base_url="http://127.0.0.1:8765")
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/ui/login").text)
    assert csrf is not None
    client.post("/ui/login", data={"csrf": csrf.group(1), "token": "alice-token", "next": "/ui/"})
    return client


def _ids(html: str) -> list[str]:
    return re.findall(r'<tr id="row-\d+" data-id="([^"]+)"', html)


def _next(html: str) -> str | None:
    found = re.search(r'href="([^"]+)" rel="next">More matches', html)
    return None if found is None else found.group(1).replace("&amp;", "&")


def _ranked(server: A2MServer, limit: int) -> list[str]:
    recalled = server.connect(principal="alice").call(
        "memory/recall", {"query": "billing", "limit": limit}
    )
    return [r["id"] for r in recalled["records"]]


def test_a_search_pages_through_every_match_in_recalls_order(server: A2MServer) -> None:
    client = _signed_in(server)
    shown: list[str] = []
    url: str | None = "/ui/memory?q=billing"
    pages = []
    while url is not None:
        page = client.get(url)
        assert page.status_code == 200
        pages.append(page.text)
        shown += _ids(page.text)
        url = _next(page.text)
    assert [len(_ids(p)) for p in pages] == [50, 50, 30]
    assert shown == _ranked(server, 1000)  # alice's 130, in recall's order, none twice
    assert "Matches 51 to 100, page 2." in pages[1]
    assert "That is every match." in pages[2]
    assert "That is every match." not in pages[0]
    assert 'rel="prev"' in pages[2]
    assert "page=2" in pages[2]  # the previous page's link
    assert "secret" not in "".join(pages)  # bob's record is not alice's to find


def test_the_agent_and_tag_filters_hold_on_every_page(server: A2MServer) -> None:
    client = _signed_in(server)
    first = client.get("/ui/agents/planner/memory?q=billing&tag=even")
    assert len(_ids(first.text)) == 50
    url = _next(first.text)
    assert url is not None
    assert "tag=even" in url
    second = client.get(url)
    assert len(_ids(second.text)) == 15
    assert _next(second.text) is None
    assert "That is every match." in second.text
    ranked = _ranked(server, 1000)
    evens = [i for i in ranked if i in set(_ids(first.text) + _ids(second.text))]
    assert _ids(first.text) + _ids(second.text) == evens


def test_the_servers_recall_limit_ends_the_search_and_says_so() -> None:
    with A2MServer(ServerConfig(limits=LimitsConfig(max_recall_limit=120))) as server:
        _seed(server)
        client = _signed_in(server)
        third = client.get("/ui/memory?q=billing&page=3")
        assert third.status_code == 200
        assert _ids(third.text) == _ranked(server, 120)[100:120]
        assert _next(third.text) is None
        assert "ranks at most 120 matches" in third.text
        beyond = client.get("/ui/memory?q=billing&page=4")
        assert _ids(beyond.text) == []
        assert "No matches on page 4." in beyond.text


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ("q=billing&page=0", "whole number from 1"),
        ("q=billing&page=two", "whole number from 1"),
        ("q=billing&page=-1", "whole number from 1"),
        ("q=billing&page=1001", "whole number from 1"),
        ("q=billing&page=%EF%BC%92", "whole number from 1"),  # a full-width digit
        ("page=2", "applies to a text search"),
        ("q=billing&page=2&cursor=oldest", "not by cursor"),
        ("q=billing&page=2&page=3", "given 2 times"),
    ],
)
def test_a_page_number_that_cannot_be_meant_is_a_400_page(
    server: A2MServer, query: str, why: str
) -> None:
    response = _signed_in(server).get(f"/ui/memory?{query}")
    assert response.status_code == 400
    assert why in response.text
