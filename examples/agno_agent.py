"""Agno agents keeping their user memories and knowledge in A2M, offline.

    uv run python examples/agno_agent.py

An A2M server runs over HTTP on a loopback port. One Agno agent learns a fact about the
user (its memory manager writes it into A2M through ``A2MDb``); a second agent, with a
database object of its own, finds the fact in its prompt; a ``Knowledge`` base ingests a
note through ``A2MVectorDb`` and a plain A2M client recalls it. The model is a tiny
stand-in that decides from the messages it receives, so no API key is needed."""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

os.environ["AGNO_TELEMETRY"] = "false"

from agno.agent import Agent
from agno.knowledge.knowledge import Knowledge
from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse

from a2m import A2MClient
from a2m_agno import A2MDb, A2MVectorDb
from a2m_testing.servers import Servers


def reply(messages: list[Message], tools: list[dict[str, Any]] | None) -> ModelResponse:
    """Save ``remember: …`` through the memory tool; otherwise say which memories the
    system prompt carried."""
    offered = {t.get("function", {}).get("name") for t in tools or []}
    if messages[-1].role == "tool":
        return ModelResponse(role="assistant", content="saved")
    said = messages[-1].get_content_string()
    fact = re.search(r"remember: (.+)", said)
    if "add_memory" in offered and fact:
        call = {"name": "add_memory", "arguments": json.dumps({"memory": fact.group(1)})}
        return ModelResponse(role="assistant", tool_calls=[{"type": "function", "function": call}])
    system = next((m.get_content_string() for m in messages if m.role == "system"), "")
    known = re.findall(r"^- (.+)$", system, re.M)
    return ModelResponse(role="assistant", content=f"I remember: {'; '.join(known) or 'nothing'}")


class OfflineModel(Model):
    """A model that answers with :func:`reply` and calls nothing."""

    def invoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return reply(kwargs["messages"], kwargs.get("tools"))

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return reply(kwargs["messages"], kwargs.get("tools"))

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
        yield reply(kwargs["messages"], kwargs.get("tools"))

    async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:  # type: ignore[override]
        yield reply(kwargs["messages"], kwargs.get("tools"))

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]


def main() -> None:
    with Servers() as servers, A2MClient(servers.http_url(servers.server())) as client:
        model = OfflineModel(id="offline")
        learner = Agent(model=model, db=A2MDb(client), update_memory_on_run=True)
        learner.run("remember: Ada takes her coffee black", user_id="ada")
        print("stored:", [m.memory for m in A2MDb(client).get_user_memories(user_id="ada")])

        recaller = Agent(model=model, db=A2MDb(client), add_memories_to_context=True)
        print("second agent:", recaller.run("what do you know?", user_id="ada").content)

        knowledge = Knowledge(vector_db=A2MVectorDb(client))
        knowledge.insert(name="office", text_content="The office coffee machine is on floor 3.")
        found = client.recall("coffee machine", key_prefix="agno/knowledge/").records
        print(
            "any A2M client recalls:",
            found[0].content,
            "from",
            found[0].metadata["source_framework"],
        )


if __name__ == "__main__":
    main()
