"""The client's own HTTP/1.1 path (plain ``http://``, no proxy) against a scripted
misbehaving loopback server: framing (length, chunked with extensions and trailers, to the
close, 1xx), keep-alive and ``Connection: close``, every way a peer can fail, and how each
failure meets the retry policy; then which path a URL takes (a proxy in the environment,
https and an injected client go through httpx). Delays are read from an injected sleep."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx
from client_support import MODES, Driver, FakeServer, install_sleep
from scripted_http import (
    ScriptedServer,
    close,
    hang,
    make,
    raw,
    respond,
    trickle,
    unused_port,
)

import a2m
from a2m import A2MClient, AsyncA2MClient
from a2m.transports import use_httpx

anyio = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """The path a URL takes depends on the environment's proxies: start from none."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


# --- what goes on the wire --------------------------------------------------------------------


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_the_request_carries_the_bindings_headers_on_one_connection(
    server: ScriptedServer, mode: str
) -> None:
    driver = make(mode, server.url, token="s3cret", headers={"X-Trace": "t-1"})
    assert (await driver.recall("alpha")).records[0].content == "alpha"
    assert (await driver.recall("beta")).records[0].content == "beta"
    assert server.methods() == ["memory/describe", "memory/recall", "memory/recall"]
    assert server.connections == 1  # kept alive
    request = server.requests[-1]
    assert request.request_line == b"POST / HTTP/1.1"
    assert request.header("Host") == f"127.0.0.1:{server.port}"
    assert request.header("Content-Length") == str(len(request.body))
    assert request.header("Content-Type") == "application/json"
    assert request.header("A2M-Protocol-Version") == "a2m/0.1"
    assert request.header("Authorization") == "Bearer s3cret"
    assert request.header("X-Trace") == "t-1"
    assert (request.header("User-Agent") or "").startswith("a2m-python/")
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_large_bodies_cross_in_many_pieces(server: ScriptedServer, mode: str) -> None:
    query = "word " * 120_000  # 600 kB each way: many sends and many reads
    server.script = [respond(framing="length"), respond(framing="chunked")]
    driver = make(mode, server.url)
    for _ in range(2):
        assert (await driver.recall(query)).records[0].content == query
    assert server.connections == 1
    await close(driver)


# --- framing and keep-alive -------------------------------------------------------------------


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_chunked_body_with_extensions_and_trailers(
    server: ScriptedServer, mode: str
) -> None:
    server.script = [respond(framing="chunked"), respond(framing="chunked")]
    driver = make(mode, server.url)
    assert (await driver.recall("one")).records[0].content == "one"
    assert (await driver.recall("two")).records[0].content == "two"
    assert server.connections == 1  # a chunked body is framed: the connection is reused
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_body_ended_by_the_close_and_then_a_fresh_connection(
    server: ScriptedServer, mode: str
) -> None:
    server.script = [respond(framing="close")]
    driver = make(mode, server.url)
    assert (await driver.recall("to the end")).records[0].content == "to the end"
    assert (await driver.recall("next")).records[0].content == "next"
    assert [r.connection for r in server.requests] == [1, 1, 2]
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("version", "headers", "reused"),
    [
        ("HTTP/1.1", (("Connection", "close"),), False),
        ("HTTP/1.1", (("Connection", "Keep-Alive, CLOSE"),), False),
        ("HTTP/1.0", (), False),
        ("HTTP/1.0", (("Connection", "keep-alive"),), True),
        ("HTTP/1.1", (), True),
    ],
)
async def test_connection_close_is_honoured(
    server: ScriptedServer,
    mode: str,
    version: str,
    headers: tuple[tuple[str, str], ...],
    reused: bool,
) -> None:
    # The server would serve another request on the same connection: only the client's
    # reading of the response decides whether it does.
    server.script = [respond(version=version, headers=headers, keep_open=True)]
    driver = make(mode, server.url)
    await driver.recall("first")
    await driver.recall("second")
    assert server.requests[-1].connection == (1 if reused else 2)
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_interim_responses_are_skipped(server: ScriptedServer, mode: str) -> None:
    server.script = [
        respond(
            interim=b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
        )
    ]
    driver = make(mode, server.url)
    assert (await driver.recall("after hints")).records[0].content == "after hints"
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_an_idle_connection_the_server_closed_is_not_reused(
    server: ScriptedServer, mode: str
) -> None:
    server.script = [respond(keep_open=False)]  # framed, no Connection: close, then closed
    # One slot: the closed connection's is reused, or the next call would find none.
    driver = make(mode, server.url, max_connections=1, timeout=5)
    sleeps = install_sleep(driver.client)
    await driver.recall("x")
    server.wait_closes(1)
    # Not idempotent, so a failure would not be retried: it succeeds because the closed
    # connection is seen as closed before anything is written to it.
    assert (await driver.consolidate()).promoted == 0
    assert sleeps.delays == []
    assert [r.connection for r in server.requests] == [1, 1, 2]
    await close(driver)


