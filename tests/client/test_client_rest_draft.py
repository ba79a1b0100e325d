"""The REST transport against a server offering only the REST draft's routes (the bundled
server with ``rest_methods=False``), sync and async: what those routes can carry works and
round-trips with JSON-RPC; everything else raises ``CapabilityNotSupported`` before a
single HTTP request leaves (watched with an httpx event hook)."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import respx
from client_support import MODES, Driver, install_sleep, server_config

import a2m
from a2m import A2MClient, AsyncA2MClient
from a2m.transports import AsyncRESTTransport, RESTTransport

pytestmark = pytest.mark.anyio

NAMESPACE = "app/wf-42"
DRAFT_METHODS = [
    "memory/describe",
    "memory/remember",
    "memory/recall",
    "memory/timeline",
    "memory/forget",
    "memory/fetch",
]


class Wire:
    """Every HTTP request a client sends, as ``"METHOD /path?query"``, with its JSON body."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.bodies: list[Any] = []

    def _record(self, request: httpx.Request) -> None:
        self.sent.append(f"{request.method} {request.url.raw_path.decode()}")
        self.bodies.append(json.loads(request.content) if request.content else None)

    async def _arecord(self, request: httpx.Request) -> None:
        self._record(request)

    def client_for(self, mode: str) -> httpx.Client | httpx.AsyncClient:
        if mode == "sync":
            return httpx.Client(event_hooks={"request": [self._record]})
        return httpx.AsyncClient(event_hooks={"request": [self._arecord]})


@dataclass
class Env:
    """A draft-only server, a REST client of it (``draft``), the client's ``wire``, and a
    JSON-RPC client of the same store (``rpc``) to check what was written."""

    draft: Driver
    wire: Wire
    rpc: A2MClient
    url: str

    def get(self, path: str) -> httpx.Response:
        """A plain GET on the draft routes, past the client."""
        return httpx.get(f"{self.url}a2m/v1/{path}")

    async def post_entry(self, namespace: str, entry: dict[str, Any]) -> dict[str, Any]:
        async with httpx.AsyncClient() as http:
            response = await http.post(f"{self.url}a2m/v1/{namespace}/entries", json=entry)
        assert response.status_code in (200, 201), response.text
        answer: dict[str, Any] = response.json()
        return answer


Opener = Callable[..., Env]


@pytest.fixture
async def open_draft() -> AsyncIterator[Opener]:
    """``open_draft(mode, *, app=None, url=None, config=None, **client_options)``."""
    from a2m_server.server import A2MServer
    from a2m_testing.servers import serve_http

    stack = ExitStack()
    opened: list[tuple[Driver, Any]] = []

    def build(
        mode: str,
        *,
        app: dict[str, Any] | None = None,
        url: str | None = None,
        config: Any = None,
        **client_options: Any,
    ) -> Env:
        if url is None:
            server = stack.enter_context(A2MServer(config or server_config()))
            url = stack.enter_context(serve_http(server, rest_methods=False, **(app or {})))
        rpc = stack.enter_context(A2MClient(url, token=client_options.get("token")))
        wire = Wire()
        http_client = wire.client_for(mode)
        cls = A2MClient if mode == "sync" else AsyncA2MClient
        client = cls.rest(url, namespace=NAMESPACE, http_client=http_client, **client_options)
        driver = Driver(client, "rest-draft")
        opened.append((driver, http_client))
        return Env(driver, wire, rpc, url)

    with stack:
        try:
            yield build
        finally:
            for driver, http_client in reversed(opened):
                if driver.is_async:
                    await driver.client.aclose()
                    await http_client.aclose()
                else:
                    driver.client.close()
                    http_client.close()


@pytest.fixture(params=MODES)
def env(request: pytest.FixtureRequest, open_draft: Opener) -> Env:
    return open_draft(request.param)


def mode_of(driver: Driver) -> str | None:
    transport = driver.client._state.transport
    assert isinstance(transport, (RESTTransport, AsyncRESTTransport))
    return transport.mode


