"""The REST transport against a server offering every A2M method (full mode), sync and
async, over real HTTP: the JSON-RPC method, error, gating and observation suites run again
unchanged, then what is REST's own — the routes used, the error bodies mapped onto the same
classes, the gate's statuses, retries, and records (and observations) crossing between the
two bindings."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
import respx
from client_support import MODES, Driver, install_sleep, pretend_capabilities, server_config

# The suites every JSON-RPC binding passes, collected again here: this module's `client`,
# `core_client` and `read_only_client` fixtures make them run over REST.
from test_client_errors import (  # noqa: F401
    test_embedding_mismatch,
    test_invalid_cursor_and_unoffered_prompt_method,
    test_invalid_params_from_the_server,
    test_quota_exceeded,
    test_unknown_tier,
)
from test_client_events import (  # noqa: F401
    test_watch_follows_the_cursor_through_more,
    test_watch_from_now_sleeps_between_empty_polls,
)
from test_client_gating import (  # noqa: F401
    test_capabilities_are_core_only,
    test_core_methods_still_work,
    test_methods_of_undeclared_capabilities_are_refused_unsent,
    test_parameters_of_undeclared_capabilities_are_refused_unsent,
    test_read_only_refuses_writes_and_is_never_retried,
    test_read_only_serves_reads,
    test_record_fields_of_undeclared_capabilities_are_refused_unsent,
    test_values_that_ask_for_nothing_pass_the_gate,
    test_watch_is_refused_on_first_iteration,
)
from test_client_methods import (  # noqa: F401
    test_describe_runs_lazily_once_and_refreshes,
    test_events_poll_follows_the_cursor,
    test_fetch_returns_the_record_or_none,
    test_forget_by_ids_key_prefix_and_where,
    test_promote_reinforce_and_consolidate,
    test_recall_by_embedding_accepts_numpy_and_returns_vectors,
    test_recall_ranks_filters_and_renders,
    test_remember_gives_ids_first_so_a_resend_is_idempotent,
    test_remember_owner_session_and_capability_fields,
    test_remember_takes_every_shape_and_keeps_order,
    test_sessions_and_close_session,
    test_summarize_writes_records_and_keeps_the_sources,
    test_timeline_is_oldest_first_and_limit_keeps_the_newest,
)
from test_client_observations import (  # noqa: F401
    test_bad_input_is_refused_before_anything_is_sent,
    test_bad_input_the_server_judges_is_a_typed_error_and_writes_nothing,
    test_remember_deduplicates_and_every_verb_returns_its_typed_result,
)

import a2m
from a2m import A2MClient, AsyncA2MClient
from a2m.transports import AsyncRESTTransport, RESTTransport

pytestmark = pytest.mark.anyio

NAMESPACE = "app/wf-42"
FAKE = "http://a2m.test"


class Wire:
    """Records every HTTP request a client sends, as ``"METHOD /path?query"``, and the
    headers of the last one, through httpx event hooks."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.headers: httpx.Headers = httpx.Headers()

    def _record(self, request: httpx.Request) -> None:
        self.sent.append(f"{request.method} {request.url.raw_path.decode()}")
        self.headers = request.headers

    async def _arecord(self, request: httpx.Request) -> None:
        self._record(request)

    def client_for(self, mode: str) -> httpx.Client | httpx.AsyncClient:
        if mode == "sync":
            return httpx.Client(event_hooks={"request": [self._record]})
        return httpx.AsyncClient(event_hooks={"request": [self._arecord]})


Opener = Callable[..., Driver]


@pytest.fixture
async def rest() -> AsyncIterator[Opener]:
    """``rest(mode, *, capabilities=None, read_only=False, app=None, wire=None, url=None,
    **client_options)``: a REST client driver on a fresh bundled server served over real
    HTTP (``app`` options go to ``create_app``), or on ``url``. Everything is closed after
    the test. Drivers are labelled ``http``: REST runs over the same unauthenticated HTTP
    server, so the shared suites' HTTP expectations (no ``scopes``) are REST's too."""
    from a2m_server.server import A2MServer
    from a2m_testing.servers import serve_http

    stack = ExitStack()
    drivers: list[tuple[Driver, Any]] = []

    def build(
        mode: str,
        *,
        capabilities: list[str] | None = None,
        read_only: bool = False,
        app: dict[str, Any] | None = None,
        wire: Wire | None = None,
        url: str | None = None,
        **client_options: Any,
    ) -> Driver:
        if url is None:
            server = stack.enter_context(A2MServer(server_config(capabilities, read_only)))
            url = stack.enter_context(serve_http(server, **(app or {})))
        http_client = wire.client_for(mode) if wire is not None else None
        cls = A2MClient if mode == "sync" else AsyncA2MClient
        client = cls.rest(url, namespace=NAMESPACE, http_client=http_client, **client_options)
        driver = Driver(client, "http")
        drivers.append((driver, http_client))
        return driver

    with stack:
        try:
            yield build
        finally:
            for driver, http_client in reversed(drivers):
                if driver.is_async:
                    await driver.client.aclose()
                    if http_client is not None:
                        await http_client.aclose()
                else:
                    driver.client.close()
                    if http_client is not None:
                        http_client.close()


