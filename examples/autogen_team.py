"""An AutoGen team that remembers: three AssistantAgents share one A2M store.

A round-robin team (researcher, planner, writer) plans a trip; every agent's model
context lives in the store by session, and the team's transcript is recorded as it
streams. Then the server restarts: the transcript replays in order, and a new selector
team's fact checker recalls what the first team's researcher found. The models are
replayed (no API key, no network beyond loopback). Runs in a few seconds:

    uv run python examples/autogen_team.py
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.messages import BaseChatMessage, MemoryQueryEvent
from autogen_agentchat.teams import RoundRobinGroupChat, SelectorGroupChat
from autogen_ext.models.replay import ReplayChatCompletionClient

from a2m import A2MConnectionError, AsyncA2MClient
from a2m_autogen import PROVENANCE_KEY, A2MChatCompletionContext, A2MMemory
from a2m_autogen.agentchat import A2MTranscript

SESSION = "lisbon-trip"


def start_server(db: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``a2m-server serve`` on a free loopback port, as a user would run it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    command = [sys.executable, "-m", "a2m_server", "serve", "--db", str(db), "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return process, f"http://127.0.0.1:{port}/"


async def wait_until_up(url: str, deadline_s: float = 20.0) -> None:
    deadline = time.monotonic() + deadline_s
    async with AsyncA2MClient(url, max_retries=0) as probe:
        while True:
            try:
                await probe.describe()
                return
            except A2MConnectionError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)


def member(client: AsyncA2MClient, name: str, reply: str, session: str) -> AssistantAgent:
    """An agent whose model context lives in the store, and whose memory recalls from the
    team transcript (each agent's context holds its own copy of what was said)."""
    memory = A2MMemory(
        client,
        namespace=f"trip/{name}/notes",
        source_agent=name,
        query_namespace="trip/transcript",
    )
    return AssistantAgent(
        name,
        model_client=ReplayChatCompletionClient([reply]),
        model_context=A2MChatCompletionContext(client, session=session, namespace=f"trip/{name}"),
        memory=[memory],
    )


async def first_run(url: str) -> None:
    await wait_until_up(url)
    async with AsyncA2MClient(url) as client:
        replies = {
            "researcher": "Finding: the Lisbon tile museum is closed on mondays.",
            "planner": "Plan: monday is castle day, the tile museum waits for tuesday.",
            "writer": "Itinerary: castle on monday, tile museum on tuesday.",
        }
        team = RoundRobinGroupChat(
            [member(client, name, reply, SESSION) for name, reply in replies.items()],
            termination_condition=MaxMessageTermination(4),
        )
        transcript = A2MTranscript(client, session=SESSION, namespace="trip/transcript")
        print("== a round-robin team plans; every message goes to the store ==")
        async for item in transcript.stream(team.run_stream(task="Plan a Lisbon trip")):
            if isinstance(item, BaseChatMessage):
                print(f"[{item.source:>10}] {item.to_text()}")


async def after_restart(url: str) -> None:
    await wait_until_up(url)
    async with AsyncA2MClient(url) as client:
        print("\n== after a restart, the transcript replays from the store ==")
        transcript = A2MTranscript(client, session=SESSION, namespace="trip/transcript")
        for message in await transcript.messages():
            print(f"[{message.source:>10}] {message.to_text()}")

        print("\n== a new selector team's fact checker recalls what the researcher found ==")
        checkers = [
            member(client, "fact_checker", "Confirmed: closed on mondays.", "check-1"),
            member(client, "editor", "Edited.", "check-1"),
        ]
        team = SelectorGroupChat(
            checkers,
            model_client=ReplayChatCompletionClient(["fact_checker"]),
            termination_condition=MaxMessageTermination(2),
        )
        result = await team.run(task="Is the tile museum open on mondays?")
        for item in result.messages:
            if isinstance(item, MemoryQueryEvent):
                for content in item.content:
                    seen = (content.metadata or {}).get(PROVENANCE_KEY, {})
                    print(f"  recalled from {seen.get('source_agent')}: {content.content}")
            elif isinstance(item, BaseChatMessage):
                print(f"[{item.source:>10}] {item.to_text()}")


def main() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="a2m-autogen-"))
    db = workdir / "team-memory.db"
    try:
        for run in (first_run, after_restart):
            process, url = start_server(db)
            try:
                asyncio.run(run(url))
            finally:
                process.terminate()
                process.wait(timeout=15)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
