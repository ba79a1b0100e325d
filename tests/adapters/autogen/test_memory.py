"""A2MMemory's own surface against a real server over HTTP: what add stores, what query
returns, what clear and close touch."""

from __future__ import annotations

from typing import Any

import pytest
from autogen_core import CancellationToken, Image
from autogen_core.memory import ListMemory, MemoryContent, MemoryMimeType
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import UserMessage

from a2m import AsyncA2MClient
from a2m.adapter import AsyncA2MAdapter
from a2m_autogen import PROVENANCE_KEY, A2MMemory, ContentNotStorable

pytestmark = pytest.mark.anyio

TEXT = MemoryMimeType.TEXT


async def stored(client: AsyncA2MClient, namespace: str) -> list[Any]:
    return (await client.timeline(key_prefix=f"{namespace}/")).records


async def test_text_markdown_and_json_round_trip_with_mime_type_and_metadata(
    client: AsyncA2MClient,
) -> None:
    memory = A2MMemory(client, namespace="app/prefs", source_agent="planner")
    await memory.add(MemoryContent(content="The user likes pizza", mime_type=TEXT))
    await memory.add(
        MemoryContent(
            content="# Pizza\nwith *basil*",
            mime_type=MemoryMimeType.MARKDOWN,
            metadata={"topic": "food", "tags": ["pizza"]},
        )
    )
    await memory.add(
        MemoryContent(
            content={"pizza": {"topping": "basil", "slices": 8}}, mime_type=MemoryMimeType.JSON
        )
    )
    await memory.add(MemoryContent(content='{"pizza": "margherita"}', mime_type="application/json"))

    results = (await memory.query("pizza", k=10)).results
    by_mime: dict[Any, list[MemoryContent]] = {}
    for result in results:
        by_mime.setdefault(result.mime_type, []).append(result)
    assert [r.content for r in by_mime[TEXT]] == ["The user likes pizza"]
    (markdown,) = by_mime[MemoryMimeType.MARKDOWN]
    assert markdown.content == "# Pizza\nwith *basil*"
    assert markdown.metadata is not None
    assert markdown.metadata["topic"] == "food"
    assert markdown.metadata["tags"] == ["pizza"]
    # Each comes back as it was given, as ListMemory gives it: the dict, and the string.
    assert sorted(map(repr, (r.content for r in by_mime[MemoryMimeType.JSON]))) == sorted(
        map(repr, [{"pizza": {"topping": "basil", "slices": 8}}, '{"pizza": "margherita"}'])
    )

    # JSON is kept as structure in metadata.value, a dict's compact text (or the string
    # given) as content.
    records = {r.content: r for r in await stored(client, "app/prefs")}
    assert records['{"pizza": "margherita"}'].metadata["value"] == {"pizza": "margherita"}
    structured = records['{"pizza":{"topping":"basil","slices":8}}']
    assert structured.metadata["value"] == {"pizza": {"topping": "basil", "slices": 8}}
    assert structured.metadata["mime_type"] == "application/json"
    assert structured.metadata["source_framework"] == "autogen"
    assert structured.metadata["source_agent"] == "planner"
    assert structured.metadata["namespace"] == "app/prefs"
    assert structured.key.startswith("app/prefs/")
    assert structured.role == "user"


@pytest.mark.parametrize(
    "text", ['"window seats please"', '{"seat": "window"}', "[1, 2, 3]", " 7 ", "null"]
)
async def test_json_given_as_a_string_reads_back_as_that_string(
    client: AsyncA2MClient, text: str
) -> None:
    """As ListMemory returns it: not the structure it holds (a dict), nor its compact
    form, nor a string scalar without its quotes (no longer JSON)."""
    memory = A2MMemory(client, namespace="app/json")
    given = MemoryContent(content=text, mime_type=MemoryMimeType.JSON, metadata={"n": 1})
    await memory.add(given)
    listed = ListMemory()
    await listed.add(given)
    (ours,) = (await memory.query("window seats seat 7 1 2 3 null", k=5)).results
    (theirs,) = (await listed.query("anything")).results
    assert (
        (ours.content, ours.mime_type)
        == (theirs.content, theirs.mime_type)
        == (
            text,
            MemoryMimeType.JSON,
        )
    )
    assert ours.metadata is not None
    assert {k: v for k, v in ours.metadata.items() if k == "n" or k == "json_text"} == {"n": 1}