@pytest.fixture(params=MODES)
def client(request: pytest.FixtureRequest, rest: Opener) -> Driver:
    """A REST client of a server declaring every capability, sync and async."""
    return rest(request.param)


@pytest.fixture(params=MODES)
def core_client(request: pytest.FixtureRequest, rest: Opener) -> Driver:
    """A REST client of a server declaring ``core`` only."""
    return rest(request.param, capabilities=["core"])


@pytest.fixture(params=MODES)
def read_only_client(request: pytest.FixtureRequest, rest: Opener) -> Driver:
    """A REST client of a read-only server."""
    return rest(request.param, read_only=True)


def transport_of(driver: Driver) -> RESTTransport | AsyncRESTTransport:
    transport = driver.client._state.transport
    assert isinstance(transport, (RESTTransport, AsyncRESTTransport))
    return transport


async def handle(driver: Driver, request: dict[str, Any]) -> dict[str, Any]:
    """Send one JSON-RPC request object straight through the client's transport."""
    transport = transport_of(driver)
    if isinstance(transport, AsyncRESTTransport):
        return await transport.handle_async_request(request, timeout=10)
    return transport.handle_request(request, timeout=10)


# --- the routes --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_every_method_is_a_memory_route_with_the_binding_headers(
    rest: Opener, mode: str
) -> None:
    wire = Wire()
    driver = rest(mode, app={"tokens": {"tok-a": "alice"}}, token="tok-a", wire=wire)
    assert transport_of(driver).mode is None
    assert wire.sent == []  # nothing until the first call
    described = await driver.describe()
    assert wire.sent == ["GET /a2m/v1/memory:describe"]  # the probe answered describe
    assert transport_of(driver).mode == "full"
    assert described.name == "a2m-server"
    await driver.remember({"content": "Paris", "key": "app/user/city"})
    await driver.recall("Paris")
    await driver.sessions()
    await driver.close_session("conv-1")
    assert wire.sent[1:] == [
        "POST /a2m/v1/memory:remember",
        "POST /a2m/v1/memory:recall",
        "POST /a2m/v1/memory:session/list",
        "POST /a2m/v1/memory:session/close",
    ]
    assert wire.headers["authorization"] == "Bearer tok-a"
    assert wire.headers["a2m-protocol-version"] == "a2m/0.1"
    await driver.describe(owner="alice")  # a describe with params is posted
    assert wire.sent[-1] == "POST /a2m/v1/memory:describe"


@pytest.mark.parametrize("mode", MODES)
async def test_the_constructor_sends_nothing_and_checks_the_namespace(mode: str) -> None:
    cls = A2MClient if mode == "sync" else AsyncA2MClient
    client = cls.rest("http://127.0.0.1:9/a2m/v1/", namespace="app/wf-42")
    transport = client._state.transport
    assert isinstance(transport, (RESTTransport, AsyncRESTTransport))
    assert transport.base_url == "http://127.0.0.1:9/a2m/v1/"  # not doubled
    assert transport.namespace == "app/wf-42"
    if isinstance(client, AsyncA2MClient):
        await client.aclose()
    else:
        client.close()
    with pytest.raises(ValueError, match="segment"):
        cls.rest("http://127.0.0.1:9/", namespace="App/Bad Name")


async def test_push_is_refused_unsent_and_polling_works(client: Driver) -> None:
    description = await client.describe()
    assert description.events is not None
    assert description.events.push is False
    with pytest.raises(a2m.CapabilityNotSupported) as refused:
        await client.subscribe()
    assert refused.value.data == {"capability": "events", "push": False}
    # The transport refuses it too, to any caller, before anything is sent.
    with pytest.raises(a2m.CapabilityNotSupported, match="nothing was sent"):
        await handle(client, {"jsonrpc": "2.0", "id": 1, "method": "memory/events/subscribe"})
    assert (await client.unsubscribe()).subscribed is False
    assert (await client.events()).events == []


