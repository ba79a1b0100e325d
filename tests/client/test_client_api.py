"""The public surface: the pinned ``__all__``, documentation, configuration from arguments
and the environment, what goes on the wire (headers, ``NOT_GIVEN`` versus ``None``,
client-assigned ids, plain floats), timeouts, ``with_options`` and lifecycle."""

from __future__ import annotations

import json
import math
import uuid
from datetime import datetime, timezone
from enum import IntEnum
from fractions import Fraction
from pathlib import Path

import httpx
import numpy as np
import pytest
import respx
from client_support import MODES, RPC_URL, Driver, FakeServer

import a2m
import a2m.transports
from a2m import NOT_GIVEN, A2MClient, AsyncA2MClient, NotGiven
from a2m.transports import use_httpx


class _Kind(IntEnum):
    A = 1


pytestmark = pytest.mark.anyio

EXPECTED_ALL = [
    "NOT_GIVEN",
    "PROTOCOL_VERSION",
    "A2MClient",
    "A2MConnectError",
    "A2MConnectionError",
    "A2MError",
    "A2MEventLoopError",
    "A2MHTTPStatusError",
    "A2MPoolTimeout",
    "A2MProtocolError",
    "A2MTimeoutError",
    "A2MTransportError",
    "AsyncA2MClient",
    "AsyncSubscription",
    "AsyncWatcher",
    "AuthenticationError",
    "BadRequestError",
    "CapabilityNotSupported",
    "ConsolidateResult",
    "ConsolidatedEvent",
    "DescribeResult",
    "EmbeddingMismatch",
    "EmbeddingsInfo",
    "ErrorCode",
    "Event",
    "EventBase",
    "EventsInfo",
    "EventsResult",
    "FetchResult",
    "ForgetResult",
    "ForgottenEvent",
    "IncompleteListing",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "Limits",
    "MethodNotAllowedError",
    "MethodNotFound",
    "NotGiven",
    "ParseError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "PromoteResult",
    "PromotedEvent",
    "PromptInfo",
    "PromptOptions",
    "ProtocolNotSupported",
    "QuotaExceeded",
    "RateLimitError",
    "ReadOnly",
    "RecallResult",
    "Record",
    "RecordInput",
    "RecordLike",
    "Records",
    "ReinforceResult",
    "RememberResult",
    "ResponseValidationError",
    "ScopeDenied",
    "ServerError",
    "SessionCloseResult",
    "SessionClosedEvent",
    "SessionInfo",
    "SessionListResult",
    "SubscribeResult",
    "Subscription",
    "SummarizeInfo",
    "SummarizeResult",
    "TierInfo",
    "TimelineResult",
    "UnknownEvent",
    "UnknownRecord",
    "UnknownTier",
    "UnsubscribeResult",
    "Watcher",
    "WrittenEvent",
]

EXPECTED_TRANSPORTS = [
    "AsyncHTTPTransport",
    "AsyncInProcessTransport",
    "AsyncRESTTransport",
    "AsyncStdioTransport",
    "AsyncTransport",
    "ConnectableServer",
    "HTTPTransport",
    "InProcessTransport",
    "NotificationHandler",
    "RESTTransport",
    "ServerConnection",
    "StdioTransport",
    "Transport",
    "use_httpx",
    "use_httpx_while",
]


def isort_key(name: str) -> tuple[int, str]:
    """The order ruff's RUF022 keeps ``__all__`` in: CONSTANTS, Classes, functions."""
    if name.isupper():
        return (0, name)
    return (1, name) if name[0].isupper() else (2, name)


# --- the public surface -----------------------------------------------------------------------


def test_all_is_pinned_and_sorted() -> None:
    assert a2m.__all__ == EXPECTED_ALL
    assert a2m.__all__ == sorted(a2m.__all__, key=isort_key)
    assert a2m.transports.__all__ == EXPECTED_TRANSPORTS
    public = {name for name in dir(a2m) if not name.startswith("_")}
    # Submodules, not names (``adapter`` appears once something has imported it).
    assert public - set(a2m.__all__) <= {
        "adapter",
        "adapter_support",
        "errors",
        "filters",
        "transports",
    }


