"""A CrewAI crew whose memory is an A2M store: a first crew learns a fact during its
kickoff, a second crew (a new memory object, as another process would build) finds it in
its agent's prompt.

Talks to the server at ``A2M_URL`` when set; otherwise starts the bundled server over
HTTP on a loopback port. The model is a scripted ``BaseLLM`` and the embedder a local
hash, so it runs offline as it is:

    uv run python examples/crewai_crew.py
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import zlib
from collections.abc import Sequence
from typing import Any

# Telemetry off and CrewAI's files in a temporary folder, before CrewAI is imported.
os.environ.update(
    {
        "CREWAI_DISABLE_TELEMETRY": "true",
        "CREWAI_DISABLE_TRACKING": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "OTEL_SDK_DISABLED": "true",
        "HOME": tempfile.mkdtemp(prefix="a2m-crewai-home-"),
    }
)

from crewai import Agent, BaseLLM, Crew, Task
from pydantic import Field

from a2m_crewai import a2m_memory
from a2m_testing.servers import Servers

FACT = "The deploy key rotates every 90 days."


def embed(texts: Sequence[str]) -> list[list[float]]:
    """A local bag-of-words embedder: texts that share words are close."""
    vectors = []
    for text in texts:
        vector = [0.0] * 64
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            vector[zlib.crc32(word.encode()) % 64] += 1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        vectors.append([x / norm for x in vector])
    return vectors


class ScriptedLLM(BaseLLM):
    """Answers CrewAI's memory prompts with fixed JSON, every agent turn with ``answer``."""

    answer: str
    prompts: list[str] = Field(default_factory=list)

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        text = messages if isinstance(messages, str) else "\n".join(m["content"] for m in messages)
        self.prompts.append(text)
        if text.startswith("You extract discrete"):
            return json.dumps({"memories": [FACT]})
        if text.startswith("You analyze content to be stored"):
            return json.dumps({"suggested_scope": "/ops", "categories": ["ops"], "importance": 0.8})
        if text.startswith("You analyze a query"):
            return json.dumps({"recall_queries": ["deploy key"], "complexity": "simple"})
        if text.startswith("You are comparing new content"):
            return json.dumps({"actions": [], "insert_new": True})
        return "Thought: I now know the final answer\nFinal Answer: " + self.answer

    def supports_function_calling(self) -> bool:
        return False


def kickoff(url: str, question: str, answer: str) -> ScriptedLLM:
    llm = ScriptedLLM(model="scripted", answer=answer)
    memory = a2m_memory(url, llm=llm, embedder=embed, agent="ops-researcher")
    agent = Agent(role="Researcher", goal="Find facts", backstory="Reads runbooks.", llm=llm)
    task = Task(description=question, expected_output="One sentence.", agent=agent)
    print(f"{question} -> {Crew(agents=[agent], tasks=[task], memory=memory).kickoff().raw}")
    memory.close()  # waits for the background save, closes the clients it made
    return llm


def main() -> None:
    with Servers() as servers:
        url = os.environ.get("A2M_URL") or servers.http_url(servers.server())
        kickoff(url, "How often does the deploy key rotate?", FACT)
        second = kickoff(url, "When is the next deploy key rotation due?", "In 90 days.")
        remembered = any(FACT in p and "Memories from past" in p for p in second.prompts)
        print("the second crew's prompt held the first crew's memory:", remembered)


if __name__ == "__main__":
    main()
