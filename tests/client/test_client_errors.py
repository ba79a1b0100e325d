"""Every error the client can raise, mapped to its class of the one tree: from the real
server on every binding where the server can produce it, and from a respx-played server
for the codes and HTTP statuses it cannot (spec §7, §8.3)."""

from __future__ import annotations

import pytest
from client_support import (
    BINDINGS,
    MODES,
    RPC_URL,
    Driver,
    FakeServer,
    close_all,
    pretend_capabilities,
    rpc_error,
)

import a2m
from a2m import A2MClient, AsyncA2MClient
from a2m.errors import error_for_code, error_for_status

pytestmark = pytest.mark.anyio

CELLS = [(mode, binding) for mode in MODES for binding in BINDINGS]


# --- from the real server ------------------------------------------------------------------


async def test_invalid_params_from_the_server(client: Driver) -> None:
    with pytest.raises(a2m.InvalidParams) as caught:
        await client.forget()  # no selector: the server must refuse (§4.5)
    error = caught.value
    assert error.code == -32602
    assert error.method == "memory/forget"
    assert "at least one of" in error.message
    assert "memory/forget" in str(error)
    assert "-32602 INVALID_PARAMS" in str(error)


async def test_unknown_tier(client: Driver) -> None:
    ids = (await client.remember("x")).ids
    with pytest.raises(a2m.UnknownTier) as caught:
        await client.promote(ids, "no-such-tier")
    assert caught.value.code == -32002
    assert "working" in caught.value.data["tiers"]


async def test_quota_exceeded(client: Driver) -> None:
    with pytest.raises(a2m.QuotaExceeded) as caught:
        await client.recall("x", limit=5000)  # over max_recall_limit
    assert caught.value.code == -32006
    assert caught.value.data["limit"] == "max_recall_limit"


async def test_embedding_mismatch(client: Driver) -> None:
    await client.remember({"content": "v", "embedding": [1.0, 0.0, 0.0]})
    with pytest.raises(a2m.EmbeddingMismatch) as caught:
        await client.recall(embedding=[1.0, 0.0])
    assert caught.value.code == -32008
    assert caught.value.data == {"expected": 3, "got": 2}


async def test_invalid_cursor_and_unoffered_prompt_method(client: Driver) -> None:
    with pytest.raises(a2m.InvalidParams):
        await client.events("not-a-cursor-this-server-issued")
    with pytest.raises(a2m.InvalidParams):
        await client.recall("x", prompt={"method": "model"})  # not offered (§4.16)


@pytest.mark.parametrize(("mode", "binding"), CELLS, ids="-".join)
async def test_capability_not_supported_from_the_server(make_driver, mode, binding) -> None:
    driver = make_driver(mode, binding, capabilities=["core"])
    try:
        pretend_capabilities(driver, ["core", "tiers"])  # so the client lets the call out
        with pytest.raises(a2m.CapabilityNotSupported) as caught:
            await driver.consolidate()
        assert caught.value.code == -32003
        assert caught.value.capability == "tiers"
        assert "nothing was sent" not in caught.value.message  # the server said it
    finally:
        await close_all(make_driver)


@pytest.mark.parametrize("mode", MODES)
async def test_scope_denied_over_authenticated_http(mode: str) -> None:
    from a2m_server.server import A2MServer
    from a2m_testing.servers import serve_http

    with A2MServer() as server, serve_http(server, tokens={"tok-a": "alice"}) as url:
        cls = A2MClient if mode == "sync" else AsyncA2MClient
        driver = Driver(cls(url, token="tok-a"), "http")
        try:
            await driver.remember("mine", owner="alice")
            with pytest.raises(a2m.ScopeDenied) as caught:
                await driver.recall(owner="bob")
            assert caught.value.code == -32005
        finally:
            await _close(driver)