# --- describe ----------------------------------------------------------------------------


async def test_describe_declares_what_the_draft_routes_carry(env: Env) -> None:
    described = await env.draft.describe()
    assert env.wire.sent == [
        "GET /a2m/v1/memory:describe",  # the probe, answered 404
        "GET /a2m/v1/app/wf-42/entries?recursive=false&limit=1&offset=0",  # a draft list?
    ]
    assert mode_of(env.draft) == "draft"
    assert described.capabilities == ["core", "keys", "embeddings"]
    assert described.methods == DRAFT_METHODS
    assert "draft" in described.name
    assert described.events is None
    assert described.embeddings is not None
    assert described.embeddings.metric == "cosine"
    await env.draft.describe()
    await env.draft.timeline()
    assert env.wire.sent.count("GET /a2m/v1/memory:describe") == 1  # decided once
    assert len([sent for sent in env.wire.sent if "limit=1&" in sent]) == 1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "not_found",
    [
        {"text": "404 page not found\n", "headers": {"Content-Type": "text/plain"}},
        {"json": {"detail": "Not Found"}},
        {"content": b""},
    ],
    ids=["plain text", "json", "empty"],
)
async def test_a_server_that_is_not_a2m_is_not_taken_for_the_draft(
    open_draft: Opener, mode: str, not_found: dict[str, Any]
) -> None:
    # Any web server answers 404 to a route it does not have: the draft's own list route
    # decides, so describe() cannot invent a draft server that is not there.
    with respx.mock(assert_all_called=False) as router:
        router.get(url__startswith="http://web.test/").respond(404, **not_found)
        env = open_draft(mode, url="http://web.test/")
        with pytest.raises(a2m.A2MError, match="not an A2M"):
            await env.draft.describe()
        assert mode_of(env.draft) is None  # still undecided: a later call asks again


@pytest.mark.parametrize("mode", MODES)
async def test_a_405_probe_also_means_draft(open_draft: Opener, mode: str) -> None:
    with respx.mock(assert_all_called=False) as router:
        router.get("http://draft.test/a2m/v1/memory:describe").respond(405)
        router.get("http://draft.test/a2m/v1/app/wf-42/entries").respond(
            200, json={"entries": [], "total": 0, "next_offset": None}
        )
        env = open_draft(mode, url="http://draft.test/")
        assert (await env.draft.timeline()).records == []
        assert mode_of(env.draft) == "draft"


# --- what the draft cannot carry ------------------------------------------------------------

REFUSED: dict[str, Callable[[Driver], Any]] = {
    "recall by text": lambda c: c.recall("deploy key"),
    "recall by text and embedding": lambda c: c.recall("deploy", embedding=[1.0, 0.0]),
    "recall where on metadata": lambda c: c.recall(where={"topic": "ops"}),
    "recall where on several types": lambda c: c.recall(where={"type": ["semantic", "working"]}),
    "recall key_prefix not a namespace": lambda c: c.recall(key_prefix="app/User Notes"),
    "recall tier": lambda c: c.recall(tier="working"),
    "recall prompt": lambda c: c.recall(prompt=True),
    "timeline where on session": lambda c: c.timeline(where={"session": "conv-1"}),
    "forget ids": lambda c: c.forget(["some-id"]),
    "forget query": lambda c: c.forget(query="deploy"),
    "forget everything": lambda c: c.forget(key_prefix=""),
    "forget type alone": lambda c: c.forget(where={"type": "semantic"}),
    "forget where on metadata": lambda c: c.forget(where={"topic": "ops"}),
    "forget key and prefix": lambda c: c.forget(where={"key": "app/x"}, key_prefix="app"),
    "forget key and type": lambda c: c.forget(where={"key": "app/x", "type": "semantic"}),
    "remember role": lambda c: c.remember({"content": "hi", "role": "user"}),
    "remember group": lambda c: c.remember(["fine", {"content": "hi", "group": "g"}]),
    "remember salience": lambda c: c.remember({"content": "hi", "salience": 0.5}),
    "remember session": lambda c: c.remember("hi", session="conv-1"),
    "promote": lambda c: c.promote(["x"], "semantic"),
    "consolidate": lambda c: c.consolidate(),
    "reinforce": lambda c: c.reinforce(["x"]),
    "sessions": lambda c: c.sessions(),
    "close_session": lambda c: c.close_session("conv-1"),
    "events": lambda c: c.events(),
    "subscribe": lambda c: c.subscribe(),
    "unsubscribe": lambda c: c.unsubscribe(),
    "summarize": lambda c: c.summarize(query="x"),
    "describe owner": lambda c: c.describe(owner="alice"),
}