async def test_each_result_carries_score_record_id_and_provenance(
    client: AsyncA2MClient,
) -> None:
    memory = A2MMemory(client, namespace="app/facts", source_agent="scribe", session="s-1")
    await memory.add(MemoryContent(content="The deploy key rotates every 90 days", mime_type=TEXT))
    (result,) = (await memory.query("deploy key")).results
    assert result.metadata is not None
    provenance = result.metadata[PROVENANCE_KEY]
    (record,) = await stored(client, "app/facts")
    assert provenance["id"] == record.id
    assert provenance["key"] == record.key
    assert isinstance(provenance["score"], float)
    assert provenance["namespace"] == "app/facts"
    assert provenance["source_framework"] == "autogen"
    assert provenance["source_agent"] == "scribe"
    assert provenance["session"] == "s-1"
    assert provenance["role"] == "user"
    assert provenance["type"] == "semantic"


async def test_a_result_added_back_is_a_new_record_with_the_same_content(
    client: AsyncA2MClient,
) -> None:
    first = A2MMemory(client, namespace="app/a")
    second = A2MMemory(client, namespace="app/b")
    await first.add(MemoryContent(content="copy me", mime_type=TEXT, metadata={"n": 1}))
    (found,) = (await first.query("copy me")).results
    await second.add(found)
    (copied,) = (await second.query("copy me", namespace="app/b")).results
    assert copied.content == "copy me"
    assert copied.metadata is not None
    assert copied.metadata["n"] == 1
    assert copied.metadata[PROVENANCE_KEY]["namespace"] == "app/b"
    assert copied.metadata[PROVENANCE_KEY]["id"] != found.metadata[PROVENANCE_KEY]["id"]  # type: ignore[index]


async def test_image_or_binary_with_a_uri_becomes_an_external_record(
    client: AsyncA2MClient,
) -> None:
    memory = A2MMemory(client, namespace="app/media")
    await memory.add(
        MemoryContent(
            content=Image.from_base64(_PIXEL),
            mime_type="image/png",
            metadata={"uri": "https://files.example/cat.png", "caption": "a cat"},
        )
    )
    await memory.add(
        MemoryContent(content="s3://bucket/report.bin", mime_type=MemoryMimeType.BINARY)
    )
    records = {r.uri: r for r in await stored(client, "app/media")}
    assert set(records) == {"https://files.example/cat.png", "s3://bucket/report.bin"}
    assert records["https://files.example/cat.png"].media_type == "image/png"
    assert records["s3://bucket/report.bin"].media_type == "application/octet-stream"

    results = {str(r.content): r for r in (await memory.query(k=10)).results}
    cat = results["https://files.example/cat.png"]
    assert cat.mime_type == "image/png"
    assert cat.metadata is not None
    assert cat.metadata["caption"] == "a cat"
    assert cat.metadata[PROVENANCE_KEY]["uri"] == "https://files.example/cat.png"
    assert results["s3://bucket/report.bin"].mime_type == MemoryMimeType.BINARY


@pytest.mark.parametrize(
    "content",
    [
        MemoryContent(content=b"\x89PNG", mime_type=MemoryMimeType.BINARY),
        MemoryContent(content="not a uri", mime_type=MemoryMimeType.IMAGE),
        MemoryContent(content="{not json", mime_type=MemoryMimeType.JSON),
        MemoryContent(content="x", mime_type=TEXT, metadata={"namespace": "elsewhere"}),
        MemoryContent(content="x", mime_type=TEXT, metadata={"value": 1}),
        MemoryContent(content="x", mime_type=TEXT, metadata={"tags": "not-a-list"}),
    ],
    ids=["bytes", "image-no-uri", "bad-json", "namespace-key", "value-key", "bad-tags"],
)
async def test_content_that_cannot_be_stored_is_refused_and_nothing_is_written(
    client: AsyncA2MClient, content: MemoryContent
) -> None:
    memory = A2MMemory(client, namespace="app/bad")
    with pytest.raises(ContentNotStorable):
        await memory.add_many([MemoryContent(content="fine", mime_type=TEXT), content])
    assert await stored(client, "app/bad") == []


