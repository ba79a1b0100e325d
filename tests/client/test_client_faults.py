"""Fault injection with respx: timeouts, 429/503 with ``Retry-After``, connections dropped
after the server committed a write, and malformed responses. Delays are read from an
injected sleep, never waited for."""

from __future__ import annotations

import email.utils
import json
import logging
import time
from collections.abc import Sequence
from typing import Any

import httpx
import pytest
import respx
from client_support import (
    DESCRIBE_ALL,
    MODES,
    RPC_URL,
    Driver,
    install_sleep,
    rpc_error,
)

import a2m
from a2m import A2MClient, AsyncA2MClient
from a2m.transports import use_httpx
from a2m_server import A2MServer

pytestmark = pytest.mark.anyio

RECALL_OK = {"records": []}


def make(mode: str, **options: object) -> Driver:
    cls = A2MClient if mode == "sync" else AsyncA2MClient
    return Driver(cls(RPC_URL, **options), "http")  # type: ignore[arg-type]


async def close(driver: Driver) -> None:
    if driver.is_async:
        await driver.client.aclose()
    else:
        driver.client.close()


def raising(exc_type: type[httpx.TransportError], message: str = "injected"):
    return lambda request, params: exc_type(message, request=request)


def status(code: int, **headers: str):
    return lambda request, params: httpx.Response(code, headers=headers, json={"error": "busy"})


def ok(result: object):
    return lambda request, params: result


# --- timeouts and connection errors ----------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_timeouts_are_retried_with_capped_exponential_backoff(fake_server, mode) -> None:
    fake_server.on("memory/recall", raising(httpx.ReadTimeout))
    driver = make(mode)
    sleeps = install_sleep(driver.client)
    with pytest.raises(a2m.A2MTimeoutError) as caught:
        await driver.recall("x")
    assert caught.value.method == "memory/recall"
    assert fake_server.calls.count("memory/recall") == 3  # one try and max_retries=2
    first, second = sleeps.delays
    assert 0.375 <= first <= 0.5  # 0.5 s less up to 25% jitter
    assert 0.75 <= second <= 1.0
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
async def test_a_timeout_then_success(fake_server, mode) -> None:
    fake_server.on("memory/recall", raising(httpx.ReadTimeout), ok(RECALL_OK))
    driver = make(mode)
    install_sleep(driver.client)
    assert (await driver.recall("x")).records == []
    assert fake_server.calls.count("memory/recall") == 2
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("method", "call"),
    [
        ("memory/consolidate", lambda d: d.consolidate()),
        ("memory/reinforce", lambda d: d.reinforce(["a"])),
        ("memory/session/close", lambda d: d.close_session("s")),
        ("memory/promote", lambda d: d.promote(["a"], "semantic", salience=1.0)),
        ("memory/summarize", lambda d: d.summarize(query="x")),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
async def test_non_idempotent_calls_retry_only_when_the_request_never_left(
    fake_server, mode, method, call
) -> None:
    driver = make(mode)
    install_sleep(driver.client)
    failures = (raising(httpx.ReadTimeout), raising(httpx.ReadError), status(503))
    await _sent_once_each(fake_server, driver, method, call, failures)

    fake_server.calls.clear()
    fake_server.on(method, raising(httpx.ConnectError), ok({}))
    with pytest.raises(a2m.ResponseValidationError):  # {} is not a valid result: it got through
        await call(driver)
    assert fake_server.calls.count(method) == 2  # a connect error proves nothing was sent

    fake_server.calls.clear()
    fake_server.on(method, raising(httpx.PoolTimeout), ok({}))
    with pytest.raises(a2m.ResponseValidationError):
        await call(driver)
    assert fake_server.calls.count(method) == 2  # so does a pool timeout: no connection came
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("method", "call"),
    [
        ("memory/forget", lambda d: d.forget(ids=["a"])),
        ("memory/promote", lambda d: d.promote(["a"], "semantic")),
        ("memory/observations/delete", lambda d: d.delete_observations(["a"])),
    ],
    ids=["forget", "promote", "delete-observations"],
)
async def test_a_call_counting_what_it_did_is_not_retried_once_the_server_may_have_acted(
    fake_server, mode, method, call
) -> None:
    """After a timeout or a dropped answer the server may have deleted or moved the
    records: a retry would answer 0, telling the caller the call did nothing."""
    if method.startswith("memory/observations/"):
        with A2MServer() as real, real.connect() as peer:  # the extension, as declared
            fake_server.describe["observations"] = peer.call("memory/describe")["observations"]
    driver = make(mode)
    install_sleep(driver.client)
    failures = (raising(httpx.ReadTimeout), raising(httpx.ReadError), status(502))
    await _sent_once_each(fake_server, driver, method, call, failures)
    await close(driver)