@pytest.mark.parametrize("call", list(REFUSED.values()), ids=list(REFUSED))
async def test_what_the_draft_cannot_carry_is_refused_unsent(env: Env, call: Any) -> None:
    await env.draft.describe()
    before = list(env.wire.sent)
    with pytest.raises(a2m.CapabilityNotSupported) as refused:
        await call(env.draft)
    assert env.wire.sent == before  # not one request
    assert "nothing was sent" in refused.value.message


async def test_observations_are_refused_unsent_naming_the_bindings_that_carry_them(
    env: Env,
) -> None:
    """The draft's entry routes cannot carry the observations extension: its verbs are
    refused before anything is sent, the error says which bindings do carry them, and
    nothing is written."""
    await env.draft.describe()
    before = list(env.wire.sent)
    for call in (
        lambda c: c.remember_observation("Builds run with uv.", tags=["tooling"]),
        lambda c: c.list_observations(),
        lambda c: c.recall_observations("builds"),
    ):
        with pytest.raises(a2m.CapabilityNotSupported) as refused:
            await call(env.draft)
        assert "nothing was sent" in refused.value.message
        assert "JSON-RPC bindings (in-process, stdio, HTTP)" in refused.value.message
        assert "memory:{method}" in refused.value.message
        assert refused.value.data == {"extension": "observations"}
    assert env.wire.sent == before
    assert env.rpc.list_observations().observations == []


@pytest.mark.parametrize(
    "record",
    [
        {"content": "x", "key": "city"},  # no namespace part
        {"content": "x", "key": "App/Notes/city"},  # not a valid namespace
        {"content": "x", "key": "app/wf-42/a/../b"},  # a key no URL can address
        {"content": "x", "key": "app/x", "metadata": {"tags": "geo"}},  # meta.tags: a list
    ],
    ids=["no-namespace", "bad-namespace", "dot-segment", "tags-not-a-list"],
)
async def test_a_batch_is_checked_whole_before_the_first_record_is_sent(
    env: Env, record: dict[str, Any]
) -> None:
    await env.draft.describe()
    before = list(env.wire.sent)
    with pytest.raises(a2m.InvalidParams):
        await env.draft.remember(["a fine first record", record])
    assert env.wire.sent == before


async def test_forget_without_a_selector_is_invalid(env: Env) -> None:
    with pytest.raises(a2m.InvalidParams):
        await env.draft.forget()


# --- remember ----------------------------------------------------------------------------


