"""The bodies of the MCP tools over one :class:`~a2m.AsyncA2MClient`, and their
configuration; :mod:`a2m_mcp._server` registers them with the MCP SDK."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult

from a2m import A2MError, AsyncA2MClient
from a2m.adapter_support import (
    Caller,
    ServerLayout,
    best_per_key,
    drive_async,
    transferred_lines,
    transferred_observations,
)
from a2m.errors import ScopeDenied

from ._graph import (
    KnowledgeGraph,
    durable_tier,
)
from ._results import (
    FetchOut,
    ForgetOut,
    ObservationOut,
    RecallOut,
    RememberOut,
    TimelineOut,
    content_hash,
    memory_lines,
    memory_of,
    tool_error,
    tool_result,
)

SOURCE_FRAMEWORK = "mcp"
MAX_LIMIT = 100
"""The most records one ``recall`` or ``timeline`` tool call returns."""
TAG_OVERFETCH = 10
MAX_CANDIDATES = 1000
"""A ``recall`` filtered by tags ranks up to 10 times ``limit`` (at most 1000) candidates."""
_SEGMENT = re.compile(r"^[a-z0-9_-]+(/[a-z0-9_-]+)*$")


@dataclass(frozen=True)
class MemoryConfig:
    """Who writes through this server, and where.

    ``namespace`` scopes every write and delete (keys under ``<namespace>/``);
    ``graph_prefix`` is where the knowledge graph lives (default ``<namespace>/graph``),
    shared by every server given the same one. ``agent``, ``org`` and ``project`` are the
    tenant an observation belongs to and the provenance of every record; ``session`` the
    conversation records belong to."""

    namespace: str = "mcp"
    agent: str | None = None
    org: str | None = None
    project: str | None = None
    session: str | None = None
    graph_prefix: str | None = None
    local: bool = False
    """Whether the store is reached over a local transport (the embedded one): only then
    may ``agent`` name the observations' owner; over a network the token's principal is."""

    def __post_init__(self) -> None:
        if not _SEGMENT.match(self.namespace):
            raise ValueError(
                f"namespace must be lowercase [a-z0-9_-] segments joined by '/', "
                f"not {self.namespace!r}"
            )

    @property
    def graph(self) -> str:
        return (self.graph_prefix or f"{self.namespace}/graph").rstrip("/")

    def provenance(self) -> dict[str, Any]:
        stated: dict[str, Any] = {"source_framework": SOURCE_FRAMEWORK}
        if self.agent is not None:
            stated["source_agent"] = self.agent
        return stated


class A2MTools:
    """The tool bodies, over one client and one configuration (exposed for tests and
    for embedding the tools in another MCP server)."""

    def __init__(self, client: AsyncA2MClient, config: MemoryConfig | None = None) -> None:
        self.client = client
        self.config = config or MemoryConfig()
        self._caller = Caller()  # whose record a key several principals hold reads as
        self.graph = KnowledgeGraph(
            client,
            self.config.graph,
            namespace=self.config.namespace,
            provenance=self.config.provenance(),
            session=self.config.session,
        )

    # --- helpers ---------------------------------------------------------------------

    async def _capped(self, wanted: int) -> int:
        """``wanted`` records, or the server's ``max_recall_limit`` where that is fewer: a
        limit is an upper bound, and asking past the server's is refused outright."""
        description = self.client.description or await self.client.describe()
        self._caller.described(description)
        return min(wanted, ServerLayout.of(description).max_recall_limit)

    def _key(self, key: str) -> str:
        key = key.strip()
        if not key or key.startswith("/") or "//" in key:
            raise ToolError(f"key must be a non-empty path like 'user/city', not {key!r}")
        return f"{self.config.namespace}/{key}"

    def _record(
        self, content: str, key: str, metadata: Mapping[str, Any], tier: str | None
    ) -> dict[str, Any]:
        record: dict[str, Any] = {"content": content, "key": key, "metadata": dict(metadata)}
        if tier is not None:
            record["tier"] = tier
        if self.config.session is not None:
            record["session"] = self.config.session
        return record

    def _stamped(
        self, metadata: Mapping[str, Any] | None, tags: Sequence[str] | None
    ) -> dict[str, Any]:
        # Provenance is the server's to state: a model cannot overwrite it.
        stamped = dict(metadata or {})
        stamped.update(self.config.provenance())
        stamped["namespace"] = self.config.namespace
        if tags:
            stamped["tags"] = list(dict.fromkeys(tags))
        return stamped

    # --- A2M tools -------------------------------------------------------------------

    async def remember(
        self,
        content: str,
        key: str | None = None,
        tags: list[str] | None = None,
        tier: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> CallToolResult:
        if not content.strip():
            raise ToolError("content must not be empty")
        full_key = self._key(key) if key is not None else self._key(f"memories/{uuid.uuid4().hex}")
        if self._in_graph(full_key):
            raise ToolError(
                f"keys under {self.config.graph!r} hold the knowledge graph, which changes "
                "only through its own tools (create_entities, add_observations…)"
            )
        record = self._record(content, full_key, self._stamped(metadata, tags), tier)
        try:
            result = await self.client.remember([record])
        except A2MError as error:
            raise tool_error(error) from None
        out = RememberOut(id=result.ids[0], key=full_key)
        return tool_result(f"Remembered memory {out.id} at key {full_key}.", out)

    async def recall(
        self, query: str, limit: int = 10, filters: dict[str, Any] | None = None
    ) -> CallToolResult:
        if not query.strip():
            raise ToolError("query must not be empty")
        where = dict(filters or {})
        wanted = where.pop("tags", None)
        if wanted is not None and not isinstance(wanted, (str, list)):
            raise ToolError("filters.tags must be a tag or a list of tags")
        tags = [wanted] if isinstance(wanted, str) else list(wanted or [])
        if not all(isinstance(tag, str) for tag in tags):
            raise ToolError("filters.tags must be a tag or a list of tags")
        # A store matches metadata by equality; tags (a list) are matched here, among
        # more candidates than asked for.
        fetch = min(max(limit * TAG_OVERFETCH, limit), MAX_CANDIDATES) if tags else limit
        try:
            fetch = await self._capped(fetch)
            result = await self.client.recall(query, limit=fetch, where=where or None)
            # A key several principals hold is one memory: the caller's own record of it.
            records = await drive_async(best_per_key(self._caller, result.records, {}), self.client)
        except A2MError as error:
            raise tool_error(error) from None
        memories = [memory_of(r) for r in records]
        if tags:
            memories = [m for m in memories if set(tags) <= set(m.tags)][:limit]
        return tool_result(
            memory_lines(memories, "No matching memories."), RecallOut(memories=memories)
        )

    async def fetch(self, key: str) -> CallToolResult:
        full_key = self._key(key)
        try:
            found = (await self.client.fetch(full_key)).record
            if found is None:
                # Reads are not fenced in: a key of another namespace is read as given.
                found = (await self.client.fetch(key.strip())).record
        except A2MError as error:
            raise tool_error(error) from None
        memory = memory_of(found) if found is not None else None
        text = (
            memory_lines([memory], "") if memory is not None else f"Nothing is stored at key {key}."
        )
        return tool_result(text, FetchOut(memory=memory))

    async def timeline(self, limit: int = 20, cursor: str | None = None) -> CallToolResult:
        try:
            limit = await self._capped(limit)
            if cursor is None:
                page = await self.client.timeline(limit=limit)
            else:
                page = await self.client.timeline(limit=limit, cursor=cursor)
        except A2MError as error:
            raise tool_error(error) from None
        memories = [memory_of(r) for r in page.records]
        next_cursor = getattr(page, "next_cursor", None)
        text = memory_lines(memories, "No memories yet.")
        if next_cursor:
            text += f"\n(more: call timeline with cursor={next_cursor!r})"
        return tool_result(text, TimelineOut(memories=memories, next_cursor=next_cursor))

    async def forget(
        self,
        ids: list[str] | None = None,
        key: str | None = None,
        query: str | None = None,
        confirm: bool = False,
        limit: int = 10,
    ) -> CallToolResult:
        if not ids and key is None and not (query and query.strip()):
            raise ToolError("say what to forget: ids, a key, or a query")
        scope = self.config.namespace
        try:
            if query and query.strip():
                found = await self.client.recall(
                    query, limit=await self._capped(limit), key_prefix=scope
                )
                candidates = [memory_of(r) for r in found.records if not self._in_graph(r.key)]
                if not confirm:
                    text = (
                        memory_lines(candidates, "No memory matches; nothing would be forgotten.")
                        + "\nNothing was forgotten yet: call forget again with the same query "
                        "and confirm=true to delete these, or pass their ids."
                    )
                    return tool_result(
                        text, ForgetOut(forgotten=0, confirmed=False, candidates=candidates)
                    )
                ids = [*(ids or []), *(m.id for m in candidates)]
            selected = list(ids or [])
            if key is not None:
                record = (await self.client.fetch(self._key(key))).record
                if record is not None and not self._in_graph(record.key):
                    selected.append(record.id)
            if ids:
                # The knowledge graph changes only through its own tools, which keep an
                # entity, its observations and its relations together: which of the ids
                # are its records, one timeline per max_recall_limit ids (a timeline
                # returns no more than that).
                wanted = list(dict.fromkeys(ids))
                step = await self._capped(len(wanted))
                held: set[str] = set()
                for start in range(0, len(wanted), step):
                    graph = await self.client.timeline(
                        where={"id": wanted[start : start + step]},
                        key_prefix=self.config.graph,
                        limit=step,
                    )
                    held.update(r.id for r in graph.records if self._in_graph(r.key))
                selected = [i for i in selected if i not in held]
            forgotten = 0
            if selected:
                # key_prefix keeps deletes inside this server's namespace.
                done = await self.client.forget(ids=list(dict.fromkeys(selected)), key_prefix=scope)
                forgotten = done.forgotten
        except A2MError as error:
            raise tool_error(error) from None
        text = f"Forgot {forgotten} memor{'y' if forgotten == 1 else 'ies'}."
        return tool_result(text, ForgetOut(forgotten=forgotten, confirmed=True))

    def _in_graph(self, key: str | None) -> bool:
        """Whether a record at ``key`` is part of the knowledge graph."""
        return key is not None and key.startswith(self.config.graph + "/")

    async def remember_observation(
        self,
        content: str,
        classification: str = "note",
        filePath: str | None = None,
        tags: list[str] | None = None,
        weight: float = 1.0,
    ) -> CallToolResult:
        if not content.strip():
            raise ToolError("content must not be empty")
        classification = (classification or "note").strip() or "note"
        try:
            if await self._observations_offered():
                done = await self.client.remember_observation(
                    content,
                    classification=classification,
                    file_path=filePath,
                    tags=tags,
                    weight=weight,
                    owner=self._local_owner(),
                    metadata={**self.config.provenance(), "namespace": self.config.namespace},
                )
                out = ObservationOut(id=done.id, weight=done.weight, duplicate=done.deduplicated)
            else:
                out = await self._observation_record(
                    content, classification, filePath, tags, weight
                )
        except A2MError as error:
            raise tool_error(error) from None
        verb = (
            "Raised the weight of the identical observation"
            if out.duplicate
            else "Stored observation"
        )
        return tool_result(f"{verb} {out.id} (weight {out.weight:g}).", out)

    def _local_owner(self) -> str | None:
        """The owner a call names: this server's agent over a local transport; nobody over
        a network, where the connection's principal is the owner."""
        return self.config.agent if self.config.local else None

    async def _observations_offered(self) -> bool:
        """Whether the server keeps observations itself (describe's ``observations``
        extension): then it deduplicates, weighs and audits them, and this server only
        passes them on."""
        if not self._negotiated():
            await self.client.describe()
        description = self.client.description
        return description is not None and description.observations is not None

    def _negotiated(self) -> bool:
        try:
            _ = self.client.capabilities
        except RuntimeError:
            return False
        return True

    def _tenant(self) -> list[str]:
        c = self.config
        return [c.org or "_", c.project or "_", c.agent or "_"]

    async def _observation_record(
        self,
        content: str,
        classification: str,
        file_path: str | None,
        tags: list[str] | None,
        weight: float,
    ) -> ObservationOut:
        """An ordinary record holding the observation's fields in ``metadata``, at a key
        derived from the tenant and the content hash, so writing the same fact again
        raises the stored weight instead of adding a duplicate."""
        digest = content_hash(content)
        key = f"{self.config.namespace}/observations/{'/'.join(self._tenant())}/{digest[:32]}"
        key = "/".join(_safe(part) for part in key.split("/"))
        existing = (await self.client.fetch(key)).record
        stored = dict((existing.metadata or {}).get("observation") or {}) if existing else {}
        total = float(stored.get("weight", 0.0)) + weight
        merged_tags = list(dict.fromkeys([*(stored.get("tags") or []), *(tags or [])]))
        observation = {
            # A duplicate keeps what it was first classified as; only its weight grows.
            "classification": stored.get("classification", classification.split(".")[0]),
            "kind": stored.get("kind", classification),
            "filePath": file_path if file_path is not None else stored.get("filePath"),
            "tags": merged_tags,
            "weight": total,
            "source": "explicit",
            "org": self.config.org,
            "project": self.config.project,
            "agent": self.config.agent,
            "content_hash": digest,
        }
        metadata = self._stamped({"observation": observation, "kind": "observation"}, merged_tags)
        tier = await durable_tier(self.client)
        result = await self.client.remember([self._record(content, key, metadata, tier)])
        return ObservationOut(id=result.ids[0], weight=total, duplicate=existing is not None)

    # --- resources and prompt --------------------------------------------------------

    async def recent_text(self, limit: int = 20) -> str:
        page = await self.client.timeline(limit=await self._capped(limit))
        memories = [memory_of(r) for r in reversed(page.records)]
        return memory_lines(memories, "No memories yet.")

    async def observations_text(self, agent: str, limit: int = 100) -> str:
        limit = await self._capped(limit)
        if await self._observations_offered():
            mine = self.config.agent is None or agent == self.config.agent
            try:
                listed = await self.client.list_observations(
                    limit=limit, agent=None if mine else agent, owner=self._local_owner()
                )
            except ScopeDenied:
                return f"Only an operator of the project may read agent {agent}'s observations."
            lines = [
                f"- [{o.classification}, weight {o.effective_weight:g}"
                + (f", transferred from {o.source_project}" if o.transferred else "")
                + f"] {o.content}"
                for o in listed.observations
            ]
            return "\n".join(lines) or f"No observations from agent {agent}."
        prefix = f"{self.config.namespace}/observations"
        page = await self.client.timeline(
            limit=limit, key_prefix=prefix, where={"source_agent": agent}
        )
        memories = [memory_of(r) for r in reversed(page.records)]
        return memory_lines(memories, f"No observations from agent {agent}.")

    async def prompt_text(self, topic: str, limit: int = 8) -> str:
        limit = await self._capped(limit)
        found = await self.client.recall(topic, limit=limit)
        granted = await drive_async(
            transferred_observations(self.client.description, topic, k=limit), self.client
        )
        if not found.records and not granted:
            return f"No stored memory relates to: {topic}"
        blocks = []
        if found.records:
            facts = "\n".join(f"- {r.content}" for r in found.records)
            blocks.append(f"Relevant memories about {topic!r}, most relevant first:\n{facts}")
        if granted:
            blocks.append(transferred_lines(granted))
        return "\n\n".join(blocks)


def _safe(part: str) -> str:
    cleaned = re.sub(r"[^a-z0-9_-]", "-", part.lower())
    return cleaned or "_"
