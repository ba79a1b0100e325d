"""The bound on open connections of the client's own HTTP/1.1 pool (``max_connections``,
100 unless told otherwise, as httpx's), against the scripted loopback server: many threads
or tasks never hold more sockets than the bound; a call that finds every connection busy
waits at most its timeout and then raises the "never sent" error the retry policy may send
again; and every way a call ends (an answer, a broken or reset peer, a timeout, a
cancellation, the client's close) gives its connection back. The server counts what it
accepted and the most it had open at once; every wait has a generous bound."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from client_support import MODES, Driver, install_sleep
from scripted_http import ScriptedServer, close, hang, held, make, raw, reset, slow, unused_port

import a2m
from a2m import A2MClient, AsyncA2MClient
from a2m.transports import AsyncHTTPTransport, HTTPTransport, use_httpx

anyio = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy in the environment would send the calls through httpx: start from none."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def queries(server: ScriptedServer) -> list[str]:
    """The recall queries the server read, in order."""
    return [r.message["params"]["query"] for r in server.requests if r.method == "memory/recall"]


class Background:
    """One call running beside the test: a thread for the sync client, a task for the
    async one; :meth:`result` waits for it (generously) and returns or raises its outcome."""

    def __init__(self, driver: Driver, query: str, **options: object) -> None:
        self.driver = driver
        self.outcome: list[object] = []
        self.task: asyncio.Task[object] | None = None
        self.thread: threading.Thread | None = None
        if driver.is_async:
            client = driver.client.with_options(**options) if options else driver.client
            self.task = asyncio.ensure_future(client.recall(query))
        else:
            client = driver.client.with_options(**options) if options else driver.client

            def run() -> None:
                try:
                    self.outcome.append(client.recall(query))
                except BaseException as exc:  # handed to result()
                    self.outcome.append(exc)

            self.thread = threading.Thread(target=run, daemon=True)
            self.thread.start()

    async def result(self) -> object:
        if self.task is not None:
            return await asyncio.wait_for(self.task, 20)
        assert self.thread is not None
        await asyncio.to_thread(self.thread.join, 20)
        assert self.outcome, "the call did not end"
        value = self.outcome[0]
        if isinstance(value, BaseException):
            raise value
        return value


async def until_sent(server: ScriptedServer, count: int) -> None:
    """Wait, off the loop, until the server has read ``count`` requests."""
    await asyncio.to_thread(server.wait_requests, count)


async def until_waiting(driver: Driver, count: int) -> None:
    """Wait until ``count`` calls are queued in the client's pool for a connection."""
    pool = driver.client._state.transport._pool
    for _ in range(2000):
        if pool.waiting >= count:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"{count} calls never queued for a connection")


# --- the bound holds --------------------------------------------------------------------------


def test_eight_threads_share_two_connections(server: ScriptedServer) -> None:
    server.default = slow(0.01)  # the calls overlap at the server: the pool must queue them
    failures: list[BaseException] = []
    with A2MClient(server.url, max_connections=2) as client:

        def work(worker: int) -> None:
            try:
                for call in range(6):
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
    assert len(queries(server)) == 8 * 6
    assert server.connections == 2  # both kept alive and shared by all eight threads
    assert server.peak == 2


@anyio
async def test_eight_tasks_share_two_connections(server: ScriptedServer) -> None:
    server.default = slow(0.01)
    async with AsyncA2MClient(server.url, max_connections=2) as client:

        async def work(worker: int) -> None:
            for call in range(6):
                query = f"t{worker}-c{call}"
                assert (await client.recall(query)).records[0].content == query

        await asyncio.wait_for(asyncio.gather(*(work(n) for n in range(8))), 60)
    assert len(queries(server)) == 8 * 6
    assert server.connections == 2
    assert server.peak == 2


@anyio
async def test_the_default_bound_is_httpxs() -> None:
    # Read through the public constructors, not a private constant.
    assert HTTPTransport("http://127.0.0.1:1/")._pool.max_connections == 100  # type: ignore[union-attr]
    transport = AsyncHTTPTransport("http://127.0.0.1:1/")
    assert transport._pool.max_connections == 100  # type: ignore[union-attr]
    await transport.aclose()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("value", "error"), [(0, ValueError), (-3, ValueError), (True, TypeError), (2.0, TypeError)]
)
def test_a_bound_that_is_not_a_positive_int_is_refused(
    mode: str, value: object, error: type[Exception]
) -> None:
    cls = A2MClient if mode == "sync" else AsyncA2MClient
    with pytest.raises(error, match="max_connections"):
        cls("http://127.0.0.1:1/", max_connections=value)  # type: ignore[arg-type]
    with pytest.raises(error, match="max_connections"):  # refused on the httpx path too
        cls("https://a2m.test/", max_connections=value)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