async def test_remember_writes_one_entry_per_record_in_order(env: Env) -> None:
    records = [
        {
            "content": "Paris",
            "key": "app/wf-42/user/city",
            "metadata": {"tags": ["geo"], "source_agent": "a1", "type": "procedural"},
        },
        "a note without a key",
        {"content": "elsewhere", "key": "other/ns/fact", "embedding": [0.0, 1.0, 0.0]},
        {
            "content": '{"goal":"ship"}',
            "key": "app/wf-42/user/goal",
            "metadata": {"value": {"goal": "ship"}},
        },
    ]
    ids = (await env.draft.remember(records)).ids
    assert env.wire.sent[2:] == [
        "POST /a2m/v1/app/wf-42/entries",
        "POST /a2m/v1/app/wf-42/entries",
        "POST /a2m/v1/other/ns/entries",
        "POST /a2m/v1/app/wf-42/entries",
    ]
    city = env.get("app/wf-42/entries/user/city").json()
    assert city["id"] == ids[0]
    assert (city["type"], city["value"]) == ("procedural", "Paris")
    assert city["meta"]["tags"] == ["geo"]
    assert city["meta"]["source_agent"] == "a1"
    goal = env.get("app/wf-42/entries/user/goal").json()
    assert goal["value"] == {"goal": "ship"}  # the structured value, not its text
    assert env.get("other/ns/entries/fact").json()["embedding"] == [0.0, 1.0, 0.0]

    by_id = {r.id: r for r in env.rpc.timeline().records}
    assert set(ids) <= set(by_id)
    note = by_id[ids[1]]
    assert note.content == "a note without a key"
    assert note.key is not None
    assert note.key.startswith(NAMESPACE + "/")  # stored as ({namespace}, {record id})
    assert note.metadata == {"namespace": NAMESPACE, "type": "semantic"}


async def test_remember_upserts_so_a_resend_writes_nothing_new(env: Env) -> None:
    first = (await env.draft.remember({"content": "Paris", "key": "app/wf-42/user/city"})).ids
    again = (await env.draft.remember({"content": "Lyon", "key": "app/wf-42/user/city"})).ids
    assert first == again  # the entry keeps its id (draft §5.4)
    assert [r.content for r in env.rpc.timeline().records] == ["Lyon"]


# --- reads -------------------------------------------------------------------------------


async def seed_vectors(env: Env) -> list[str]:
    return (
        await env.draft.remember(
            [
                {"content": "north", "key": "app/wf-42/north", "embedding": [1.0, 0.0, 0.0]},
                {
                    "content": "north-east",
                    "key": "app/wf-42/agent-b/ne",
                    "embedding": [0.7, 0.7, 0.0],
                    # The key alone would put it at (app/wf-42, agent-b/ne): the client's
                    # namespace wins when a key lies under it.
                    "metadata": {"type": "procedural", "namespace": "app/wf-42/agent-b"},
                },
                {"content": "east", "key": "app/wf-42/east", "embedding": [0.0, 1.0, 0.0]},
                {"content": "far away", "key": "zzz/north", "embedding": [1.0, 0.0, 0.0]},
            ]
        )
    ).ids


async def test_recall_by_embedding_queries_the_namespace_and_beneath(env: Env) -> None:
    ids = await seed_vectors(env)
    result = await env.draft.recall(embedding=[1.0, 0.0, 0.0], limit=2)
    assert [r.content for r in result.records] == ["north", "north-east"]
    assert [r.id for r in result.records] == [ids[0], ids[1]]
    scores = [r.score for r in result.records]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] == pytest.approx(1.0)
    assert result.records[0].embedding is None  # vectors only when asked for
    assert env.wire.sent[-1] == "POST /a2m/v1/app/wf-42/query"
    assert env.wire.bodies[-1] == {"embedding": [1.0, 0.0, 0.0], "recursive": True, "top_k": 2}

    narrow = await env.draft.recall(embedding=[1.0, 0.0, 0.0], min_score=0.5, embeddings=True)
    assert [r.content for r in narrow.records] == ["north", "north-east"]
    assert narrow.records[0].embedding == [1.0, 0.0, 0.0]
    # The draft bounds min_score to 0 to 1, where similarities lie: a JSON-RPC threshold
    # beyond it means everything or nothing, and is not sent as one the server refuses.
    sent = len(env.wire.sent)
    assert (await env.draft.recall(embedding=[1.0, 0.0, 0.0], min_score=1.5)).records == []
    assert len(env.wire.sent) == sent
    every = await env.draft.recall(embedding=[1.0, 0.0, 0.0], min_score=-2, limit=10)
    assert {r.content for r in every.records} == {"north", "north-east", "east"}
    assert "min_score" not in env.wire.bodies[-1]
    typed = await env.draft.recall(embedding=[1.0, 0.0, 0.0], where={"type": "procedural"})
    assert [r.content for r in typed.records] == ["north-east"]
    beneath = await env.draft.recall(embedding=[1.0, 0.0, 0.0], key_prefix="app/wf-42/agent-b/")
    assert [r.content for r in beneath.records] == ["north-east"]
    exact = await env.draft.recall(embedding=[1.0, 0.0, 0.0], where={"namespace": NAMESPACE})
    assert {r.content for r in exact.records} == {"north", "east"}
    assert env.wire.bodies[-1]["recursive"] is False
    other = await env.draft.recall(embedding=[1.0, 0.0, 0.0], key_prefix="zzz")
    assert [r.content for r in other.records] == ["far away"]
    outside = await env.draft.recall(
        embedding=[1.0, 0.0, 0.0], key_prefix="zzz", where={"namespace": NAMESPACE}
    )
    assert outside.records == []


