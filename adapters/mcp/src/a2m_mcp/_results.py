"""The MCP tools' structured results and the helpers that build them: each tool answers
with readable text for the model and a typed object for programs."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from a2m import A2MError, Record
from a2m.adapter_support import continued

from ._graph import (
    Entity,
    ObservationAdded,
    Relation,
)

# --- structured results -------------------------------------------------------------


class Memory(BaseModel):
    """One stored memory as a tool returns it."""

    id: str
    content: str
    key: str | None = None
    tier: str | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: str
    score: float | None = None


class RememberOut(BaseModel):
    id: str
    key: str


class RecallOut(BaseModel):
    memories: list[Memory]


class TimelineOut(BaseModel):
    memories: list[Memory]
    next_cursor: str | None = None


class FetchOut(BaseModel):
    memory: Memory | None


class ForgetOut(BaseModel):
    forgotten: int
    confirmed: bool
    candidates: list[Memory] = Field(default_factory=list)


class ObservationOut(BaseModel):
    id: str
    weight: float
    duplicate: bool


class EntitiesOut(BaseModel):
    entities: list[Entity]


class RelationsOut(BaseModel):
    relations: list[Relation]


class ObservationsOut(BaseModel):
    results: list[ObservationAdded]


class GraphOut(BaseModel):
    entities: list[Entity]
    relations: list[Relation]


class DeletedOut(BaseModel):
    success: bool
    message: str


class ObservationInput(BaseModel):
    entityName: str = Field(description="The name of the entity to add the observations to")
    contents: list[str] = Field(description="An array of observation contents to add")


class ObservationDeletion(BaseModel):
    entityName: str = Field(description="The name of the entity containing the observations")
    observations: list[str] = Field(description="An array of observations to delete")


def memory_of(record: Record) -> Memory:
    metadata = dict(record.metadata or {})
    tags = metadata.get("tags")
    return Memory(
        id=record.id,
        content=record.content,
        key=record.key,
        tier=record.tier,
        tags=[str(t) for t in tags] if isinstance(tags, list) else [],
        metadata=metadata,
        created_at=record.created_at.isoformat(),
        score=record.score,
    )


def memory_lines(memories: Sequence[Memory], empty: str) -> str:
    if not memories:
        return empty
    lines = []
    for number, m in enumerate(memories, 1):
        details = [f"id={m.id}"]
        if m.key:
            details.append(f"key={m.key}")
        if m.tier:
            details.append(f"tier={m.tier}")
        if m.tags:
            details.append("tags=" + ",".join(m.tags))
        if m.score is not None:
            details.append(f"score={m.score:.3f}")
        details.append(m.created_at)
        lines.append(continued(f"{number}. {m.content}", "   ") + f"\n   ({'; '.join(details)})")
    return "\n".join(lines)


def tool_result(text: str, structured: BaseModel) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=structured.model_dump(mode="json"),
    )


def json_text(value: Any) -> str:
    # The upstream knowledge-graph server's text: JSON.stringify(value, null, 2).
    return json.dumps(value, indent=2, ensure_ascii=False)


def tool_error(error: A2MError) -> ToolError:
    return ToolError(f"the memory store refused the call: {error}")


def content_hash(text: str) -> str:
    normalised = " ".join(text.split()).casefold()
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()