@pytest.mark.parametrize("mode", MODES)
async def test_http_statuses_from_the_real_server(mode: str) -> None:
    from a2m_server.server import A2MServer
    from a2m_testing.servers import serve_http

    cls = A2MClient if mode == "sync" else AsyncA2MClient
    with (
        A2MServer() as server,
        serve_http(server, tokens={"tok-a": "alice"}, max_body_bytes=4000) as url,
    ):
        anonymous = Driver(cls(url), "http")
        with pytest.raises(a2m.AuthenticationError) as caught:
            await anonymous.recall()
        assert caught.value.status == 401
        assert caught.value.method == "memory/describe"  # negotiation came first
        await _close(anonymous)

        browser = Driver(cls(url, token="tok-a", headers={"Origin": "https://evil.test"}), "http")
        with pytest.raises(a2m.PermissionDeniedError):
            await browser.recall()
        await _close(browser)

        future = Driver(
            cls(url, token="tok-a", headers={"A2M-Protocol-Version": "a2m/0.2"}), "http"
        )
        with pytest.raises(a2m.ProtocolNotSupported) as refused:  # 400 carrying -32007 (§8.3.2)
            await future.recall()
        assert refused.value.code == -32007
        await _close(future)

        driver = Driver(cls(url, token="tok-a"), "http")
        with pytest.raises(a2m.PayloadTooLargeError) as too_large:
            await driver.remember("x" * 10_000)
        assert too_large.value.status == 413
        await _close(driver)


async def _close(driver: Driver) -> None:
    if driver.is_async:
        await driver.client.aclose()
    else:
        driver.client.close()


# --- from a respx-played server --------------------------------------------------------------

ALL_CODES = [
    (-32700, a2m.ParseError),
    (-32600, a2m.InvalidRequest),
    (-32601, a2m.MethodNotFound),
    (-32602, a2m.InvalidParams),
    (-32603, a2m.InternalError),
    (-32001, a2m.UnknownRecord),
    (-32002, a2m.UnknownTier),
    (-32003, a2m.CapabilityNotSupported),
    (-32004, a2m.ReadOnly),
    (-32005, a2m.ScopeDenied),
    (-32006, a2m.QuotaExceeded),
    (-32007, a2m.ProtocolNotSupported),
    (-32008, a2m.EmbeddingMismatch),
    (-32050, a2m.A2MProtocolError),  # unknown code: the base class, carrying it
]


def make(mode: str, **options: object) -> Driver:
    cls = A2MClient if mode == "sync" else AsyncA2MClient
    return Driver(cls(RPC_URL, **options), "http")  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("code", "cls"), ALL_CODES, ids=[str(c) for c, _ in ALL_CODES])
async def test_every_code_maps_to_its_class(fake_server: FakeServer, mode, code, cls) -> None:
    fake_server.on("memory/recall", lambda r, p: rpc_error(r, code, "it went wrong", {"k": 1}))
    driver = make(mode)
    with pytest.raises(a2m.A2MProtocolError) as caught:
        await driver.recall("x")
    error = caught.value
    assert type(error) is cls
    assert error.code == code
    assert error.message == "it went wrong"
    assert error.data == {"k": 1}
    assert error.method == "memory/recall"
    assert isinstance(error, a2m.A2MError)
    assert fake_server.calls.count("memory/recall") == 1  # protocol errors are never retried
    await _close(driver)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, a2m.BadRequestError),
        (401, a2m.AuthenticationError),
        (403, a2m.PermissionDeniedError),
        (405, a2m.MethodNotAllowedError),
        (413, a2m.PayloadTooLargeError),
        (418, a2m.A2MHTTPStatusError),
        (429, a2m.RateLimitError),
        (500, a2m.ServerError),
        (502, a2m.ServerError),
        (503, a2m.ServerError),
        (504, a2m.ServerError),
    ],
)
async def test_every_http_status_maps_to_its_class(fake_server, mode, status, cls) -> None:
    import httpx

    fake_server.on("memory/recall", lambda r, p: httpx.Response(status, json={"error": "nope"}))
    driver = make(mode, max_retries=0)
    with pytest.raises(a2m.A2MHTTPStatusError) as caught:
        await driver.recall("x")
    error = caught.value
    assert type(error) is cls
    assert error.status == status
    assert "nope" in error.message
    assert isinstance(error, a2m.A2MTransportError)
    await _close(driver)


def test_lookup_tables_cover_the_spec() -> None:
    for code, cls in ALL_CODES:
        assert error_for_code(code) is cls
        if cls is not a2m.A2MProtocolError:
            assert cls.error_code == code
    assert error_for_status(599) is a2m.ServerError
    assert error_for_status(404) is a2m.A2MHTTPStatusError


def test_errors_module_draws_the_whole_tree() -> None:
    doc = a2m.errors.__doc__ or ""
    for name in a2m.errors.__all__:
        obj = getattr(a2m.errors, name)
        if isinstance(obj, type):
            assert name in doc, f"{name} is missing from the tree in the errors docstring"
            assert obj.__doc__, f"{name} has no docstring"