def test_a_bound_with_a_transport_is_refused(mode: str) -> None:
    if mode == "sync":
        with pytest.raises(TypeError, match="not both"):
            A2MClient(transport=HTTPTransport("http://127.0.0.1:1/"), max_connections=5)
    else:
        with pytest.raises(TypeError, match="not both"):
            AsyncA2MClient(transport=AsyncHTTPTransport("http://127.0.0.1:1/"), max_connections=5)


# --- waiting for a connection -----------------------------------------------------------------


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_call_that_gets_no_connection_in_time_was_never_sent(
    server: ScriptedServer, mode: str
) -> None:
    release = threading.Event()
    driver = make(mode, server.url, max_connections=1)
    await driver.describe()
    server.script = [held(release)]
    busy = Background(driver, "holds the only connection")
    await until_sent(server, 2)
    try:
        quick = driver.client.with_options(timeout=0.3, max_retries=0)
        with pytest.raises(a2m.A2MPoolTimeout) as caught:
            await Driver(quick, "http").consolidate()
        error = caught.value
        assert isinstance(error, a2m.A2MConnectError)  # so the retry policy may resend it
        assert "pool timeout" in str(error)
        assert "max_connections" in str(error)  # the hint says what to raise
        assert error.method == "memory/consolidate"
        assert error.retryable
        # A write, so the retry policy sends it again only because it provably never left.
        retried = driver.client.with_options(timeout=0.3, max_retries=2)
        sleeps = install_sleep(retried)
        with pytest.raises(a2m.A2MPoolTimeout, match="pool timeout"):
            await Driver(retried, "http").consolidate()
        assert len(sleeps.delays) == 2
        assert "memory/consolidate" not in server.methods()  # the server never saw any
    finally:
        release.set()
    assert (await busy.result()).records[0].content == "holds the only connection"  # type: ignore[attr-defined]
    assert (await driver.consolidate()).promoted == 0  # the slot came back
    assert server.connections == 1
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_waiting_call_gets_the_connection_given_back(
    server: ScriptedServer, mode: str
) -> None:
    release = threading.Event()
    driver = make(mode, server.url, max_connections=1)
    await driver.describe()
    server.script = [held(release)]
    first = Background(driver, "first")
    await until_sent(server, 2)
    second = Background(driver, "second")  # waits: its timeout (30 s) is far off
    await until_waiting(driver, 1)
    release.set()
    assert (await first.result()).records[0].content == "first"  # type: ignore[attr-defined]
    assert (await second.result()).records[0].content == "second"  # type: ignore[attr-defined]
    assert [r.connection for r in server.requests] == [1, 1, 1]
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_close_wakes_a_waiting_call(server: ScriptedServer, mode: str) -> None:
    release = threading.Event()
    driver = make(mode, server.url, max_connections=1, max_retries=0)
    await driver.describe()
    server.script = [held(release)]
    first = Background(driver, "in flight")
    await until_sent(server, 2)
    # Its timeout is longer than result() waits: only the close can end it in time.
    waiting = Background(driver, "waiting", timeout=120)
    await until_waiting(driver, 1)
    await close(driver)
    with pytest.raises(a2m.A2MConnectionError, match="closed") as caught:
        await waiting.result()
    assert not caught.value.retryable
    release.set()
    assert (await first.result()).records[0].content == "in flight"  # type: ignore[attr-defined]
    assert queries(server) == ["in flight"]


# --- every way out gives the connection back ----------------------------------------------------


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_broken_and_reset_peers_free_their_connection(
    server: ScriptedServer, mode: str
) -> None:
    driver = make(mode, server.url, max_connections=1, max_retries=0, timeout=5)
    server.script = [raw(b""), reset(), raw(b"HTTP/1.1 200 OK\r\nContent-Le"), reset()]
    for query in ("closed", "reset", "cut", "reset again"):
        with pytest.raises(a2m.A2MConnectionError) as caught:
            await driver.recall(query)
        assert "pool timeout" not in str(caught.value)
    assert (await driver.recall("after")).records[0].content == "after"
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_read_timeout_frees_its_connection(server: ScriptedServer, mode: str) -> None:
    release = threading.Event()
    server.script = [hang(release), hang(release)]
    driver = make(mode, server.url, max_connections=1, max_retries=0, timeout=0.3)
    await driver.describe()
    try:
        for _ in range(2):
            with pytest.raises(a2m.A2MTimeoutError, match="read"):
                await driver.recall("unanswered")
    finally:
        release.set()
    assert (await driver.recall("answered")).records[0].content == "answered"
    await close(driver)


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_failed_connects_free_their_connection(mode: str) -> None:
    driver = make(mode, f"http://127.0.0.1:{unused_port()}/", max_connections=1, timeout=5)
    sleeps = install_sleep(driver.client)
    for _ in range(2):
        with pytest.raises(a2m.A2MConnectError, match="could not connect"):
            await driver.describe()
    assert len(sleeps.delays) == 4  # six attempts, each connecting anew: none waited
    await close(driver)