async def test_an_image_without_uri_names_what_is_missing(client: AsyncA2MClient) -> None:
    memory = A2MMemory(client, namespace="app/bad")
    with pytest.raises(ContentNotStorable, match=r"metadata\['uri'\]"):
        await memory.add(MemoryContent(content=Image.from_base64(_PIXEL), mime_type="image/png"))


async def test_k_threshold_namespace_and_key_prefix_narrow_a_query(
    client: AsyncA2MClient,
) -> None:
    alpha = A2MMemory(client, namespace="team/alpha")
    beta = A2MMemory(client, namespace="team/beta")
    for i in range(4):
        await alpha.add(MemoryContent(content=f"alpha note {i} about rockets", mime_type=TEXT))
        await beta.add(MemoryContent(content=f"beta note {i} about rockets", mime_type=TEXT))

    everything = (await alpha.query("rockets", k=20)).results
    assert len(everything) == 8  # reads cross namespaces
    assert len((await alpha.query("rockets", k=3)).results) == 3
    only_beta = (await alpha.query("rockets", k=20, namespace="team/beta")).results
    assert {str(r.content).split()[0] for r in only_beta} == {"beta"}
    under_team = (await alpha.query("rockets", k=20, key_prefix="team/alpha")).results
    assert {str(r.content).split()[0] for r in under_team} == {"alpha"}
    assert (await alpha.query("rockets", score_threshold=1e9)).results == []
    narrowed = A2MMemory(client, namespace="team/gamma", query_namespace="team/alpha", k=2)
    assert [str(r.content).split()[0] for r in (await narrowed.query("rockets")).results] == [
        "alpha",
        "alpha",
    ]


async def test_records_of_other_frameworks_and_raw_clients_come_back_with_provenance(
    client: AsyncA2MClient,
) -> None:
    langchain = AsyncA2MAdapter(
        client, "lc/notes", source_framework="langchain", agent="researcher"
    )
    await langchain.write("launch", "semantic", {"event": "launch", "site": "pad 39A"})
    await client.remember(
        {
            "content": "the launch slipped to wednesday",
            "role": "assistant",
            "session": "ops-7",
            "metadata": {"source_framework": "crewai", "source_agent": "ops"},
        }
    )
    memory = A2MMemory(client, namespace="autogen/mine")
    results = (await memory.query("launch", k=10)).results
    frameworks = {r.metadata[PROVENANCE_KEY]["source_framework"]: r for r in results if r.metadata}
    assert set(frameworks) == {"langchain", "crewai"}
    written = frameworks["langchain"]
    assert written.content == {"event": "launch", "site": "pad 39A"}
    assert written.mime_type == MemoryMimeType.JSON
    assert written.metadata is not None
    assert written.metadata[PROVENANCE_KEY]["source_agent"] == "researcher"
    assert written.metadata[PROVENANCE_KEY]["namespace"] == "lc/notes"
    raw = frameworks["crewai"]
    assert raw.content == "the launch slipped to wednesday"
    assert raw.mime_type == TEXT
    assert raw.metadata is not None
    assert raw.metadata[PROVENANCE_KEY]["session"] == "ops-7"
    assert raw.metadata[PROVENANCE_KEY]["role"] == "assistant"
    assert "key" not in raw.metadata[PROVENANCE_KEY]


async def test_clear_removes_only_this_memorys_namespace(client: AsyncA2MClient) -> None:
    mine = A2MMemory(client, namespace="app/mine")
    child = A2MMemory(client, namespace="app/mine/child")
    other = A2MMemory(client, namespace="app/other")
    for memory in (mine, child, other):
        await memory.add(MemoryContent(content=f"note of {memory.namespace}", mime_type=TEXT))
    await client.remember("an unkeyed note")
    await mine.clear()
    left = sorted(r.content for r in (await client.timeline()).records)
    assert left == ["an unkeyed note", "note of app/mine/child", "note of app/other"]


