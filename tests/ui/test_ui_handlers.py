"""The memory page's handlers without a browser, through the ASGI app ``create_app``
builds: what cannot be meant (bad ids, bad filters, tampered or foreign cursors, bad
forms) is a 400 page naming why, never a 500; what may not be seen is a 404; every page
carries the security headers."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient
from ui_support import sign_in

from a2m_server import A2MServer, ServerConfig
from a2m_server.bindings.http import create_app
from a2m_server.ui._sessions import Sessions

TOKENS = {"alice-token": "alice", "bob-token": "bob"}


def _seed(server: A2MServer) -> None:
    connection = server.connect()
    records = [
        {"content": f"fact {i}", "tier": "episodic", "metadata": {"source_agent": "planner"}}
        for i in range(60)
    ]
    connection.call("memory/remember", {"records": records, "owner": "alice"})


@pytest.fixture
def server() -> Iterator[A2MServer]:
    with A2MServer() as running:
        _seed(running)
        yield running


def _signed_in(app: object, token: str = "alice-token") -> tuple[TestClient, str]:
    return sign_in(app, token)


@pytest.fixture
def signed_in(server: A2MServer) -> tuple[TestClient, str]:
    return _signed_in(create_app(server, tokens=TOKENS))


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ("cursor=p1.not-a-cursor", "cursor"),
        ("cursor=garbage", "cursor"),
        ("tier=nowhere", "no tier named"),
        ("tag=a&tag=b", "given 2 times"),
        ("q=" + "x" * 501, "longer than 500"),
        ("framework=%00", "NUL"),
        ("&".join(f"classification=c{i}" for i in range(21)), "at most 20"),
    ],
)
def test_bad_filters_and_cursors_are_400_pages(
    signed_in: tuple[TestClient, str], query: str, why: str
) -> None:
    client, _ = signed_in
    response = client.get(f"/ui/agents/planner/memory?{query}")
    assert response.status_code == 400
    assert why in response.text
    assert response.headers["content-type"].startswith("text/html")


def test_a_tampered_cursor_is_refused_and_a_real_one_pages(
    signed_in: tuple[TestClient, str],
) -> None:
    client, _ = signed_in
    first = client.get("/ui/agents/planner/memory")
    cursor = re.search(r'cursor=([^"&]+)" rel="next"', first.text)
    assert cursor is not None
    real = cursor.group(1)
    assert client.get(f"/ui/agents/planner/memory?cursor={real}").status_code == 200
    body, _, mac = real.rpartition(".")
    tampered = body[:-2] + ("AA" if body[-2:] != "AA" else "BB") + "." + mac
    response = client.get(f"/ui/agents/planner/memory?cursor={tampered}")
    assert response.status_code == 400
    # A cursor of one listing does not fit another (other filters).
    other = client.get(f"/ui/agents/planner/memory?framework=crewai&cursor={real}")
    assert other.status_code == 400
    assert "another listing" in other.text


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/ui/record/history", 400),
        ("/ui/record/history?id=", 400),
        ("/ui/record/history?id=%00", 400),
        ("/ui/record/history?id=" + "x" * 1001, 400),
        ("/ui/record/history?id=no-such-record", 404),
        ("/ui/record/delete?id=no-such-record", 404),
        ("/ui/static/..%2F..%2Fetc%2Fpasswd", 404),
        ("/ui/static/secret.py", 404),
    ],
)
def test_bad_and_unknown_ids(signed_in: tuple[TestClient, str], path: str, status: int) -> None:
    client, _ = signed_in
    assert client.get(path).status_code == status


@pytest.mark.parametrize(
    ("form", "status"),
    [
        ({"direction": "up"}, 400),
        ({"id": "no-such-record", "direction": "up"}, 404),
        ({"id": "{id}", "direction": "sideways"}, 400),
        ({"id": "{id}"}, 400),
    ],
)
def test_bad_weight_forms(
    signed_in: tuple[TestClient, str], form: dict[str, str], status: int
) -> None:
    client, csrf = signed_in
    record_id = re.search(r'data-id="([^"]+)"', client.get("/ui/memory").text)
    assert record_id is not None
    data = {k: v.replace("{id}", record_id.group(1)) for k, v in form.items()}
    response = client.post("/ui/record/weight", data={**data, "csrf": csrf}, follow_redirects=False)
    assert response.status_code == status


def test_bad_edit_forms(signed_in: tuple[TestClient, str], server: A2MServer) -> None:
    client, csrf = signed_in
    record_id = re.search(r'data-id="([^"]+)"', client.get("/ui/memory").text)
    assert record_id is not None
    blank = client.post(
        "/ui/record/edit",
        data={"csrf": csrf, "id": record_id.group(1), "content": "   ", "type": ""},
    )
    assert blank.status_code == 400
    json_body = client.post(
        "/ui/record/edit",
        json={"csrf": csrf, "id": record_id.group(1), "content": "x"},
    )
    assert json_body.status_code == 400
    huge = client.post(
        "/ui/record/edit",
        data={"csrf": csrf, "id": record_id.group(1), "content": "x" * 300_000},
    )
    assert huge.status_code == 400
    too_long = client.post(  # within the form's limit, past the server's content limit
        "/ui/record/edit",
        data={"csrf": csrf, "id": record_id.group(1), "content": "x" * 100_001},
    )
    assert too_long.status_code == 413
    assert "max_content_length" in too_long.text
    # Nothing changed.
    timeline = server.connect().call("memory/timeline", {"where": {"id": record_id.group(1)}})
    assert timeline["records"][0]["content"].startswith("fact ")


def test_another_principals_record_cannot_be_changed(server: A2MServer) -> None:
    app = create_app(server, tokens=TOKENS)
    alice, _ = _signed_in(app)
    record_id = re.search(r'data-id="([^"]+)"', alice.get("/ui/memory").text)
    assert record_id is not None
    bob, bob_csrf = _signed_in(app, "bob-token")
    for path, form in (
        ("/ui/record/edit", {"content": "mine now", "type": ""}),
        ("/ui/record/weight", {"direction": "down"}),
        ("/ui/record/delete", {}),
    ):
        response = bob.post(path, data={**form, "id": record_id.group(1), "csrf": bob_csrf})
        assert response.status_code == 404, path
    assert server.connect().call("memory/timeline", {"where": {"id": record_id.group(1)}})[
        "records"
    ]


def test_after_an_action_only_a_page_of_this_site_is_a_destination(
    signed_in: tuple[TestClient, str],
) -> None:
    client, csrf = signed_in
    record_id = re.search(r'data-id="([^"]+)"', client.get("/ui/memory").text)
    assert record_id is not None
    for back in ("https://evil.example/", "//evil.example/ui/", "/a2m/v1/", "/ui/\\evil"):
        response = client.post(
            "/ui/record/weight",
            data={"csrf": csrf, "id": record_id.group(1), "direction": "up", "back": back},
            follow_redirects=False,
        )
        assert response.status_code == 303
        assert response.headers["location"] == "/ui/", back


def test_every_page_carries_the_security_headers(signed_in: tuple[TestClient, str]) -> None:
    client, _ = signed_in
    for path in ("/ui/", "/ui/memory", "/ui/record/history?id=nope", "/ui/memory?tier=x"):
        response = client.get(path)
        csp = response.headers["content-security-policy"]
        assert "default-src 'none'" in csp
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["x-frame-options"] == "DENY"


def test_without_tokens_the_page_needs_no_login_and_sees_everything(server: A2MServer) -> None:
    client = TestClient(create_app(server), base_url="http://127.0.0.1:8765")
    page = client.get("/ui/memory")
    assert page.status_code == 200
    assert page.text.count("<tr id=") == 50
    assert "Log out" not in page.text


def test_ui_false_leaves_the_page_out(server: A2MServer) -> None:
    client = TestClient(create_app(server, ui=False), base_url="http://127.0.0.1:8765")
    assert client.get("/ui/").status_code == 404


def test_the_api_still_wants_its_bearer_token(server: A2MServer) -> None:
    app = create_app(server, tokens=TOKENS)
    client, _ = _signed_in(app)
    # A page session cookie is not an API credential.
    response = client.post("/", json={"jsonrpc": "2.0", "id": 1, "method": "memory/describe"})
    assert response.status_code == 401


def test_read_only_server_refuses_edits(server: A2MServer) -> None:
    read_only = A2MServer(ServerConfig(read_only=True), store=server.store)
    client, csrf = _signed_in(create_app(read_only, tokens=TOKENS))
    page = client.get("/ui/memory").text
    assert "read-only" in page
    assert 'action="/ui/record/edit"' not in page
    record_id = re.search(r'data-id="([^"]+)"', page)
    assert record_id is not None
    response = client.post(
        "/ui/record/delete", data={"csrf": csrf, "id": record_id.group(1)}, follow_redirects=False
    )
    assert response.status_code == 403


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("127.0.0.1:8765", 200),
        ("localhost:8765", 200),
        ("[::1]:8765", 200),
        ("10.0.0.7", 200),
        ("rebound.attacker.example:8765", 403),
        ("", 403),
    ],
)
def test_without_tokens_only_an_address_reaches_the_page(
    server: A2MServer, host: str, status: int
) -> None:
    client = TestClient(create_app(server), base_url="http://127.0.0.1:8765")
    response = client.get("/ui/memory", headers={"host": host})
    assert response.status_code == status
    if status == 403:
        assert "fact" not in response.text


def test_with_tokens_any_name_reaches_the_login(server: A2MServer) -> None:
    client = TestClient(create_app(server, tokens=TOKENS), base_url="http://memory.example")
    assert client.get("/ui/login").status_code == 200


def test_sessions_opened_without_a_token_never_sign_anyone_out() -> None:
    """Each kind of session has its own limit: visitors opening sessions without a token
    (every cookie-less page view opens one) drop only such sessions, never one a token
    opened, which lives out its lifetime."""
    sessions = Sessions(limit=3)
    alice = sessions.open("alice", authenticated=True)
    visitors = [sessions.open(None, authenticated=False) for _ in range(10)]
    assert sessions.find(alice.id) is alice
    assert [sessions.find(v.id) is not None for v in visitors] == [False] * 7 + [True] * 3
    later = [sessions.open(f"user{n}", authenticated=True) for n in range(3)]
    assert sessions.find(alice.id) is None  # signed-in sessions keep their own limit
    assert all(sessions.find(s.id) is s for s in later)
    sessions.close(later[0].id)
    assert sessions.find(later[0].id) is None