async def test_recall_without_a_query_is_the_newest_entries(env: Env) -> None:
    for n in range(7):
        await env.draft.remember({"content": f"turn {n}", "key": f"app/wf-42/turn/{n}"})
    recent = await env.draft.recall(limit=3)
    assert [r.content for r in recent.records] == ["turn 6", "turn 5", "turn 4"]
    scores = [r.score for r in recent.records]
    assert scores == sorted(scores, reverse=True)
    assert all(score is not None and 0 < score <= 1 for score in scores)
    assert env.wire.sent[-1].startswith("GET /a2m/v1/app/wf-42/entries?recursive=true")
    assert len((await env.draft.recall()).records) == 5  # the draft's default top_k
    assert len((await env.draft.recall(limit=0)).records) == 7  # 0: no limit


async def test_timeline_is_oldest_first_and_pages_through_everything(env: Env) -> None:
    await env.draft.describe()  # the mode decided: what follows is the timeline's own
    decided = len(env.wire.sent)
    for start in range(0, 520, 130):
        env.rpc.remember(
            [
                {"content": f"turn {n}", "key": f"app/wf-42/turn/{n:03d}", "tier": "semantic"}
                for n in range(start, start + 130)
            ]
        )
    everything = (await env.draft.timeline()).records
    assert [r.content for r in everything] == [f"turn {n}" for n in range(520)]
    pages = [s for s in env.wire.sent[decided:] if s.startswith("GET /a2m/v1/app/wf-42/entries")]
    assert len(pages) == 2  # 500 + 20
    newest = (await env.draft.timeline(limit=3)).records
    assert [r.content for r in newest] == ["turn 517", "turn 518", "turn 519"]
    assert env.wire.sent[-1].endswith("limit=3&offset=517")
    assert [r.content for r in (await env.draft.timeline(limit=3)).records] == [
        r.content for r in env.rpc.timeline(limit=3).records
    ]


async def test_fetch_finds_an_entry_at_any_of_its_addresses(env: Env) -> None:
    await env.draft.remember(
        {"content": "Paris", "key": "app/wf-42/user/city", "embedding": [1.0, 0.0, 0.0]}
    )
    found = (await env.draft.fetch("app/wf-42/user/city")).record
    assert found is not None
    assert found.content == "Paris"
    assert found.embedding is None
    with_vector = (await env.draft.fetch("app/wf-42/user/city", embeddings=True)).record
    assert with_vector is not None
    assert with_vector.embedding == [1.0, 0.0, 0.0]

    written = await env.post_entry("app", {"key": "wf-42/note", "type": "episodic", "value": 42})
    note = (await env.draft.fetch("app/wf-42/note")).record  # (app/wf-42, note) is 404 first
    assert note is not None
    assert note.id == written["id"]
    assert note.metadata == {"namespace": "app", "type": "episodic", "value": 42}
    env.rpc.remember({"content": "deep", "key": "zzz/deep/key"})  # no stated namespace
    assert (await env.draft.fetch("zzz/deep/key")).record is not None

    before = len(env.wire.sent)
    assert (await env.draft.fetch("app/wf-42/user/unknown")).record is None  # not an error
    assert (await env.draft.fetch("no-slash")).record is None
    assert len(env.wire.sent) - before == 3  # the two addresses of the first; none for the second