# --- failures ---------------------------------------------------------------------------------

BROKEN = [
    pytest.param(b"", "without answering", id="close-before-any-byte"),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nContent-Ty", "before the response was complete", id="partial-head"
    ),
    pytest.param(
        b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"jsonrpc":',
        "before the response was complete",
        id="partial-body",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nshort",
        "before the response was complete",
        id="partial-chunk",
    ),
    pytest.param(b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "status line", id="garbage-status-line"),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n",
        "larger than 65536",
        id="oversized-head",
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000, "larger than 65536", id="endless-head"
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size", id="bad-chunk"
    ),
    pytest.param(
        b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n", "Content-Length", id="two-lengths"
    ),
    pytest.param(b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header", id="bad-header"),
]


@anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("answer", "fragment"), BROKEN)
async def test_a_broken_response_is_a_connection_error(
    server: ScriptedServer, mode: str, answer: bytes, fragment: str
) -> None:
    server.script = [raw(answer)]
    driver = make(mode, server.url, max_retries=0, max_connections=1, timeout=5)
    with pytest.raises(a2m.A2MConnectionError) as caught:
        await driver.recall("x")
    error = caught.value
    # The request may have reached the server: never the "provably never left" class.
    assert type(error) is a2m.A2MConnectionError
    assert error.retryable
    assert error.method == "memory/recall"
    assert fragment in str(error)
    assert (await driver.recall("again")).records[0].content == "again"  # the client recovers
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_broken_response_is_retried_only_when_idempotent(
    server: ScriptedServer, mode: str
) -> None:
    driver = make(mode, server.url)
    sleeps = install_sleep(driver.client)
    server.script = [raw(b"")]
    assert (await driver.recall("retried")).records[0].content == "retried"
    assert len(sleeps.delays) == 1
    server.script = [raw(b"HTTP/1.1 200 OK\r\n")]
    with pytest.raises(a2m.A2MConnectionError):
        await driver.consolidate()
    assert server.methods().count("memory/consolidate") == 1
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_an_answer_before_the_whole_request_was_read(
    server: ScriptedServer, mode: str
) -> None:
    def too_large(sock: socket.socket) -> None:
        body = b'{"error": "the body is too large"}'
        sock.sendall(
            b"HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\nContent-Length: %d\r\n\r\n%b" % (len(body), body)
        )

    server.early = too_large
    driver = make(mode, server.url, max_retries=0, max_connections=1, timeout=5)
    with pytest.raises(a2m.PayloadTooLargeError, match="too large"):
        await driver.recall("word " * 2_000_000)  # 10 MB: the write fails first
    assert (await driver.recall("small")).records[0].content == "small"
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("answer", [hang, trickle], ids=["silent", "trickling"])
async def test_a_read_timeout(server: ScriptedServer, mode: str, answer: Any) -> None:
    """No answer within the timeout times the call out; so does an answer coming a byte
    every 50 ms, which never leaves one read waiting 0.3 s but is not whole within 0.3 s:
    the timeout bounds the whole response, not each read."""
    release = threading.Event()
    server.script = [answer(release)]
    driver = make(mode, server.url, timeout=0.3, max_retries=0)
    await driver.describe()
    started = time.monotonic()
    try:
        with pytest.raises(a2m.A2MTimeoutError) as caught:
            await driver.recall("x")
    finally:
        release.set()
    assert 0.25 <= time.monotonic() - started < 2
    assert "read" in str(caught.value)
    assert (await driver.recall("later")).records[0].content == "later"
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_refused_connection_is_retried_even_for_a_write(mode: str) -> None:
    driver = make(mode, f"http://127.0.0.1:{unused_port()}/", max_retries=2)
    sleeps = install_sleep(driver.client)
    with pytest.raises(a2m.A2MConnectError) as caught:
        await driver.describe()
    assert "could not connect" in str(caught.value)
    assert len(sleeps.delays) == 2  # a connect error proves nothing was sent
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_retry_after_and_503_through_the_retry_policy(
    server: ScriptedServer, mode: str
) -> None:
    busy = b'{"error": "busy"}'
    driver = make(mode, server.url)
    sleeps = install_sleep(driver.client)
    server.script = [
        respond(status=429, reason="Too Many Requests", headers=(("Retry-After", "7"),), body=busy),
        respond(status=503, reason="Service Unavailable", body=busy, framing="chunked"),
    ]
    assert (await driver.recall("eventually")).records[0].content == "eventually"
    assert sleeps.delays[0] == 7.0
    assert len(sleeps.delays) == 2
    assert server.methods().count("memory/recall") == 3

    server.script = [respond(status=503, reason="Service Unavailable", body=busy)]
    with pytest.raises(a2m.ServerError) as caught:
        await driver.consolidate()  # not idempotent: a 503 may come after the write
    assert caught.value.status == 503
    assert "busy" in str(caught.value)
    assert server.methods().count("memory/consolidate") == 1
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_statuses_map_as_on_the_httpx_path(server: ScriptedServer, mode: str) -> None:
    refusal = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32007,"message":"speaks a2m/9"}}'
    server.script = [
        respond(status=401, reason="Unauthorized", body=b'{"error": "missing token"}'),
        respond(status=400, reason="Bad Request", body=refusal),
        respond(status=202, reason="Accepted", body=b""),
        respond(status=200, body=b"<html>oops</html>"),
    ]
    driver = make(mode, server.url, max_retries=0)
    with pytest.raises(a2m.AuthenticationError, match="missing token"):
        await driver.recall("x")
    with pytest.raises(a2m.ProtocolNotSupported):
        await driver.recall("x")
    with pytest.raises(a2m.ResponseValidationError, match="empty body"):
        await driver.recall("x")
    with pytest.raises(a2m.ResponseValidationError, match="not JSON"):
        await driver.recall("x")
    await close(driver)


