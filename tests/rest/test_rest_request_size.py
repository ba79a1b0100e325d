"""The size bounds the server README states for HTTP: a request line (method, path and
query) of at most 64 KiB, a longer one refused with a plain-text 400 before the app sees
it, so a very large REST listing filter goes through ``POST /a2m/v1/memory:timeline``,
whose body may hold 4 MiB (and no more: 413)."""

from __future__ import annotations

import json
import socket
import urllib.parse

from rest_support import Rest, assert_error, rpc, uid, unchanged

from a2m_server import A2MServer

KIB = 1024
MIB = 1024 * KIB


def _raw_get(url: str, target: str) -> tuple[int, str, bytes]:
    """(status, content type, body) of one GET sent as raw bytes: httpx itself refuses a
    query this long, so it never reaches the server through httpx."""
    host, port = urllib.parse.urlsplit(url).hostname, urllib.parse.urlsplit(url).port
    assert host is not None
    assert port is not None
    with socket.create_connection((host, port), timeout=30) as sock:
        request = f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n"
        sock.sendall(request.encode())
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    headers = {name.lower(): value for name, value in headers.items()}
    return int(lines[0].split()[1]), headers.get("content-type", ""), body


def _listing(ns: str, where: dict[str, str]) -> str:
    return f"/a2m/v1/{ns}/entries?" + urllib.parse.urlencode({"where": json.dumps(where)})


def test_a_request_line_over_64_kib_is_a_plain_400(rest: Rest, url: str, server: A2MServer) -> None:
    ns = uid("line")
    long = "x" * (70 * KIB)
    rpc(
        url,
        "memory/remember",
        {
            "records": [
                {"content": "big", "key": f"{ns}/big", "metadata": {"namespace": ns, "tag": long}}
            ]
        },
    )
    short = _listing(ns, {"tag": "y" * (60 * KIB)})
    assert len(short) < 64 * KIB
    status, kind, body = _raw_get(url, short)
    assert status == 200, body[:200]
    assert json.loads(body)["entries"] == []

    too_long = _listing(ns, {"tag": long})
    assert len(too_long) > 64 * KIB
    with unchanged(server):
        status, kind, body = _raw_get(url, too_long)
    assert status == 400
    assert kind.startswith("text/plain"), kind  # uvicorn's, not the A2M error body

    # The same filter as a body: one record, found.
    found = rest.method("timeline", {"where": {"tag": long, "namespace": ns}})
    assert found.status_code == 200, found.text[:200]
    assert [r["key"] for r in found.json()["records"]] == [f"{ns}/big"]


def test_a_body_may_hold_4_mib_and_no_more(rest: Rest, server: A2MServer) -> None:
    params = json.dumps({"limit": 1}).encode()
    at_limit = params + b" " * (4 * MIB - len(params))
    response = rest.request(
        "POST", "memory:timeline", content=at_limit, headers={"content-type": "application/json"}
    )
    assert response.status_code == 200, response.text[:200]
    with unchanged(server):
        over = rest.request(
            "POST",
            "memory:timeline",
            content=at_limit + b" ",
            headers={"content-type": "application/json"},
        )
    assert_error(over, 413, "BODY_TOO_LARGE")
