"""A2MSessionStore beside the framework's own SessionStore: the same calls answer the same,
a session saved in one process continues in another, principals keep their own
snapshots, and a state A2M cannot carry is refused before anything is written."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Agent, AgentSession, InMemoryHistoryProvider, SessionStore
from maf_fake_client import ScriptedChatClient, said

from a2m import AsyncA2MClient
from a2m.errors import CapabilityNotSupported, InvalidParams
from a2m_agent_framework import A2MSessionStore

# Each test runs on both stores (SQLite and PostgreSQL).
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("store_backend"),
    pytest.mark.filterwarnings("ignore::agent_framework._feature_stage.ExperimentalWarning"),
]


async def _script(store: SessionStore) -> list[Any]:
    first = AgentSession(session_id="s1")
    first.state["notes"] = {"seat": "window", "legs": [1, 2]}
    answers: list[Any] = [await store.get("s1")]
    await store.set("s1", first)
    answers.append((await store.get("s1")).to_dict())  # type: ignore[union-attr]
    first.state["notes"]["seat"] = "aisle"
    await store.set("s1", first)
    answers.append((await store.get("s1")).to_dict())  # type: ignore[union-attr]
    await store.set("odd id/with spaces?", AgentSession(session_id="x"))
    answers.append((await store.get("odd id/with spaces?")).to_dict())  # type: ignore[union-attr]
    await store.delete("s1")
    await store.delete("never there")
    answers.append(await store.get("s1"))
    with pytest.raises(ValueError, match="non-empty"):
        await store.get("")
    return answers


async def test_every_call_answers_as_the_framework_store_does(
    a2m_async_client: AsyncA2MClient,
) -> None:
    assert await _script(A2MSessionStore(a2m_async_client)) == await _script(SessionStore())


async def test_a_session_saved_in_one_process_continues_in_another(
    a2m_http_url: str, tmp_path: Path
) -> None:
    client = ScriptedChatClient([said("Hello Ada.")])
    agent = Agent(client=client, context_providers=[InMemoryHistoryProvider()])
    session = agent.create_session()
    await agent.run("I am Ada.", session=session)
    async with AsyncA2MClient(a2m_http_url) as a2m:
        await A2MSessionStore(a2m).set("ada", session)
    script = tmp_path / "resume.py"
    here = Path(__file__).parent
    script.write_text(
        textwrap.dedent(
            f"""
            import asyncio, sys, warnings
            warnings.simplefilter("ignore")
            sys.path.insert(0, {str(here)!r})
            from agent_framework import Agent, InMemoryHistoryProvider
            from maf_fake_client import ScriptedChatClient, said
            from a2m_agent_framework import A2MSessionStore

            async def main():
                store = A2MSessionStore(url={a2m_http_url!r})
                session = await store.get("ada")
                client = ScriptedChatClient([said("You are Ada.")])
                agent = Agent(client=client, context_providers=[InMemoryHistoryProvider()])
                result = await agent.run("Who am I?", session=session)
                print([m.text for m in client.inputs[0]])
                await store.set("ada", session)
                await store.aclose()

            asyncio.run(main())
            """
        )
    )
    ran = await asyncio.to_thread(
        subprocess.run, [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == str(["I am Ada.", "Hello Ada.", "Who am I?"])
    async with AsyncA2MClient(a2m_http_url) as a2m:
        restored = await A2MSessionStore(a2m).get("ada")
    assert restored is not None
    texts = [m.text for m in restored.state["in_memory"]["messages"]]
    assert texts == ["I am Ada.", "Hello Ada.", "Who am I?", "You are Ada."]


async def test_principals_keep_their_own_snapshots(a2m_http_server_factory: Any) -> None:
    url = a2m_http_server_factory(tokens={"alice-token": "alice", "bob-token": "bob"})
    async with (
        AsyncA2MClient(url, token="alice-token") as alice,
        AsyncA2MClient(url, token="bob-token") as bob,
    ):
        mine = AgentSession(session_id="s")
        mine.state["owner"] = "alice"
        theirs = AgentSession(session_id="s")
        theirs.state["owner"] = "bob"
        await A2MSessionStore(alice).set("shared-id", mine)
        await A2MSessionStore(bob).set("shared-id", theirs)
        assert (await A2MSessionStore(alice).get("shared-id")).state == {"owner": "alice"}  # type: ignore[union-attr]
        assert (await A2MSessionStore(bob).get("shared-id")).state == {"owner": "bob"}  # type: ignore[union-attr]
        await A2MSessionStore(bob).delete("shared-id")
        assert await A2MSessionStore(alice).get("shared-id") is not None


async def test_a_state_a2m_cannot_carry_is_refused(a2m_async_client: AsyncA2MClient) -> None:
    store = A2MSessionStore(a2m_async_client)
    session = AgentSession(session_id="s")
    session.state["score"] = float("inf")
    with pytest.raises(InvalidParams, match="nothing was written"):
        await store.set("s", session)
    assert await store.get("s") is None


async def test_a_server_without_keys_is_refused_by_name(a2m_http_server_factory: Any) -> None:
    async with AsyncA2MClient(a2m_http_server_factory(capabilities=["core"])) as a2m:
        with pytest.raises(CapabilityNotSupported, match="keys"):
            await A2MSessionStore(a2m).get("s")