async def test_an_unknown_method_is_method_not_found(client: Driver) -> None:
    answer = await handle(client, {"jsonrpc": "2.0", "id": 7, "method": "memory/nope"})
    assert answer["id"] == 7
    assert answer["error"]["code"] == -32601
    with pytest.raises(a2m.MethodNotFound):
        await handle(client, {"jsonrpc": "2.0", "id": 8, "method": "tools/list"})


# --- errors from the real server -----------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_capability_not_supported_from_the_server(rest: Opener, mode: str) -> None:
    driver = rest(mode, capabilities=["core"])
    pretend_capabilities(driver, ["core", "tiers"])  # so the client lets the call out
    with pytest.raises(a2m.CapabilityNotSupported) as caught:
        await driver.consolidate()
    assert caught.value.code == -32003
    assert caught.value.capability == "tiers"
    assert "nothing was sent" not in caught.value.message  # the server said it


@pytest.mark.parametrize("mode", MODES)
async def test_scope_denied_with_tokens(rest: Opener, mode: str) -> None:
    driver = rest(mode, app={"tokens": {"tok-a": "alice"}}, token="tok-a")
    await driver.remember("mine", owner="alice")
    with pytest.raises(a2m.ScopeDenied) as caught:
        await driver.recall(owner="bob")
    assert caught.value.code == -32005


@pytest.mark.parametrize("mode", MODES)
async def test_the_gates_statuses_raise_the_http_transport_errors(rest: Opener, mode: str) -> None:
    app = {"tokens": {"tok-a": "alice"}, "max_body_bytes": 4000}
    anonymous = rest(mode, app=app)
    with pytest.raises(a2m.AuthenticationError) as caught:
        await anonymous.recall()
    assert caught.value.status == 401
    assert caught.value.method == "memory/describe"  # negotiation came first
    assert "UNAUTHORIZED" in caught.value.message
    assert transport_of(anonymous).mode is None  # undecided: the next call asks again
    url = transport_of(anonymous).base_url

    browser = rest(mode, url=url, token="tok-a", headers={"Origin": "https://evil.test"})
    with pytest.raises(a2m.PermissionDeniedError):
        await browser.recall()

    future = rest(mode, url=url, token="tok-a", headers={"A2M-Protocol-Version": "a2m/0.2"})
    with pytest.raises(a2m.ProtocolNotSupported) as refused:
        await future.recall()
    assert refused.value.code == -32007

    driver = rest(mode, url=url, token="tok-a")
    with pytest.raises(a2m.PayloadTooLargeError) as too_large:
        await driver.remember("x" * 10_000)
    assert too_large.value.status == 413


# --- every REST error body, from a played server ---------------------------------------------

DESCRIBE = {"protocol": "a2m/0.1", "name": "fake", "capabilities": ["core"], "methods": []}


def body(code: str, message: str = "it went wrong", **extra: Any) -> dict[str, Any]:
    return {"code": code, "message": message, **extra}