async def test_close_closes_only_what_the_memory_opened(
    client: AsyncA2MClient, a2m_http_url: str
) -> None:
    given = A2MMemory(client, namespace="app/x")
    await given.add(MemoryContent(content="kept", mime_type=TEXT))
    await given.close()
    assert (await client.recall("kept")).records  # the caller's client still works

    own = A2MMemory(url=a2m_http_url, namespace="app/x")
    assert [r.content for r in (await own.query("kept")).results] == ["kept"]
    opened = await own._link.client()
    await own.close()
    with pytest.raises(RuntimeError, match="closed"):
        await opened.recall("kept")


async def test_a_cancelled_token_cancels_the_call(client: AsyncA2MClient) -> None:
    import asyncio

    memory = A2MMemory(client, namespace="app/x")
    token = CancellationToken()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await memory.add(MemoryContent(content="never", mime_type=TEXT), token)
    assert await stored(client, "app/x") == []


async def test_no_network_in_the_constructor() -> None:
    memory = A2MMemory(url="http://127.0.0.1:9/", namespace="app/x")  # nothing listens on 9
    assert memory.name == "app/x"
    await memory.close()


def test_bad_arguments_fail_before_any_call() -> None:
    with pytest.raises(ValueError, match="namespace"):
        A2MMemory(url="http://127.0.0.1:9/", namespace="Bad Namespace")
    with pytest.raises(ValueError, match="memory_type"):
        A2MMemory(url="http://127.0.0.1:9/", memory_type="external")


_PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


async def test_each_call_is_one_round_trip_and_concurrent_first_calls_describe_once(
    a2m_http_url: str,
) -> None:
    import asyncio

    import httpx

    sent: list[str] = []

    async def note(request: httpx.Request) -> None:
        sent.append(request.read().decode())

    async with (
        httpx.AsyncClient(event_hooks={"request": [note]}) as http,
        AsyncA2MClient(a2m_http_url, http_client=http) as client,
    ):
        memory = A2MMemory(client, namespace="app/trips")
        await asyncio.gather(
            *(memory.add(MemoryContent(content=f"n{i}", mime_type=TEXT)) for i in range(16))
        )
        assert sum('"memory/describe"' in body for body in sent) == 1
        assert len(sent) == 17
        sent.clear()
        await memory.query("n1")
        await memory.add_many([MemoryContent(content=f"m{i}", mime_type=TEXT) for i in range(50)])
        assert len(sent) == 2


@pytest.mark.parametrize("operators", [True, False], ids=["server", "here"])
async def test_a_where_with_operators_runs_on_the_server_or_here(
    a2m_async_client_factory: Any, operators: bool
) -> None:
    from dataclasses import replace

    from a2m import filters
    from a2m_server.config import ServerConfig

    config = replace(ServerConfig(), where_operators=operators)
    client = a2m_async_client_factory("http", config=config)
    assert bool(await client.filter_operators()) is operators
    memory = A2MMemory(client, namespace="app/ranked", k=2)
    await memory.add_many(
        [
            MemoryContent(content=f"ranked note {i}", mime_type=TEXT, metadata={"rank": i})
            for i in range(6)
        ]
    )
    found = (await memory.query("ranked note", where={"rank": filters.gte(3)})).results
    assert len(found) == 2
    assert all(r.metadata is not None and r.metadata["rank"] >= 3 for r in found)
    everything = (await memory.query("ranked", k=10, where={"rank": filters.in_([1, 4])})).results
    assert sorted(r.metadata["rank"] for r in everything if r.metadata) == [1, 4]

    scoped = A2MMemory(client, namespace="app/ranked", where={"rank": filters.lt(1)})
    context = UnboundedChatCompletionContext([UserMessage(content="ranked note", source="user")])
    result = await scoped.update_context(context)
    assert [c.content for c in result.memories.results] == ["ranked note 0"]
    dumped = A2MMemory(url="http://127.0.0.1:9/", where={"rank": filters.lt(1)}).dump_component()
    assert dumped.config["where"] == {"rank": {"$lt": 1}}


async def test_a_where_that_cannot_be_meant_is_refused_unsent(client: AsyncA2MClient) -> None:
    from a2m import InvalidParams

    memory = A2MMemory(client, namespace="app/x")
    with pytest.raises(InvalidParams, match="nothing was sent"):
        await memory.query("x", where={"rank": {"$between": [1, 2]}})
