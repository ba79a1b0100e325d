"""Schemathesis against ``/a2m/v1/openapi.json``: every documented operation is called over
real HTTP with generated requests, and every answer must match the document (status,
content type, body schema, headers) and never be a server error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, reject, settings

from a2m_server import A2MServer, LimitsConfig, ServerConfig
from a2m_testing.servers import serve_http

EXAMPLES = 30
"""Generated requests per operation: enough to reach every field, bounded for time."""

SEED = {"records": [{"content": "seed", "key": "seed/k", "embedding": [1.0, 0.0, 0.0]}]}
"""The first vector fixes the store's width (3); the document then states it."""


# Small limits keep every generated body (even one over a limit) far below the 4 MiB the
# gate admits, so an over-limit request meets the protocol's refusal, not the gate's 413.
CONFIG = ServerConfig(limits=LimitsConfig(max_records_per_call=20, max_content_length=2000))


MAX_REQUEST_LINE = 60 * 1024
"""Below the longest request line the HTTP layer reads (64 KiB): a longer URL is refused
by uvicorn with a plain-text 400 before the app sees it, which no document can describe
(packages/server/README.md says so). A generated ``where`` of nested ``$or`` lists can
exceed it; such a case tests the HTTP layer's bound, not the document."""


def _request_line(case: Any, base_url: str) -> int:
    sent = case.as_transport_kwargs(base_url=base_url)
    try:
        url = httpx.Request(sent["method"], sent["url"], params=sent.get("params")).url
    except httpx.InvalidURL:  # httpx itself refuses a URL component past 64 KiB
        return 64 * 1024 + 1
    return len(sent["method"]) + len(url.raw_path) + len(" HTTP/1.1")


UNDECLARED_FIELDS = frozenset({"owner"})
"""Fields of the one capability this server does not declare (``scopes``: HTTP without
tokens). The document leaves them out, but its bodies admit unknown properties, so a
generator may still send one under that name; the server then refuses it as the spec
requires (CAPABILITY_NOT_SUPPORTED, 501, which tests/rest/test_rest_methods.py checks),
which is the refusal of a field the document does not offer, not a case it describes."""


def _sends_undeclared_field(body: Any) -> bool:
    if not isinstance(body, dict):
        return False
    records = body.get("records")
    items = records if isinstance(records, list) else []
    return any(
        isinstance(part, dict) and not UNDECLARED_FIELDS.isdisjoint(part) for part in [body, *items]
    )


def _seeded() -> A2MServer:
    server = A2MServer(CONFIG)
    server.connect().call("memory/remember", SEED)
    return server


def _document() -> dict[str, Any]:
    # The document of a server configured and seeded as the one under test below.
    with _seeded() as server, serve_http(server) as url:
        document: dict[str, Any] = httpx.get(url + "a2m/v1/openapi.json", timeout=30).json()
    return document


schema = schemathesis.openapi.from_dict(_document())


@pytest.fixture(scope="module")
def base_url(store_backend: str) -> Iterator[str]:
    # Asking for the backend opens the store on the one this test runs on.
    with _seeded() as server, serve_http(server) as url:
        yield url.rstrip("/")


@pytest.fixture(scope="module")
def issued_cursor(base_url: str) -> str:
    cursor: str = httpx.post(base_url + "/a2m/v1/memory:events", json={}).json()["cursor"]
    return cursor


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_the_api_matches_its_openapi_document(case: Any, base_url: str, issued_cursor: str) -> None:
    body = case.body
    if (
        case.path.endswith("/memory:events")
        and isinstance(body, dict)
        and isinstance(body.get("cursor"), str)
    ):
        # A cursor is opaque and only one this server issued is valid (the document says
        # so); no generator can make one up, so a generated string is swapped for a real
        # cursor, exactly as a token would be supplied for auth.
        body["cursor"] = issued_cursor
    if (
        case.path.endswith("/memory:timeline")
        and isinstance(body, dict)
        and isinstance(body.get("cursor"), str)
        and len(body["cursor"]) <= 1024  # longer is refused by the document itself
    ):
        body["cursor"] = ""  # a page cursor too: "" is the one every listing accepts
    query = case.query
    if case.path.endswith("/entries") and isinstance(query, dict) and "cursor" in query:
        query["cursor"] = ""
    if _request_line(case, base_url) > MAX_REQUEST_LINE or _sends_undeclared_field(body):
        reject()
    case.call_and_validate(base_url=base_url)