def test_every_public_name_is_documented() -> None:
    # Re-exported wire models are a2m_types' to document; these are ours.
    for module in (a2m, a2m.transports, a2m.errors):
        for name in module.__all__:
            obj = getattr(module, name)
            ours = getattr(obj, "__module__", "").split(".")[0] == "a2m"
            if ours and (isinstance(obj, type) or callable(obj)):
                assert (obj.__doc__ or "").strip(), f"{module.__name__}.{name} has no docstring"
    for cls in (A2MClient, AsyncA2MClient, a2m.Subscription, a2m.Watcher):
        for name, member in vars(cls).items():
            if not name.startswith("_") and callable(member):
                assert member.__doc__, f"{cls.__name__}.{name} has no docstring"


def test_the_twins_have_the_same_methods() -> None:
    import inspect

    def surface(cls: type) -> dict[str, list[str]]:
        return {
            name.replace("aclose", "close"): list(inspect.signature(member).parameters)
            for name, member in inspect.getmembers(cls)
            if not name.startswith("_") and callable(member)
        }

    assert surface(A2MClient) == surface(AsyncA2MClient)


def test_the_package_is_typed() -> None:
    assert (Path(a2m.__file__).parent / "py.typed").exists()


def test_not_given_is_a_falsy_singleton() -> None:
    assert not NOT_GIVEN
    assert NotGiven() is NOT_GIVEN
    assert repr(NOT_GIVEN) == "NOT_GIVEN"


# --- configuration ----------------------------------------------------------------------------


def test_constructors_do_no_io(tmp_path: Path) -> None:
    with respx.mock(assert_all_called=False) as router:
        route = router.route()
        A2MClient("http://127.0.0.1:9/").close()
        A2MClient.stdio([str(tmp_path / "not-started")]).close()
        assert not route.called


