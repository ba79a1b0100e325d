"""The raw A2M client in a minute: remember, recall, fetch by key, replay a conversation —
sync, then the same with the async twin.

Talks to the server at ``A2M_URL`` when set; otherwise starts a throw-away in-process
server, so it runs offline as it is:

    uv run python examples/client_quickstart.py
"""

from __future__ import annotations

import asyncio
import os

from a2m import A2MClient, AsyncA2MClient, RecordInput
from a2m_server import A2MServer


def sync_quickstart(memory: A2MClient) -> None:
    memory.remember(
        [
            RecordInput(content="The deploy key rotates every 90 days.", key="ops/deploy-key"),
            RecordInput(content="Ada prefers short answers.", key="people/ada/style"),
            RecordInput(content="Where is the runbook?", role="user", session="chat-1"),
            RecordInput(content="In the ops wiki, page 3.", role="assistant", session="chat-1"),
        ]
    )
    best = memory.recall("how often does the deploy key change?", limit=1).records[0]
    print(f"recall   {best.score:.2f}  {best.content}")
    fetched = memory.fetch("people/ada/style").record
    print(f"fetch    {fetched.content if fetched else None}")
    for turn in memory.timeline(where={"session": "chat-1"}).records:
        print(f"timeline {turn.role}: {turn.content}")


async def async_quickstart(memory: AsyncA2MClient) -> None:
    await memory.remember(RecordInput(content="Launch is on 21 March.", key="plan/launch"))
    found = await asyncio.gather(
        memory.recall("when is the launch?", limit=1),
        memory.recall("who prefers short answers?", limit=1),
    )
    for result in found:
        print(f"async    {result.records[0].content}")


def main() -> None:
    url = os.environ.get("A2M_URL")
    server = A2MServer()  # in-memory; unused when A2M_URL names a running server
    try:
        with A2MClient(url) if url else A2MClient.in_process(server) as memory:
            sync_quickstart(memory)
        asyncio.run(run_async(url, server))
    finally:
        server.close()


async def run_async(url: str | None, server: A2MServer) -> None:
    async with AsyncA2MClient(url) if url else AsyncA2MClient.in_process(server) as memory:
        await async_quickstart(memory)


if __name__ == "__main__":
    main()
