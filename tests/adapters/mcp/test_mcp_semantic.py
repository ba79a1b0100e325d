"""With the server embedding (the offline ``wordllama`` model) and no embedder anywhere
else, an MCP client's ``recall`` finds by meaning what another writer stored — a question
that shares no word with the fact — and the same question finds nothing on a server that
does not embed (issue 31: one semantic space for every framework)."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp_kit import CONFIG

from a2m import AsyncA2MClient
from a2m_mcp import build_server
from a2m_server.config import ServerConfig
from a2m_server.server import A2MServer

pytestmark = pytest.mark.anyio

pytest.importorskip("wordllama", reason="the server's embed extra (a2m-server[embed])")

FACT = "Maya adopted a small grey kitten last weekend"
DISTRACTORS = [
    "The office printer on floor three is jammed again",
    "Deploys are frozen during the holiday week",
    "The flight to Lisbon departs at seven tomorrow",
]


@pytest.mark.parametrize("embedder", ["wordllama", None], ids=["embedding", "lexical"])
async def test_recall_by_meaning_with_no_embedder_on_the_client(embedder: str | None) -> None:
    with A2MServer(ServerConfig(embedder=embedder)) as store:
        writer = AsyncA2MClient.in_process(store)
        await writer.remember(
            [
                {"content": text, "metadata": {"source_framework": "langgraph"}}
                for text in [FACT, *DISTRACTORS]
            ]
        )
        async with Client(build_server(writer, CONFIG)) as mcp:
            result = await mcp.call_tool("recall", {"query": "a pet cat", "limit": 1})
        await writer.aclose()
    assert not result.is_error
    assert result.structured_content is not None
    found = [m["content"] for m in result.structured_content["memories"]]
    assert found == ([FACT] if embedder else [])
