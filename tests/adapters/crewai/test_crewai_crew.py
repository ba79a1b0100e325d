"""Real crews, driven by a scripted model, on A2M: a kickoff writes memories, a crew in
another process recalls them into its agent's prompt, a crew finds what other frameworks
wrote without vectors, and ``Crew(memory=True)`` lands in A2M. Nothing leaves loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from crew_support import HashEmbedding, ScriptedLLM, embed
from crewai import Agent, Crew, Task
from crewai.memory.unified_memory import Memory

from a2m import A2MClient
from a2m.adapter import A2MAdapter
from a2m_crewai import A2MStorage, a2m_memory, use_a2m_storage
from a2m_testing.network import guarded_environment, loopback_only, refused_in

# CrewAI's own deprecations, raised inside its Agent and Crew validators.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:crewai")

FACT = "The deploy key rotates every 90 days."
HERE = Path(__file__).parent
MEMORY_PROMPTS = (
    "You extract discrete",
    "You analyze content to be stored",
    "You analyze a query",
    "You are comparing new content",
)


def _crew(memory: object, llm: ScriptedLLM, question: str, **options: object) -> Crew:
    agent = Agent(role="Researcher", goal="Find facts", backstory="Reads runbooks.", llm=llm)
    task = Task(description=question, expected_output="One sentence.", agent=agent)
    return Crew(agents=[agent], tasks=[task], memory=memory, **options)  # type: ignore[arg-type]


def _agent_prompts(prompts: list[str]) -> list[str]:
    """The prompts of agent turns, not of CrewAI's memory analysis."""
    return [p for p in prompts if not p.startswith(MEMORY_PROMPTS)]


def _learn(url: str) -> list[str]:
    """Kick off a crew that learns FACT; returns what the loopback guard refused."""
    llm = ScriptedLLM(answer=FACT, facts=[FACT])
    memory = a2m_memory(url, llm=llm, embedder=embed)
    with loopback_only() as refused:
        _crew(memory, llm, "Find out how often the deploy key rotates.").kickoff()
        memory.close()
    return refused


def test_a_kickoff_writes_memories_through_a2m(a2m_http_url: str) -> None:
    assert _learn(a2m_http_url) == []
    with A2MClient(a2m_http_url) as client:
        written = client.timeline(embeddings=True).records
    assert [r.content for r in written] == [FACT]
    metadata = written[0].metadata or {}
    assert metadata["source_framework"] == "crewai"
    assert metadata["tags"] == ["ops"]
    assert written[0].embedding == embed([FACT])[0]
    assert written[0].role == "memory"


def test_a_crew_in_another_process_recalls_what_the_first_learned(
    a2m_http_url: str, tmp_path: Path
) -> None:
    assert _learn(a2m_http_url) == []
    env = guarded_environment(tmp_path / "net")
    done = subprocess.run(
        [
            sys.executable,
            str(HERE / "second_crew.py"),
            a2m_http_url,
            "When does the deploy key rotate?",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    prompts = json.loads(done.stdout.strip().splitlines()[-1])
    agent = _agent_prompts(prompts)
    assert any(
        FACT in prompt and "Memories from past conversations" in prompt for prompt in agent
    ), agent
    assert refused_in(tmp_path / "net") == []
    assert os.environ["HOME"] == env["HOME"]


def test_a_crew_recalls_records_written_without_vectors(a2m_http_url: str) -> None:
    theirs = "Deploy keys are rotated quarterly by the platform team."
    with (
        A2MClient(a2m_http_url) as client,
        A2MAdapter(client, "shared/ops", source_framework="langchain") as adapter,
    ):
        adapter.write("deploy/rotation", "semantic", theirs)
        client.remember(
            {"content": "Deploy keys live in the vault under ops/keys.", "role": "user"}
        )
    # A crew's own memory with a vector, so the store compares vectors from here on.
    assert _learn(a2m_http_url) == []
    question = "Who rotates the deploy keys, and where do deploy keys live?"

    llm = ScriptedLLM(answer="ok")
    memory = a2m_memory(a2m_http_url, llm=llm, embedder=embed)
    with loopback_only() as refused:
        _crew(memory, llm, question).kickoff()
    memory.close()
    assert refused == []
    prompt = "\n".join(_agent_prompts(llm.prompts))
    assert theirs in prompt
    assert "source_framework: langchain" in prompt
    assert "Deploy keys live in the vault under ops/keys." in prompt  # no key: scope "/"

    # The same crew on a plain Memory hands the storage only a vector: those records stay unseen.
    plain_llm = ScriptedLLM(answer="ok")
    plain = Memory(storage=A2MStorage(a2m_http_url), llm=plain_llm, embedder=embed)
    _crew(plain, plain_llm, question).kickoff()
    plain.close()
    assert theirs not in "\n".join(_agent_prompts(plain_llm.prompts))


def test_crew_memory_true_lands_in_a2m(a2m_http_url: str) -> None:
    undo = use_a2m_storage(a2m_http_url)
    try:
        llm = ScriptedLLM(answer=FACT, facts=[FACT])
        crew = _crew(
            True,
            llm,
            "Find out how often the deploy key rotates.",
            name="Research Crew",
            embedder={"provider": "custom", "config": {"embedding_callable": HashEmbedding}},
        )
        assert isinstance(crew._memory._storage, A2MStorage)  # type: ignore[union-attr]
        with loopback_only() as refused:
            crew.kickoff()
        assert refused == []
    finally:
        undo()
    crew._memory.close()  # type: ignore[union-attr]
    storage = A2MStorage(a2m_http_url)
    saved = storage.list_records("/crew/research-crew")
    storage.close()
    assert [r.content for r in saved] == [FACT]
    assert saved[0].scope.startswith("/crew/research-crew/agent/researcher")
    assert not isinstance(Memory(llm=llm, embedder=embed)._storage, A2MStorage)  # undone