@anyio
async def test_cancelling_a_call_in_flight_frees_its_connection(server: ScriptedServer) -> None:
    release = threading.Event()
    client = AsyncA2MClient(server.url, max_connections=1, timeout=5)
    await client.describe()
    server.script = [held(release)]
    in_flight = asyncio.ensure_future(client.recall("cancelled"))
    await until_sent(server, 2)
    in_flight.cancel()
    with pytest.raises(asyncio.CancelledError):
        await in_flight
    release.set()
    # Its socket was mid-message, so it is closed; the slot lets a fresh one open.
    assert (await client.recall("next")).records[0].content == "next"
    assert [r.connection for r in server.requests] == [1, 1, 2]
    await client.aclose()


@anyio
async def test_cancelling_a_waiting_call_frees_its_place(server: ScriptedServer) -> None:
    release = threading.Event()
    client = AsyncA2MClient(server.url, max_connections=1, timeout=5)
    await client.describe()
    server.script = [held(release)]
    in_flight = asyncio.ensure_future(client.recall("in flight"))
    await until_sent(server, 2)
    waiting = asyncio.ensure_future(client.recall("cancelled while waiting"))
    await until_waiting(Driver(client, "http"), 1)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    release.set()
    assert (await in_flight).records[0].content == "in flight"
    # Had the freed connection been handed to the cancelled call, this one would wait 5 s
    # and raise a pool timeout.
    assert (await client.recall("next")).records[0].content == "next"
    assert queries(server) == ["in flight", "next"]
    assert server.connections == 1
    await client.aclose()


@anyio
async def test_cancelling_a_call_just_handed_a_connection_gives_it_back(
    server: ScriptedServer,
) -> None:
    release = threading.Event()
    client = AsyncA2MClient(server.url, max_connections=1, timeout=5)
    await client.describe()
    server.script = [held(release)]
    loop = asyncio.get_running_loop()
    # Queued now, it runs as soon as this task first waits, after this task's call took the
    # connection; the server answers once the queued call has run into the pool's queue.
    waiting = asyncio.ensure_future(client.recall("handed over, then cancelled"))
    loop.call_soon(release.set)
    assert (await client.recall("holder")).records[0].content == "holder"
    # The connection was just handed to the waiting call, which has not run since: cancel
    # it now, before it can use the connection.
    handed_over = not waiting.done()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert handed_over
    assert (await client.recall("next")).records[0].content == "next"
    assert queries(server) == ["holder", "next"]
    assert server.connections == 1  # the connection itself was given back, still open
    await client.aclose()


# --- loops --------------------------------------------------------------------------------------


def test_a_second_loop_reclaims_the_first_loops_connection(server: ScriptedServer) -> None:
    client = AsyncA2MClient(server.url, max_connections=1, timeout=5)

    async def use(query: str) -> str:
        return (await client.recall(query)).records[0].content

    assert asyncio.run(use("first loop")) == "first loop"
    # The only slot is held by the first loop's idle connection, which cannot serve this
    # loop: it is closed and its slot reused, rather than waited for.
    assert asyncio.run(use("second loop")) == "second loop"
    assert [r.connection for r in server.requests] == [1, 1, 2]
    asyncio.run(client.aclose())


def test_two_loops_in_two_threads_share_the_bound(server: ScriptedServer) -> None:
    server.default = slow(0.005)
    client = AsyncA2MClient(server.url, max_connections=1, timeout=20)
    failures: list[BaseException] = []

    def run(name: str) -> None:
        async def calls() -> None:
            for n in range(10):
                query = f"{name}-{n}"
                assert (await client.recall(query)).records[0].content == query

        try:
            asyncio.run(calls())
        except BaseException as exc:  # reported below
            failures.append(exc)

    # Negotiated first, so the two loops meet only in the pool.
    assert asyncio.run(client.recall("warm")).records[0].content == "warm"
    threads = [threading.Thread(target=run, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures, failures[0]
    assert len(queries(server)) == 21
    asyncio.run(client.aclose())


# --- the httpx path -----------------------------------------------------------------------------


@anyio
@pytest.mark.parametrize("mode", MODES)
async def test_httpxs_pool_timeout_maps_to_the_same_error(
    server: ScriptedServer, mode: str
) -> None:
    # The transport's own httpx client gets the same bound, and its pool timeout the same
    # class: a real one, from httpx's pool against the scripted server.
    release = threading.Event()
    driver = make(mode, server.url, max_connections=1, max_retries=0)
    with use_httpx():
        await driver.describe()
        server.script = [held(release)]
        busy = Background(driver, "held")
        await until_sent(server, 2)
        try:
            quick = driver.client.with_options(timeout=0.3)
            with pytest.raises(a2m.A2MPoolTimeout, match="pool timeout"):
                await Driver(quick, "http").consolidate()
        finally:
            release.set()
        assert (await busy.result()).records[0].content == "held"  # type: ignore[attr-defined]
        assert "memory/consolidate" not in server.methods()
        await close(driver)