ERROR_REPLIES = [
    (400, body("INVALID_BODY", a2m_code=-32602, data={"field": "limit"}), a2m.InvalidParams),
    (400, body("INVALID_BODY", "malformed JSON"), a2m.InvalidParams),
    (400, body("PROTOCOL_NOT_SUPPORTED", a2m_code=-32007), a2m.ProtocolNotSupported),
    (403, body("READ_ONLY", a2m_code=-32004), a2m.ReadOnly),
    (403, body("SCOPE_DENIED", a2m_code=-32005), a2m.ScopeDenied),
    (404, body("UNKNOWN_METHOD", a2m_code=-32601), a2m.MethodNotFound),
    (404, body("UNKNOWN_RECORD", a2m_code=-32001), a2m.UnknownRecord),
    (409, body("CONFLICT", a2m_code=-32602, data={"group": "g"}), a2m.InvalidParams),
    (409, body("KEY_CONFLICT"), a2m.InvalidParams),
    (422, body("UNKNOWN_TIER", a2m_code=-32002), a2m.UnknownTier),
    (422, body("QUOTA_EXCEEDED", a2m_code=-32006), a2m.QuotaExceeded),
    (422, body("DIMENSION_MISMATCH"), a2m.EmbeddingMismatch),  # the name alone says it
    (422, body("INVALID_NAMESPACE"), a2m.InvalidParams),
    (422, body("INVALID_TYPE"), a2m.InvalidParams),
    (500, body("BACKEND_ERROR", a2m_code=-32603), a2m.InternalError),
    (500, body("BACKEND_ERROR"), a2m.InternalError),
    (501, body("CAPABILITY_NOT_SUPPORTED", a2m_code=-32003), a2m.CapabilityNotSupported),
    (422, body("SOMETHING_NEW", a2m_code=-32050), a2m.A2MProtocolError),
    (401, body("UNAUTHORIZED"), a2m.AuthenticationError),
    (403, body("ORIGIN_NOT_ALLOWED"), a2m.PermissionDeniedError),
    (404, body("NOT_FOUND"), a2m.A2MHTTPStatusError),
    (405, body("METHOD_NOT_ALLOWED"), a2m.MethodNotAllowedError),
    (413, body("BODY_TOO_LARGE"), a2m.PayloadTooLargeError),
    (503, body("UNAVAILABLE"), a2m.ServerError),
    (502, "<html>bad gateway</html>", a2m.ServerError),
]


def fake_rest(router: respx.MockRouter, answer: Any) -> respx.Route:
    router.get(f"{FAKE}/a2m/v1/memory:describe").respond(200, json=DESCRIBE)
    return router.post(f"{FAKE}/a2m/v1/memory:recall").mock(side_effect=answer)


def reply(status: int, payload: Any, **headers: str) -> httpx.Response:
    if isinstance(payload, str):
        return httpx.Response(status, text=payload, headers=headers)
    return httpx.Response(status, json=payload, headers=headers)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("status", "payload", "cls"),
    ERROR_REPLIES,
    ids=[f"{s}-{p['code'] if isinstance(p, dict) else 'html'}" for s, p, _ in ERROR_REPLIES],
)
async def test_every_rest_error_maps_to_the_json_rpc_class(
    rest: Opener, mode: str, status: int, payload: Any, cls: type[a2m.A2MError]
) -> None:
    with respx.mock(assert_all_called=False) as router:
        fake_rest(router, reply(status, payload))
        driver = rest(mode, url=FAKE, max_retries=0)
        with pytest.raises(cls) as caught:
            await driver.recall("x")
    error = caught.value
    assert type(error) is cls
    assert error.method == "memory/recall"
    if isinstance(error, a2m.A2MProtocolError):
        assert error.message == payload["message"]
        assert error.data == payload.get("data")
        if "a2m_code" in payload:
            assert error.code == payload["a2m_code"]
    else:
        assert isinstance(error, a2m.A2MHTTPStatusError)
        assert error.status == status


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("status", [429, 503])
async def test_retry_after_is_honoured(rest: Opener, mode: str, status: int) -> None:
    answers = iter(
        [reply(status, body("BUSY"), **{"Retry-After": "2"}), reply(200, {"records": []})]
    )
    with respx.mock(assert_all_called=False) as router:
        route = fake_rest(router, lambda request: next(answers))
        driver = rest(mode, url=FAKE)
        sleeps = install_sleep(driver.client)
        assert (await driver.recall("x")).records == []
    assert route.call_count == 2
    assert sleeps.delays == [2.0]


@pytest.mark.parametrize("mode", MODES)
async def test_a_backend_error_is_not_retried(rest: Opener, mode: str) -> None:
    with respx.mock(assert_all_called=False) as router:
        route = fake_rest(router, reply(500, body("BACKEND_ERROR", a2m_code=-32603)))
        driver = rest(mode, url=FAKE)
        with pytest.raises(a2m.InternalError):
            await driver.recall("x")
    assert route.call_count == 1