# --- sharing ----------------------------------------------------------------------------------


def test_many_threads_share_one_client(server: ScriptedServer) -> None:
    failures: list[BaseException] = []
    with A2MClient(server.url) as client:
        client.describe()

        def work(worker: int) -> None:
            try:
                for call in range(25):
                    query = f"w{worker}-c{call}"
                    assert client.recall(query).records[0].content == query
            except BaseException as exc:  # reported below
                failures.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert not failures, failures[0]
    assert len(server.requests) == 1 + 8 * 25
    assert server.connections <= 9


@anyio
async def test_many_tasks_share_one_async_client(server: ScriptedServer) -> None:
    async with AsyncA2MClient(server.url) as client:

        async def one(query: str) -> None:
            assert (await client.recall(query)).records[0].content == query

        await asyncio.gather(*(one(f"task-{n}") for n in range(60)))
        await asyncio.gather(*(one(f"again-{n}") for n in range(60)))
    assert len(server.requests) == 121
    # At most one connection per task in flight; of the first round's, 20 stay idle (the
    # pool's bound) for the second round to reuse.
    assert server.connections <= 1 + 60 + (60 - 20)


def test_an_async_client_under_a_second_loop(server: ScriptedServer) -> None:
    client = AsyncA2MClient(server.url)

    async def use(query: str) -> str:
        return (await client.recall(query)).records[0].content

    assert asyncio.run(use("first loop")) == "first loop"
    assert asyncio.run(use("second loop")) == "second loop"
    # The first loop's connection is not reused under the second one.
    assert [r.connection for r in server.requests] == [1, 1, 2]
    asyncio.run(client.aclose())


