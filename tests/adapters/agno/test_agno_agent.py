"""Real Agno agents and teams, driven by a stateless fake model, keeping their memories in
A2M over HTTP: memories written on a run reach a fresh process's context, agentic memory
and teams work, the async agent runs on the async client, nothing leaves loopback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from agno.agent import Agent
from agno.team import Team
from agno_fake_model import FakeModel, seen_memories

from a2m import A2MClient, AsyncA2MClient
from a2m.adapter import A2MAdapter
from a2m_agno import A2MDb, AsyncA2MDb
from a2m_testing.network import guarded_environment, loopback_only, refused_in

HERE = Path(__file__).parent


def test_a_run_stores_a_memory_a_fresh_process_sees(
    client: A2MClient, a2m_http_url: str, tmp_path: Path
) -> None:
    with loopback_only() as refused:
        writer = Agent(model=FakeModel(), db=A2MDb(client), update_memory_on_run=True)
        writer.run("remember: Ada's favourite language is Rust #languages", user_id="ada")
    assert refused == []

    stored = A2MDb(client).get_user_memories(user_id="ada")
    assert [(m.memory, m.topics, m.user_id) for m in stored] == [
        ("Ada's favourite language is Rust", ["languages"], "ada")
    ]
    # Every framework can read it: it is an A2M entry with Agno's provenance.
    entry = A2MAdapter(client, "other").read(stored[0].memory_id or "", namespace="agno")
    assert entry is not None
    assert entry.value == "Ada's favourite language is Rust"
    assert entry.meta.source_framework == "agno"

    env = guarded_environment(tmp_path / "guard")
    env["PYTHONPATH"] = f"{HERE}:{env['PYTHONPATH']}"
    done = subprocess.run(
        [sys.executable, str(HERE / "agno_second_agent.py"), a2m_http_url, "ada"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["seen"] == ["Ada's favourite language is Rust"]
    assert answer["reply"] == "seen: Ada's favourite language is Rust"
    assert refused_in(tmp_path / "guard") == []


def test_memories_of_another_user_stay_out_of_the_context(client: A2MClient) -> None:
    writer = Agent(model=FakeModel(), db=A2MDb(client), update_memory_on_run=True)
    writer.run("remember: Bob is allergic to nuts", user_id="bob")
    reader = Agent(model=FakeModel(), db=A2MDb(client), add_memories_to_context=True)
    run = reader.run("hello", user_id="ada")
    assert seen_memories(run.messages or []) == []


def test_agentic_memory_writes_through_the_tool(client: A2MClient) -> None:
    db = A2MDb(client)
    agent = Agent(
        model=FakeModel(), db=db, enable_agentic_memory=True, add_memories_to_context=True
    )
    first = agent.run("remember: Ada lives in Lisbon", user_id="ada")
    calls = [m.tool_calls for m in first.messages or [] if m.tool_calls]
    assert calls
    assert calls[0][0]["function"]["name"] == "update_user_memory"
    assert [m.memory for m in A2MDb(client).get_user_memories(user_id="ada")] == [
        "Ada lives in Lisbon"
    ]
    second = agent.run("where do I live?", user_id="ada")
    assert seen_memories(second.messages or []) == ["Ada lives in Lisbon"]


def test_team_members_sharing_one_db_see_each_others_memories(client: A2MClient) -> None:
    db = A2MDb(client)
    scribe = Agent(id="scribe", name="scribe", model=FakeModel(), db=db, update_memory_on_run=True)
    reader = Agent(
        id="reader", name="reader", model=FakeModel(), db=db, add_memories_to_context=True
    )
    team = Team(
        id="crew",
        members=[scribe, reader],
        model=FakeModel(),
        db=db,
        update_memory_on_run=True,
        add_memories_to_context=True,
    )
    team.run("remember: releases go out on Fridays #process", user_id="ada")
    scribe.run("remember: Ada reviews every release", user_id="ada")

    run = reader.run("what do you know?", user_id="ada")
    assert seen_memories(run.messages or []) == [
        "releases go out on Fridays",
        "Ada reviews every release",
    ]
    run = team.run("what do you know?", user_id="ada")
    assert seen_memories(run.messages or []) == [
        "releases go out on Fridays",
        "Ada reviews every release",
    ]
    rows = {m.memory: (m.team_id, m.agent_id) for m in db.get_user_memories(user_id="ada")}
    assert rows == {
        "releases go out on Fridays": ("crew", None),
        "Ada reviews every release": (None, "scribe"),
    }


@pytest.mark.anyio
async def test_the_async_agent_runs_on_the_async_client(
    async_client: AsyncA2MClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def blocking(*args: object, **kwargs: object) -> None:
        raise AssertionError("a blocking HTTP call was made on the event loop")

    # Only the async client may talk to the server: a sync request fails the test.
    monkeypatch.setattr(httpx.Client, "send", blocking)
    with loopback_only() as refused:
        writer = Agent(model=FakeModel(), db=AsyncA2MDb(async_client), update_memory_on_run=True)
        await writer.arun("remember: Ada drinks green tea", user_id="ada")
        reader = Agent(model=FakeModel(), db=AsyncA2MDb(async_client), add_memories_to_context=True)
        run = await reader.arun("what do I drink?", user_id="ada")
    assert seen_memories(run.messages or []) == ["Ada drinks green tea"]
    assert [m.memory for m in await AsyncA2MDb(async_client).get_user_memories()] == [
        "Ada drinks green tea"
    ]
    assert refused == []
