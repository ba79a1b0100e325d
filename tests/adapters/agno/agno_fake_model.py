"""A stateless Agno model for tests: it decides every reply from the messages it is given,
so Agno's deep copies (the memory manager copies its model) behave exactly like the
original, and no API key or service is involved.

What it does:
- Offered ``add_memory`` (Agno's memory manager): for each user line ``remember: <fact>``
  (topics after ``#``) not yet in the system prompt, it calls ``add_memory``; after the
  tool results it answers ``"memories saved"``.
- Offered ``update_user_memory`` (agentic memory) and told ``remember: …``: it calls the
  tool with the task, then answers.
- Offered ``search_knowledge_base`` and told ``look up: <query>``: it searches, then
  answers ``"found: <the tool's result>"``.
- Otherwise it answers ``seen: <memories>``, the memories the system prompt carried, so a
  test can read back what reached the model's context."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any
from uuid import uuid4

from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse

_MEMORIES = re.compile(
    r"<memories_from_previous_interactions>(.*?)</memories_from_previous_interactions>", re.S
)
_LOOKUP = re.compile(r"look up:\s*(.+)$", re.I | re.M)
_REMEMBER = re.compile(r"remember:\s*([^#\n]+?)\s*(?:#\s*([\w ,-]+))?\s*$", re.I | re.M)


def _tool_names(tools: list[dict[str, Any]] | None) -> set[str]:
    names = set()
    for tool in tools or []:
        function = tool.get("function", tool)
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.add(function["name"])
    return names


def _text(message: Message) -> str:
    return message.get_content_string() if message.content is not None else ""


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"call_{uuid4().hex[:12]}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def seen_memories(messages: list[Message]) -> list[str]:
    """The memories a system message put in front of the model, in order."""
    for message in messages:
        if message.role == "system":
            found = _MEMORIES.search(_text(message))
            if found:
                return [
                    line[2:].strip()
                    for line in found.group(1).splitlines()
                    if line.startswith("- ")
                ]
    return []


def decide(messages: list[Message], tools: list[dict[str, Any]] | None) -> ModelResponse:
    """The reply to ``messages`` given ``tools``: a pure function of its arguments."""
    names = _tool_names(tools)
    last = messages[-1] if messages else None
    if last is not None and last.role == "tool":
        if "add_memory" in names:
            return ModelResponse(role="assistant", content="memories saved")
        if "search_knowledge_base" in names:
            return ModelResponse(role="assistant", content="found: " + _text(last))
        return ModelResponse(role="assistant", content="noted")
    users = [_text(m) for m in messages if m.role == "user"]
    wanted = [
        (fact.strip(), [t.strip() for t in (tags or "").split(",") if t.strip()])
        for text in users[-1:]
        for fact, tags in _REMEMBER.findall(text)
    ]
    if "add_memory" in names:
        system = "\n".join(_text(m) for m in messages if m.role == "system")
        calls = [
            _call("add_memory", {"memory": fact, "topics": topics or None})
            for fact, topics in wanted
            if fact not in system
        ]
        if calls:
            return ModelResponse(role="assistant", tool_calls=calls)
        return ModelResponse(role="assistant", content="nothing to save")
    lookup = _LOOKUP.search(users[-1]) if users else None
    if "search_knowledge_base" in names and lookup:
        query = lookup.group(1).strip()
        return ModelResponse(
            role="assistant", tool_calls=[_call("search_knowledge_base", {"query": query})]
        )
    if "update_user_memory" in names and wanted:
        task = "; ".join(f"remember: {fact}" for fact, _ in wanted)
        return ModelResponse(
            role="assistant", tool_calls=[_call("update_user_memory", {"task": task})]
        )
    return ModelResponse(role="assistant", content="seen: " + " | ".join(seen_memories(messages)))


class FakeModel(Model):
    """An offline Agno model that answers with :func:`decide`."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("id", "fake")
        kwargs.setdefault("name", "FakeModel")
        kwargs.setdefault("provider", "fake")
        super().__init__(**kwargs)

    def invoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return decide(kwargs["messages"], kwargs.get("tools"))

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return decide(kwargs["messages"], kwargs.get("tools"))

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
        yield decide(kwargs["messages"], kwargs.get("tools"))

    async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:  # type: ignore[override]
        yield decide(kwargs["messages"], kwargs.get("tools"))

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]