def test_configuration_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2M_URL", RPC_URL)
    monkeypatch.setenv("A2M_TOKEN", "from-env")
    monkeypatch.setenv("A2M_TIMEOUT", "12.5")
    with A2MClient() as client:
        assert client.timeout == 12.5
        assert client._state.transport.url == RPC_URL
        assert client._state.transport._headers["Authorization"] == "Bearer from-env"
    with A2MClient("http://elsewhere.test/", token="explicit", timeout=3) as client:
        assert client.timeout == 3
        assert client._state.transport.url == "http://elsewhere.test/"
        assert client._state.transport._headers["Authorization"] == "Bearer explicit"
    monkeypatch.setenv("A2M_TIMEOUT", "none")
    with A2MClient() as client:
        assert client.timeout is None
    monkeypatch.setenv("A2M_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="A2M_TIMEOUT"):
        A2MClient()


def test_defaults_and_a_missing_url(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("A2M_URL", "A2M_TOKEN", "A2M_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="A2M_URL"):
        A2MClient()
    with A2MClient(RPC_URL) as client:
        assert client.timeout == 30.0
        assert client.max_retries == 2
        assert "Authorization" not in client._state.transport._headers
    with pytest.raises(ValueError, match="timeout"):
        A2MClient(RPC_URL, timeout=0)
    with pytest.raises(ValueError, match="max_retries"):
        A2MClient(RPC_URL, max_retries=-1)


# --- on the wire ------------------------------------------------------------------------------


def make(mode: str, **options: object) -> Driver:
    cls = A2MClient if mode == "sync" else AsyncA2MClient
    return Driver(cls(RPC_URL, **options), "http")  # type: ignore[arg-type]


async def close(driver: Driver) -> None:
    if driver.is_async:
        await driver.client.aclose()
    else:
        driver.client.close()


def answer(result: object):
    return lambda request, params: result


@pytest.mark.parametrize("mode", MODES)
async def test_headers_and_the_first_describe(mode: str) -> None:
    fake = FakeServer()
    fake.on("memory/recall", answer({"records": []}))
    with use_httpx(), respx.mock() as router:
        route = router.post(RPC_URL).mock(side_effect=fake)
        driver = make(mode, token="s3cret")
        await driver.recall("x")
        request = route.calls[0].request
        assert request.headers["A2M-Protocol-Version"] == "a2m/0.1"
        assert request.headers["Authorization"] == "Bearer s3cret"
        assert request.headers["Content-Type"] == "application/json"
        assert fake.bodies[0]["method"] == "memory/describe"
        assert fake.bodies[0]["params"] == {"protocol": "a2m/0.1"}
        await close(driver)


@pytest.mark.parametrize("mode", MODES)
async def test_not_given_is_left_out_and_none_is_sent_as_null(fake_server, mode) -> None:
    fake_server.on("memory/recall", answer({"records": []}))
    driver = make(mode)
    await driver.recall()
    await driver.recall(None, limit=None, where={"tier": ("a", "b")})
    assert fake_server.bodies[1]["params"] == {}
    assert fake_server.bodies[2]["params"] == {
        "query": None,
        "limit": None,
        "where": {"tier": ["a", "b"]},
    }
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
async def test_remember_assigns_ids_and_sends_plain_floats(fake_server, mode) -> None:
    fake_server.on("memory/remember", lambda r, p: {"ids": [x["id"] for x in p["records"]]})
    driver = make(mode)
    vector = np.array([0.5, 0.25], dtype=np.float32)
    result = await driver.remember(
        ["a", {"content": "b", "id": "mine", "embedding": vector}, a2m.RecordInput(content="c")]
    )
    records = fake_server.bodies[-1]["params"]["records"]
    assert records[1]["id"] == "mine"
    assert records[1]["embedding"] == [0.5, 0.25]
    assert all(type(x) is float for x in records[1]["embedding"])
    for record in (records[0], records[2]):
        assert uuid.UUID(record["id"]).version == 7  # a2m_types.new_id, before sending
    assert result.ids == [r["id"] for r in records]
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
async def test_remember_sends_list_vectors_and_metadata_as_plain_json(fake_server, mode) -> None:
    # A list vector is validated as it is; what validation refuses but a float() accepts
    # (True, a Fraction) is still converted and sent, and metadata that is not plain JSON
    # but carried exactly (an enum) is dumped as before; a datetime is refused unsent.
    fake_server.on("memory/remember", lambda r, p: {"ids": [x["id"] for x in p["records"]]})
    driver = make(mode)
    moment = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    records = (  # a generator: read once
        record
        for record in [
            {"content": "a", "embedding": [1, 0.5, np.float64(0.25)], "metadata": {"n": [1]}},
            {"content": "b", "embedding": [True, Fraction(1, 4)], "metadata": {"at": _Kind.A}},
            {"content": "c", "embedding": [0.1, -2.5], "salience": 1},
        ]
    )
    await driver.remember(records)
    sent = fake_server.bodies[-1]["params"]["records"]
    assert [r["embedding"] for r in sent] == [[1.0, 0.5, 0.25], [1.0, 0.25], [0.1, -2.5]]
    assert all(type(x) is float for r in sent for x in r["embedding"])
    assert sent[0]["metadata"] == {"n": [1]}
    assert sent[1]["metadata"] == {"at": 1}
    assert sent[2]["salience"] == 1.0
    assert [sorted(r) for r in sent] == [
        ["content", "embedding", "id", "metadata"],
        ["content", "embedding", "id", "metadata"],
        ["content", "embedding", "id", "salience"],
    ]
    for bad in ([1.0, math.inf], [0.5, "x"], [0.5, None]):
        with pytest.raises(a2m.InvalidParams):
            await driver.remember([{"content": "d", "embedding": bad}])
    with pytest.raises(a2m.InvalidParams, match=r"records\[0\]\.metadata\.at holds a datetime"):
        await driver.remember([{"content": "d", "metadata": {"at": moment}}])
    assert len([c for c in fake_server.calls if c == "memory/remember"]) == 1
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
async def test_impossible_arguments_are_refused_unsent(fake_server, mode) -> None:
    driver = make(mode)
    cases = [
        lambda: driver.recall("x", limit=-1),
        lambda: driver.recall("x", limit="ten"),
        lambda: driver.recall(embedding=[math.nan, 1.0]),
        lambda: driver.recall(embedding=["not", "numbers"]),
        lambda: driver.forget("a-single-id-string"),
        lambda: driver.remember({"content": "x", "importance": 3}),
        lambda: driver.remember(42),
        lambda: driver.remember([]),
        lambda: driver.fetch(""),
        lambda: driver.recall(prompt={"method": "telepathy"}),
    ]
    for case in cases:
        with pytest.raises(a2m.InvalidParams) as caught:
            await case()
        assert caught.value.code == -32602
        assert caught.value.method is not None
    assert set(fake_server.calls) <= {"memory/describe"}
    await close(driver)


@pytest.mark.parametrize("mode", MODES)
async def test_timeouts_reach_the_wire(mode: str) -> None:
    fake = FakeServer()
    fake.on("memory/recall", answer({"records": []}))
    with use_httpx(), respx.mock() as router:
        route = router.post(RPC_URL).mock(side_effect=fake)
        driver = make(mode)
        await driver.recall("x")
        await driver.recall("x", timeout=1.5)
        quick = driver.client.with_options(timeout=4, max_retries=0)
        await Driver(quick, "http").recall("x")
        waited = [call.request.extensions["timeout"]["read"] for call in route.calls]
        assert waited == [30.0, 30.0, 1.5, 4.0]
        assert driver.client.timeout == 30.0  # the original is unchanged
        assert quick.max_retries == 0
        assert fake.calls.count("memory/describe") == 1  # copies share the negotiation
        await close(driver)


@pytest.mark.parametrize("mode", MODES)
async def test_an_injected_httpx_client_is_never_closed(fake_server, mode) -> None:
    fake_server.on("memory/recall", answer({"records": []}))
    if mode == "sync":
        with httpx.Client() as http:
            with A2MClient(RPC_URL, http_client=http) as client:
                client.recall("x")
            assert not http.is_closed
    else:
        async with httpx.AsyncClient() as ahttp:
            async with AsyncA2MClient(RPC_URL, http_client=ahttp) as aclient:
                await aclient.recall("x")
            assert not ahttp.is_closed


@pytest.mark.parametrize("mode", MODES)
async def test_a_closed_client_refuses_calls(fake_server, mode) -> None:
    driver = make(mode)
    await close(driver)
    await close(driver)  # closing twice is harmless
    with pytest.raises(RuntimeError, match="closed"):
        await driver.recall("x")


async def test_async_capabilities_need_a_call_first(fake_server) -> None:
    async with AsyncA2MClient(RPC_URL) as client:
        with pytest.raises(RuntimeError, match="describe"):
            _ = client.capabilities
        await client.describe()
        assert client.supports("keys")


def test_sync_capabilities_negotiate_on_demand(fake_server) -> None:
    with A2MClient(RPC_URL) as client:
        assert client.description is None
        assert client.supports("events")
        assert fake_server.calls == ["memory/describe"]


def test_messages_say_what_went_wrong_and_what_to_do() -> None:
    error = a2m.ReadOnly("memory/remember refused", method="memory/remember")
    text = str(error)
    assert text.startswith("memory/remember: memory/remember refused")
    assert "-32004 READ_ONLY" in text
    assert "write to another one" in text
    assert json.dumps({"code": error.code}) == '{"code": -32004}'
