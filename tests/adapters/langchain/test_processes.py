"""A conversation kept by A2MMemory outlives the process: two processes, one after the
other, each run one turn of a classic ConversationChain against the same server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from a2m import A2MClient
from a2m_testing.servers import Servers

SCRIPT = Path(__file__).with_name("chain_process.py")


def _turn(url: str, mode: str, question: str, answer: str) -> dict[str, object]:
    env = {**os.environ, "LANGCHAIN_TRACING_V2": "false", "LANGSMITH_TRACING": "false"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), url, mode, question, answer],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_conversation_survives_the_process(servers: Servers, mode: str) -> None:
    url = servers.http_url()
    first = _turn(url, mode, "My name is Ada and I live in Lyon.", "Nice to meet you, Ada.")
    assert first["answer"] == "Nice to meet you, Ada."
    (opening,) = first["seen"]  # type: ignore[misc]
    assert opening.count("My name is Ada") == 1  # the question itself, no history yet
    second = _turn(url, mode, "Where do I live?", "In Lyon.")
    assert second["answer"] == "In Lyon."
    (prompt,) = second["seen"]  # type: ignore[misc]
    assert "Human: My name is Ada and I live in Lyon.\nAI: Nice to meet you, Ada." in prompt
    assert prompt.rstrip().endswith("Human: Where do I live?\nAI:")
    with A2MClient(url) as client:
        records = client.timeline(where={"session": "conversation-1"}).records
    assert [r.role for r in records] == ["user", "assistant", "user", "assistant"]