async def _sent_once_each(
    fake_server: Any, driver: Any, method: str, call: Any, failures: Sequence[Any]
) -> None:
    """Each failure, injected on ``method``, is raised to the caller after one request:
    the call is not sent again."""
    for failure in failures:
        fake_server.calls.clear()
        fake_server.on(method, failure)
        with pytest.raises(a2m.A2MTransportError):
            await call(driver)
        assert fake_server.calls.count(method) == 1, failure


@pytest.mark.parametrize("mode", MODES)
async def test_idempotent_variants_of_promote_and_summarize_are_retried(fake_server, mode) -> None:
    fake_server.on("memory/promote", status(503), ok({"promoted": 1}))
    fake_server.on("memory/summarize", status(503), ok({"records": [], "read": 0, "written": 0}))
    driver = make(mode)
    install_sleep(driver.client)
    assert (await driver.promote(["a"], "semantic")).promoted == 1
    assert (await driver.summarize(query="x", key="page/x")).written == 0
    assert fake_server.calls.count("memory/promote") == 2
    assert fake_server.calls.count("memory/summarize") == 2
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
async def test_connect_errors_surface_after_retries(mode) -> None:
    # A real refused connection: nothing listens on this port.
    cls = A2MClient if mode == "sync" else AsyncA2MClient
    driver = Driver(cls("http://127.0.0.1:9/", max_retries=1), "http")
    sleeps = install_sleep(driver.client)
    with pytest.raises(a2m.A2MConnectError) as caught:
        await driver.recall("x")
    assert caught.value.method == "memory/describe"
    assert len(sleeps.delays) == 1
    await close(driver)


# --- Retry-After ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("code", [429, 503])
async def test_retry_after_seconds_is_honoured(fake_server, mode, code) -> None:
    fake_server.on("memory/recall", status(code, **{"Retry-After": "7"}), ok(RECALL_OK))
    driver = make(mode)
    sleeps = install_sleep(driver.client)
    await driver.recall("x")
    assert sleeps.delays == [7.0]
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
async def test_retry_after_http_date_is_honoured(fake_server, mode) -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    fake_server.on("memory/recall", status(503, **{"Retry-After": when}), ok(RECALL_OK))
    driver = make(mode)
    sleeps = install_sleep(driver.client)
    await driver.recall("x")
    (delay,) = sleeps.delays
    assert 27.0 <= delay <= 30.0
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
async def test_a_retry_after_past_a_minute_is_raised_not_cut_short(fake_server, mode) -> None:
    """The server asked for a day: retrying in half a second would ignore it, and waiting
    a day inside a call would hang it; the error carries ``retry_after`` instead."""
    fake_server.on("memory/recall", status(503, **{"Retry-After": "86400"}), ok(RECALL_OK))
    driver = make(mode)
    sleeps = install_sleep(driver.client)
    with pytest.raises(a2m.A2MHTTPStatusError) as caught:
        await driver.recall("x")
    assert caught.value.retry_after == 86400
    assert sleeps.delays == []
    assert fake_server.calls.count("memory/recall") == 1
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
async def test_500_is_not_retried(fake_server, mode) -> None:
    fake_server.on("memory/recall", status(500))
    driver = make(mode)
    install_sleep(driver.client)
    with pytest.raises(a2m.ServerError):
        await driver.recall("x")
    assert fake_server.calls.count("memory/recall") == 1
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
async def test_each_retry_is_logged_at_warning(fake_server, mode, caplog) -> None:
    fake_server.on("memory/recall", status(502), status(504), ok(RECALL_OK))
    driver = make(mode)
    install_sleep(driver.client)
    with caplog.at_level(logging.WARNING, logger="a2m"):
        await driver.recall("x")
    retries = [r for r in caplog.records if r.name == "a2m" and r.levelno == logging.WARNING]
    assert len(retries) == 2
    assert "memory/recall" in retries[0].getMessage()
    assert "502" in retries[0].getMessage()
    await close(driver)


