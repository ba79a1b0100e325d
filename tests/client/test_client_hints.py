"""Error messages say what is wrong, not "check that the server is running" for everything:
a URL without a scheme is refused where the client is made; connection refused, a host
that does not resolve, a web server that is not A2M (404, 501), and a proxy's HTML page
for a server behind it (502, 503, 504) each get a message and hint of their own — over
JSON-RPC and REST, sync and async. Real servers where one can be had (a plain web server,
a closed port); respx only to play the proxy."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

import a2m
from a2m import A2MClient, AsyncA2MClient
from a2m.transports import use_httpx

pytestmark = pytest.mark.anyio

RUNNING = "Check that the server is running"
BINDINGS = ["json-rpc", "rest"]
MODES = ["sync", "async"]


def _client(mode: str, binding: str, url: str) -> A2MClient | AsyncA2MClient:
    cls: type[A2MClient] | type[AsyncA2MClient] = A2MClient if mode == "sync" else AsyncA2MClient
    if binding == "rest":
        return cls.rest(url, namespace="hints", max_retries=0, timeout=10)
    return cls(url, max_retries=0, timeout=10)


async def _failure(client: A2MClient | AsyncA2MClient) -> a2m.A2MError:
    try:
        if isinstance(client, AsyncA2MClient):
            async with client:
                await client.recall("walrus")
        else:
            with client:
                client.recall("walrus")
    except a2m.A2MError as exc:
        return exc
    raise AssertionError("the call succeeded")


class _WebServer(http.server.BaseHTTPRequestHandler):
    """A web server that is not A2M: every request gets the status and page it was given."""

    status = 404
    page = b"<html><body><h1>Not Found</h1></body></html>"

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self._answer()

    def _answer(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(self.page)))
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(params=[404, 501])
def web_server(request: pytest.FixtureRequest) -> Iterator[tuple[int, str]]:
    handler = type("Handler", (_WebServer,), {"status": request.param})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield request.param, f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("url", ["127.0.0.1:8765", "localhost", "a2m.example.com/memory"])
def test_a_url_without_a_scheme_is_refused_where_the_client_is_made(
    mode: str, binding: str, url: str
) -> None:
    with pytest.raises(ValueError, match="has no scheme: did you mean 'http://") as caught:
        _client(mode, binding, url)
    assert repr(url) in str(caught.value)


@pytest.mark.parametrize("mode", MODES)
def test_a_url_of_another_scheme_is_refused_naming_it(mode: str) -> None:
    with pytest.raises(ValueError, match="has the scheme 'ftp'"):
        _client(mode, "json-rpc", "ftp://127.0.0.1/")


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("mode", MODES)
async def test_connection_refused_says_nothing_is_listening(
    mode: str, binding: str, closed_port_url: str
) -> None:
    error = await _failure(_client(mode, binding, closed_port_url))
    assert isinstance(error, a2m.A2MConnectError)
    assert "nothing is listening at that address (connection refused)" in str(error)
    assert str(error).endswith("Start the A2M server, or check the host and port in the URL.")


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("mode", MODES)
async def test_a_host_that_does_not_resolve_says_so(mode: str, binding: str) -> None:
    # .invalid never resolves (RFC 6761), so no network is needed to fail.
    error = await _failure(_client(mode, binding, "http://a2m-hints.invalid/"))
    assert isinstance(error, a2m.A2MConnectError)
    assert "the host name does not resolve" in str(error)
    assert RUNNING not in str(error)


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("mode", MODES)
async def test_a_web_server_that_is_not_a2m_is_named_as_such(
    mode: str, binding: str, web_server: tuple[int, str]
) -> None:
    status, url = web_server
    error = await _failure(_client(mode, binding, url))
    assert isinstance(error, a2m.A2MHTTPStatusError)
    assert error.status == status
    message = str(error)
    assert "it is not an A2M" in message, message
    assert "Check the URL" in message
    assert RUNNING not in message
    assert "Retry later" not in message  # a 501 is no passing failure


PROXY_PAGE = (
    b"<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad "
    b"Gateway</h1></center><hr><center>nginx</center></body></html>"
)


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("status", [502, 503, 504])
async def test_a_proxy_page_names_the_proxy_and_the_server_behind_it(
    mode: str, binding: str, status: int
) -> None:
    url = "http://a2m-behind-proxy.test/"
    with use_httpx(), respx.mock() as router:
        router.route(host="a2m-behind-proxy.test").mock(
            return_value=httpx.Response(
                status, content=PROXY_PAGE, headers={"Content-Type": "text/html"}
            )
        )
        error = await _failure(_client(mode, binding, url))
    assert isinstance(error, a2m.ServerError)
    assert error.status == status
    message = str(error)
    assert "a proxy or gateway answered for the server behind it" in message
    assert "The A2M server behind the proxy is down or unreachable from it" in message
    assert RUNNING not in message


@pytest.mark.parametrize("mode", MODES)
async def test_a_server_error_of_the_a2m_server_itself_keeps_its_own_hint(mode: str) -> None:
    """A JSON 503 (the A2M server saying so) is not a proxy's page: the class hint stays."""
    url = "http://a2m-busy.test/"
    with use_httpx(), respx.mock() as router:
        router.post(url).mock(return_value=httpx.Response(503, json={"error": "the store is busy"}))
        error = await _failure(_client(mode, "json-rpc", url))
    assert isinstance(error, a2m.ServerError)
    assert "the store is busy" in str(error)
    assert "proxy" not in str(error)
    assert str(error).endswith(a2m.ServerError.hint)