@pytest.mark.parametrize("mode", MODES)
async def test_timeouts_are_retried_then_raised(rest: Opener, mode: str) -> None:
    def time_out(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("injected", request=request)

    with respx.mock(assert_all_called=False) as router:
        route = fake_rest(router, time_out)
        driver = rest(mode, url=FAKE, max_retries=2)
        sleeps = install_sleep(driver.client)
        with pytest.raises(a2m.A2MTimeoutError):
            await driver.recall("x")
    assert route.call_count == 3
    assert len(sleeps.delays) == 2


@pytest.mark.parametrize("mode", MODES)
async def test_an_unreachable_server_is_a_connect_error(rest: Opener, mode: str) -> None:
    driver = rest(mode, url="http://127.0.0.1:9/", max_retries=0)
    with pytest.raises(a2m.A2MConnectError):
        await driver.describe()


# --- one store, two bindings -------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_records_cross_between_rest_and_json_rpc(rest: Opener, mode: str) -> None:
    from a2m_server.server import A2MServer
    from a2m_testing.servers import serve_http

    records = [
        {"content": "Paris", "key": "app/user/city", "metadata": {"n": [1, {"x": None}]}},
        {"content": "north", "embedding": [1.0, 0.0, 0.0], "role": "user", "group": "g"},
    ]
    with A2MServer() as server, serve_http(server) as url, A2MClient(url) as rpc:
        over_rest = rest(mode, url=url)
        ids = (await over_rest.remember(records, session="conv-1")).ids
        rest_view = (await over_rest.timeline(embeddings=True)).records
        assert [r.to_wire() for r in rpc.timeline(embeddings=True).records] == [
            r.to_wire() for r in rest_view
        ]
        assert rpc.fetch("app/user/city").record.id == ids[0]  # type: ignore[union-attr]

        written = rpc.remember({"content": "Lyon", "key": "app/user/city"}).ids
        assert written == ids[:1]  # the same key: a replacement (§3.6)
        fetched = (await over_rest.fetch("app/user/city")).record
        assert fetched is not None
        assert (fetched.content, fetched.revision) == ("Lyon", 1)
        assert [r.id for r in (await over_rest.recall(embedding=[1.0, 0.0, 0.0])).records][
            :1
        ] == ids[1:]

        # An entry written on the draft's own route is a record to the REST client too.
        entry = {"key": "user/goal", "type": "semantic", "value": {"goal": "ship"}}
        async with httpx.AsyncClient() as http:
            created = await http.post(f"{url}a2m/v1/app/entries", json=entry)
        assert created.status_code == 201
        goal = (await over_rest.fetch("app/user/goal")).record
        assert goal is not None
        assert goal.id == created.json()["id"]
        assert goal.metadata == {"namespace": "app", "type": "semantic", "value": {"goal": "ship"}}


@pytest.mark.parametrize("mode", MODES)
async def test_observations_cross_between_rest_and_json_rpc(rest: Opener, mode: str) -> None:
    """The observation verbs travel on REST's ``memory:{method}`` routes like any method:
    one remembered over REST deduplicates against the same fact remembered over JSON-RPC."""
    from a2m_server.server import A2MServer
    from a2m_testing.servers import serve_http

    wire = Wire()
    with A2MServer() as server, serve_http(server) as url, A2MClient(url) as rpc:
        over_rest = rest(mode, url=url, wire=wire)
        first = await over_rest.remember_observation("Builds run with uv.", tags=["tooling"])
        assert "POST /a2m/v1/memory:observations/remember" in wire.sent
        again = rpc.remember_observation("builds run with UV.", weight=2.0)
        assert (again.id, again.deduplicated, again.weight) == (first.id, True, 3.0)
        (listed,) = (await over_rest.list_observations()).observations
        assert (listed.id, listed.weight, listed.tags) == (first.id, 3.0, ["tooling"])
        actions = [e.action for e in (await over_rest.observation_audit()).entries]
        assert actions == ["merged", "created"]


# --- sharing -----------------------------------------------------------------------------


async def test_threads_share_one_sync_client(rest: Opener) -> None:
    wire = Wire()
    driver = rest("sync", wire=wire)
    client = driver.client
    assert isinstance(client, A2MClient)
    client.remember([f"fact {n}" for n in range(8)])
    failures: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(5):
                assert len(client.recall("fact", limit=8).records) == 8
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert wire.sent.count("GET /a2m/v1/memory:describe") == 1
    assert wire.sent.count("POST /a2m/v1/memory:recall") == 80


async def test_tasks_share_one_async_client(rest: Opener) -> None:
    import asyncio

    wire = Wire()
    driver = rest("async", wire=wire)
    client = driver.client
    assert isinstance(client, AsyncA2MClient)
    results = await asyncio.gather(*(client.recall("anything") for _ in range(32)))
    assert all(result.records == [] for result in results)
    assert wire.sent.count("GET /a2m/v1/memory:describe") == 1  # negotiated once
