"""Bringing an existing ``@modelcontextprotocol/server-memory`` graph across: its JSON-lines
file (one ``{"type": "entity", …}`` or ``{"type": "relation", …}`` per line) read into the
knowledge graph on A2M, so a user who switches keeps what their agents knew."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._graph import Entity, KnowledgeGraph, Relation

__all__ = ["GraphFileError", "Imported", "import_graph_file"]

_BATCH = 200
"""Entities (with their observations) or relations written per call."""


class GraphFileError(ValueError):
    """A line of the graph file that is not an upstream entity or relation."""


@dataclass(frozen=True)
class Imported:
    """What an import added: what was there already is left as it is."""

    entities: int
    observations: int
    relations: int


def _text(line: dict[str, Any], field: str, number: int) -> str:
    value = line.get(field)
    if not isinstance(value, str) or not value:
        raise GraphFileError(f"line {number}: {field!r} must be a non-empty string")
    return value


def read_graph_file(path: Path) -> tuple[list[Entity], list[Relation]]:
    """The entities and relations of an upstream graph file, every line checked before
    anything is written; a line that is neither is a :class:`GraphFileError` naming it."""
    entities: list[Entity] = []
    relations: list[Relation] = []
    with path.open(encoding="utf-8") as lines:
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise GraphFileError(f"line {number}: not JSON ({exc.msg})") from None
            if not isinstance(line, dict):
                raise GraphFileError(f"line {number}: not a JSON object")
            kind = line.get("type")
            if kind == "entity":
                observations = line.get("observations", [])
                if not isinstance(observations, list) or not all(
                    isinstance(o, str) for o in observations
                ):
                    raise GraphFileError(f"line {number}: 'observations' must be strings")
                entities.append(
                    {
                        "name": _text(line, "name", number),
                        "entityType": _text(line, "entityType", number),
                        "observations": observations,
                    }
                )
            elif kind == "relation":
                relations.append(
                    {
                        "from": _text(line, "from", number),
                        "to": _text(line, "to", number),
                        "relationType": _text(line, "relationType", number),
                    }
                )
            else:
                raise GraphFileError(f"line {number}: 'type' must be 'entity' or 'relation'")
    return entities, relations


def _batches(items: list[Any]) -> Iterable[list[Any]]:
    for start in range(0, len(items), _BATCH):
        yield items[start : start + _BATCH]


async def import_graph_file(graph: KnowledgeGraph, path: Path) -> Imported:
    """Add the file's graph to ``graph`` as its own tools would: entities and relations
    already present are left alone, and an entity already present gains only the
    observations it lacks — so importing twice adds nothing."""
    entities, relations = read_graph_file(path)
    added_entities = added_observations = added_relations = 0
    for batch in _batches(entities):
        created = await graph.create_entities(batch)
        added_entities += len(created)
        added_observations += sum(len(set(e["observations"])) for e in created)
        fresh = {e["name"] for e in created}
        first: dict[str, int] = {}
        for place, entity in enumerate(batch):
            first.setdefault(entity["name"], place)
        # an entity already stored, or named again later in the file, gains what it lacks
        known = [
            {"entityName": e["name"], "contents": e["observations"]}
            for place, e in enumerate(batch)
            if e["observations"] and (e["name"] not in fresh or first[e["name"]] != place)
        ]
        if known:
            results = await graph.add_observations(known)
            added_observations += sum(len(r["addedObservations"]) for r in results)
    for batch in _batches(relations):
        added_relations += len(await graph.create_relations(batch))
    return Imported(added_entities, added_observations, added_relations)