# --- the write that committed before its response was lost ------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_a_dropped_response_after_commit_does_not_duplicate_the_write(mode) -> None:
    from a2m_server.server import A2MServer

    with (
        A2MServer() as server,
        server.connect() as connection,
        use_httpx(),
        respx.mock() as router,
    ):
        dropped: list[list[str]] = []

        def forward(request: httpx.Request) -> httpx.Response:
            answer = connection.handle(request.content)
            body = json.loads(request.content)
            if body["method"] == "memory/remember" and not dropped:
                # The server has committed; the response never reaches the client.
                dropped.append([r["id"] for r in body["params"]["records"]])
                raise httpx.RemoteProtocolError("connection reset by peer", request=request)
            assert answer is not None
            return httpx.Response(200, content=answer.encode())

        route = router.post(RPC_URL).mock(side_effect=forward)
        driver = make(mode)
        install_sleep(driver.client)
        ids = (await driver.remember(["first fact", {"content": "second fact"}])).ids
        assert ids == dropped[0]  # the retry carried the same client-assigned ids
        timeline = await driver.timeline()
        assert [r.content for r in timeline.records] == ["first fact", "second fact"]
        sent = [json.loads(call.request.content)["method"] for call in route.calls]
        assert sent.count("memory/remember") == 2
        await close(driver)


# --- malformed responses ----------------------------------------------------------------------


def raw(content: bytes, code: int = 200):
    return lambda request, params: httpx.Response(code, content=content)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("answer", "error", "fragment"),
    [
        (raw(b"<html>oops</html>"), a2m.ResponseValidationError, "not JSON"),
        (raw(b"[1, 2]"), a2m.ResponseValidationError, "list"),
        (raw(b'{"jsonrpc": "2.0", "id": 2}'), a2m.ResponseValidationError, "no result"),
        (ok({"records": "many"}), a2m.ResponseValidationError, "records"),
        (ok({"records": [{"id": "x", "content": "c", "created_at": 1700000000}]}),
         a2m.ResponseValidationError, "created_at"),
        (lambda r, p: httpx.Response(200, json={"jsonrpc": "2.0", "id": 999, "result": RECALL_OK}),
         a2m.ResponseValidationError, "999"),
        (lambda r, p: httpx.Response(200, json={"jsonrpc": "2.0", "id": 2, "error": {"code": "x"}}),
         a2m.ResponseValidationError, "malformed"),
        (lambda r, p: rpc_error(r, -32700, "malformed JSON"), a2m.ParseError, "malformed JSON"),
        (raw(b"", 202), a2m.ResponseValidationError, "empty body"),
        # another request's error is not this call's (null is: the server could not tell)
        (lambda r, p: httpx.Response(200, json={"jsonrpc": "2.0", "id": 999,
                                                "error": {"code": -32001, "message": "ro"}}),
         a2m.ResponseValidationError, "answers id 999"),
        (lambda r, p: httpx.Response(200, headers={"content-encoding": "gzip"},
                                     content=b"not gzip at all"),
         a2m.A2MConnectionError, "could not be decoded"),
    ],
)  # fmt: skip
async def test_malformed_responses(fake_server, mode, answer, error, fragment) -> None:
    fake_server.on("memory/recall", answer)
    driver = make(mode)
    with pytest.raises(error) as caught:
        await driver.recall("x")
    assert fragment in str(caught.value)
    assert caught.value.method == "memory/recall"
    assert fake_server.calls.count("memory/recall") == 1  # an answer came: no retry
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("version", ["a2m/0.2", "a2m/1.0", "mcp/2025"])
async def test_an_incompatible_server_version_is_refused(fake_server, mode, version) -> None:
    fake_server.describe = {**DESCRIBE_ALL, "protocol": version}
    fake_server.on("memory/recall", ok(RECALL_OK))
    driver = make(mode)
    with pytest.raises(a2m.ProtocolNotSupported) as caught:
        await driver.recall("x")
    assert caught.value.code == -32007
    assert version in caught.value.message
    assert "memory/recall" not in fake_server.calls
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_fields_and_event_kinds_are_kept(fake_server, mode) -> None:
    record = {
        "id": "r1",
        "content": "c",
        "created_at": "2026-07-28T10:15:30.123Z",
        "mood": "curious",
    }
    fake_server.on("memory/recall", ok({"records": [record], "trace": "abc"}))
    fake_server.on(
        "memory/events",
        ok(
            {
                "cursor": "c2",
                "events": [
                    {"kind": "rebalanced", "at": "2026-07-28T10:15:30.123Z", "shards": 3},
                    {"kind": "written", "at": "2026-07-28T10:15:30.124Z", "id": "r1"},
                ],
            }
        ),
    )
    driver = make(mode)
    result = await driver.recall("x")
    assert result.model_extra == {"trace": "abc"}
    assert result.records[0].model_extra == {"mood": "curious"}
    events = (await driver.events("c1")).events
    assert isinstance(events[0], a2m.UnknownEvent)
    assert events[0].kind == "rebalanced"
    assert events[0].model_extra == {"shards": 3}
    assert isinstance(events[1], a2m.WrittenEvent)
    await close(driver)
