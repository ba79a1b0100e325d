"""Over an authenticated connection two principals using one session name each load their
own transcript, and a memory query lists each record once."""

from __future__ import annotations

import pytest
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.models import UserMessage

from a2m import AsyncA2MClient
from a2m_autogen import A2MChatCompletionContext, A2MMemory
from a2m_server.server import A2MServer
from a2m_testing.servers import serve_http

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("store_backend")]


async def test_each_principal_loads_its_own_transcript(a2m_server: A2MServer) -> None:
    with serve_http(a2m_server, tokens={"token-a": "alice", "token-b": "bob"}) as url:
        alice = AsyncA2MClient(url, token="token-a")
        bob = AsyncA2MClient(url, token="token-b")
        try:
            for client, text in ((alice, "alice here"), (bob, "bob here")):
                context = A2MChatCompletionContext(client, session="s1")
                await context.add_message(UserMessage(content=text, source="user"))
                memory = A2MMemory(client, namespace="team/notes")
                await memory.add(
                    MemoryContent(content=f"{text}: tea", mime_type=MemoryMimeType.TEXT)
                )
            for client, text in ((alice, "alice here"), (bob, "bob here")):
                loaded = await A2MChatCompletionContext(client, session="s1").get_messages()
                assert [m.content for m in loaded] == [text]
                found = (await A2MMemory(client, namespace="team/notes").query("tea")).results
                ids = [r.metadata["a2m"]["id"] for r in found if r.metadata]
                assert len(ids) == len(set(ids)) == 2  # shared memory: both, each once
        finally:
            await alice.aclose()
            await bob.aclose()