# --- which path -------------------------------------------------------------------------------


@anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"])
async def test_a_proxy_in_the_environment_selects_httpx(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, mode: str, variable: str
) -> None:
    monkeypatch.setenv(variable, server.url)  # the scripted server plays the proxy
    driver = make(mode, "http://a2m.test/")
    assert (await driver.recall("via proxy")).records[0].content == "via proxy"
    line = server.requests[-1].request_line
    assert line == b"POST http://a2m.test/ HTTP/1.1"  # the absolute form: sent to a proxy
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_no_proxy_keeps_the_lean_path(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{unused_port()}/")
    monkeypatch.setenv("no_proxy", "localhost,127.0.0.1")
    driver = make(mode, server.url)
    assert (await driver.recall("direct")).records[0].content == "direct"
    assert server.requests[-1].request_line == b"POST / HTTP/1.1"
    assert (server.requests[-1].header("User-Agent") or "").startswith("a2m-python/")
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_https_goes_through_httpx(mode: str) -> None:
    # respx answers only what httpx sends, and no use_httpx() is active here.
    fake = FakeServer()
    fake.on("memory/recall", lambda request, params: {"records": []})
    with respx.mock() as router:
        route = router.post("https://a2m.test/").mock(side_effect=fake)
        driver = make(mode, "https://a2m.test/")
        assert (await driver.recall("x")).records == []
        assert route.call_count == 2
        await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_use_httpx_is_read_at_each_request(server: ScriptedServer, mode: str) -> None:
    driver = make(mode, server.url)
    await driver.recall("lean")
    fake = FakeServer()
    fake.on("memory/recall", lambda request, params: {"records": []})
    with use_httpx(), respx.mock() as router:
        route = router.post(server.url).mock(side_effect=fake)
        assert (await driver.recall("mocked")).records == []
        assert route.call_count == 1
    assert (await driver.recall("lean again")).records[0].content == "lean again"
    assert server.methods().count("memory/recall") == 2
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_an_injected_http_client_is_used_and_never_closed(
    server: ScriptedServer, mode: str
) -> None:
    seen: list[str] = []
    if mode == "sync":
        http: httpx.Client | httpx.AsyncClient = httpx.Client(
            event_hooks={"request": [lambda request: seen.append(str(request.url))]}
        )
        driver = Driver(A2MClient(server.url, http_client=http), "http")  # type: ignore[arg-type]
    else:

        async def hook(request: httpx.Request) -> None:
            seen.append(str(request.url))

        http = httpx.AsyncClient(event_hooks={"request": [hook]})
        driver = Driver(AsyncA2MClient(server.url, http_client=http), "http")  # type: ignore[arg-type]
    assert (await driver.recall("injected")).records[0].content == "injected"
    await close(driver)
    assert seen == [server.url, server.url]
    assert not http.is_closed
    assert (server.requests[-1].header("User-Agent") or "").startswith("python-httpx/")
    if isinstance(http, httpx.AsyncClient):
        await http.aclose()
    else:
        http.close()


def test_only_a_running_asyncio_loop_takes_the_lean_async_path() -> None:
    from a2m.transports.http import _on_asyncio

    async def inside() -> bool:
        return _on_asyncio()

    assert not _on_asyncio()  # no asyncio loop: trio, say, goes through httpx
    assert asyncio.run(inside())