# --- forget ------------------------------------------------------------------------------


async def test_forget_by_key_namespace_and_prefix(env: Env) -> None:
    await env.draft.remember(
        [
            {"content": "a", "key": "app/wf-42/a"},
            {"content": "b", "key": "app/wf-42/b", "metadata": {"type": "procedural"}},
            {"content": "c", "key": "app/wf-42/c"},
            {
                "content": "child",
                "key": "app/wf-42/agent-b/child",
                "metadata": {"namespace": "app/wf-42/agent-b"},
            },
            {"content": "other", "key": "zzz/other"},
        ]
    )
    assert (await env.draft.forget(where={"key": "app/wf-42/a"})).forgotten == 1
    assert (await env.draft.forget(where={"key": ["app/wf-42/a"]})).forgotten == 0
    assert env.wire.sent[-2:] == [  # every address of the key: both are 404 now
        "DELETE /a2m/v1/app/wf-42/entries/a",
        "DELETE /a2m/v1/app/entries/wf-42/a",
    ]
    await env.draft.remember({"content": "d", "key": "app/wf-42/d"})
    before = len(env.wire.sent)
    assert (await env.draft.forget(where={"key": "app/wf-42/d", "namespace": "zzz"})).forgotten == 0
    assert len(env.wire.sent) == before  # no address of that key lies in zzz
    in_namespace = await env.draft.forget(where={"key": "app/wf-42/d", "namespace": NAMESPACE})
    assert in_namespace.forgotten == 1
    assert env.wire.sent[-1] == "DELETE /a2m/v1/app/wf-42/entries/d"  # that address alone
    only_typed = await env.draft.forget(where={"namespace": NAMESPACE, "type": "procedural"})
    assert only_typed.forgotten == 1
    assert env.wire.sent[-1] == "DELETE /a2m/v1/app/wf-42/entries?recursive=false&type=procedural"
    exact = await env.draft.forget(where={"namespace": NAMESPACE})
    assert exact.forgotten == 1  # "c"; the child namespace is left alone
    assert [r.content for r in env.rpc.timeline().records] == ["child", "other"]
    assert (await env.draft.forget(key_prefix="app/")).forgotten == 1  # and beneath
    assert [r.content for r in env.rpc.timeline().records] == ["other"]


# --- one store, two bindings ---------------------------------------------------------------


async def test_records_round_trip_between_draft_rest_and_json_rpc(env: Env) -> None:
    record = {
        "content": "Build a real-time translation pipeline",
        "key": "app/wf-42/user/goal",
        "embedding": [0.12, -0.04, 0.87],
        "metadata": {"tags": ["user", "goal"], "confidence": 0.95, "source_framework": "n8n"},
    }
    (written,) = (await env.draft.remember(record)).ids
    over_rpc = env.rpc.fetch("app/wf-42/user/goal", embeddings=True).record
    assert over_rpc is not None
    assert over_rpc.id == written
    assert over_rpc.content == record["content"]
    assert over_rpc.embedding == record["embedding"]
    assert over_rpc.metadata == {**record["metadata"], "namespace": NAMESPACE, "type": "semantic"}

    env.rpc.remember({"content": "Lyon", "key": "app/wf-42/user/city", "metadata": {"n": 1}})
    over_draft = {r.key: r for r in (await env.draft.timeline()).records}
    city = over_draft["app/wf-42/user/city"]
    assert city.content == "Lyon"
    # A record without a stated namespace lists under everything before its last "/".
    assert city.metadata == {"n": 1, "namespace": "app/wf-42/user", "type": "working"}
    goal = over_draft["app/wf-42/user/goal"]
    assert (goal.id, goal.content) == (written, record["content"])
    assert goal.metadata == over_rpc.metadata


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_the_servers_refusals_keep_their_classes(open_draft: Opener, mode: str) -> None:
    config = server_config()
    small = dataclasses.replace(
        config, limits=dataclasses.replace(config.limits, max_content_length=20)
    )
    env = open_draft(mode, config=small)
    await env.draft.remember({"content": "v", "key": "app/wf-42/v", "embedding": [1.0, 0.0, 0.0]})
    with pytest.raises(a2m.EmbeddingMismatch):
        await env.draft.recall(embedding=[1.0, 0.0])
    with pytest.raises(a2m.QuotaExceeded):
        await env.draft.remember({"content": "x" * 50, "key": "app/wf-42/long"})

    read_only = open_draft(mode, config=server_config(read_only=True))
    with pytest.raises(a2m.ReadOnly):
        await read_only.draft.remember({"content": "x", "key": "app/wf-42/x"})
    assert (await read_only.draft.timeline()).records == []

    locked = open_draft(mode, app={"tokens": {"tok-a": "alice"}})
    with pytest.raises(a2m.AuthenticationError):
        await locked.draft.timeline()
    allowed = open_draft(mode, url=locked.url, token="tok-a")
    assert (await allowed.draft.remember({"content": "x", "key": "app/wf-42/x"})).ids
    assert mode_of(allowed.draft) == "draft"


@pytest.mark.parametrize("mode", MODES)
async def test_one_timeout_covers_every_request_of_a_call(open_draft: Opener, mode: str) -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        time.sleep(0.2)
        entry = json.loads(request.content)
        return httpx.Response(
            201,
            json={
                "id": entry["key"],
                "key": entry["key"],
                "namespace": NAMESPACE,
                "type": "semantic",
                "value": entry["value"],
                "embedding": None,
                "meta": {"created_at": "2026-01-01T00:00:00.000Z", "tags": []},
            },
        )

    with respx.mock(assert_all_called=False) as router:
        router.get("http://draft.test/a2m/v1/memory:describe").respond(404)
        router.get("http://draft.test/a2m/v1/app/wf-42/entries").respond(
            200, json={"entries": [], "total": 0, "next_offset": None}
        )
        route = router.post("http://draft.test/a2m/v1/app/wf-42/entries").mock(side_effect=slow)
        env = open_draft(mode, url="http://draft.test/", max_retries=0, timeout=0.35)
        await env.draft.describe()
        with pytest.raises(a2m.A2MTimeoutError):
            await env.draft.remember(
                [{"content": f"{n}", "key": f"app/wf-42/{n}"} for n in range(5)]
            )
    assert route.call_count == 2  # the third would have started after the deadline


@pytest.mark.parametrize("mode", MODES)
async def test_a_connect_error_after_a_calls_first_request_is_not_sent_again(
    open_draft: Opener, mode: str
) -> None:
    """A draft forget deletes key by key: a connect error on the second DELETE proves
    that one never left, not that the call did nothing (the first was answered), so it
    is a plain connection error, and the call is not sent again whole."""
    with respx.mock(assert_all_called=False) as router:
        router.get("http://draft.test/a2m/v1/memory:describe").respond(404)
        router.get("http://draft.test/a2m/v1/app/wf-42/entries").respond(
            200, json={"entries": [], "total": 0, "next_offset": None}
        )
        first = router.delete("http://draft.test/a2m/v1/app/wf-42/entries/k1").respond(204)
        second = router.delete("http://draft.test/a2m/v1/app/wf-42/entries/k2").mock(
            side_effect=httpx.ConnectError("connection refused")
        )
        env = open_draft(mode, url="http://draft.test/", max_retries=2)
        install_sleep(env.draft.client)
        await env.draft.describe()
        keys = ["app/wf-42/k1", "app/wf-42/k2"]
        with pytest.raises(a2m.A2MConnectionError) as caught:
            await env.draft.forget(where={"key": keys, "namespace": NAMESPACE})
    assert not isinstance(caught.value, a2m.A2MConnectError)
    assert "may have acted in part" in caught.value.message
    assert (first.call_count, second.call_count) == (1, 1)
