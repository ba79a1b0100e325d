"""The component schemas of the OpenAPI document: the wire models' JSON Schemas, narrowed to
what this server accepts from this caller, so that a request the document allows is one
the server accepts (save what stored state decides)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from a2m_types import (
    MAX_TOP_K,
    MEMORY_TYPES,
    METHODS,
    PROTOCOL_VERSION,
    Entry,
    EntryList,
    EntryWrite,
    QueryRequest,
    RestErrorBody,
    ScoredEntry,
)
from a2m_types.events import KNOWN_EVENT_KINDS

from .view import RestView

__all__ = ["component_schemas"]

_SELECTORS = ("ids", "query", "tier", "where", "key_prefix")


def component_schemas(
    view: RestView, methods: Sequence[str], dimensions: int | None, *, ref: str
) -> dict[str, Any]:
    """Every schema the entry routes and ``methods`` use, keyed by model name."""
    models: list[type[BaseModel]] = [
        Entry,
        EntryWrite,
        EntryList,
        QueryRequest,
        ScoredEntry,
        RestErrorBody,
    ]
    for method in methods:
        models += [METHODS[method].params, METHODS[method].result]
    unique = list(dict.fromkeys(models))
    _, top = models_json_schema([(m, "validation") for m in unique], ref_template=ref)
    schemas: dict[str, Any] = top.get("$defs", {})
    _Narrowing(view, dimensions).apply(schemas)
    return schemas


def _constrain(prop: dict[str, Any], **extra: Any) -> None:
    """Add ``extra`` to the non-null branch(es) of a property schema."""
    branches = prop.get("anyOf")
    for target in [b for b in branches if b.get("type") != "null"] if branches else [prop]:
        target.update(extra)


class _Narrowing:
    """Tightens the generated schemas to this server's configuration."""

    def __init__(self, view: RestView, dimensions: int | None) -> None:
        self.view = view
        self.caps = view.ctx.capabilities
        self.config = view.proto.config
        self.dimensions = dimensions

    def apply(self, schemas: dict[str, Any]) -> None:
        for schema in schemas.values():
            self._drop_undeclared(schema)
        limits = self.config.limits
        tiers = [t.name for t in self.config.tiers]
        width: dict[str, int] = {}
        if self.dimensions is not None:
            width = {"minItems": self.dimensions, "maxItems": self.dimensions}
        for name, schema in schemas.items():
            props = schema.get("properties", {})
            if name.endswith("Params") or name == "RecordInput":
                for field in ("tier", "into"):
                    if field in props:
                        _constrain(props[field], enum=tiers)
            if "embedding" in props and name != "Entry" and width:
                _constrain(props["embedding"], **width)
        self._props(schemas, "RecordInput", "content")["maxLength"] = limits.max_content_length
        self._props(schemas, "RememberParams", "records")["maxItems"] = limits.max_records_per_call
        for name in ("RecallParams", "TimelineParams"):
            _constrain(self._props(schemas, name, "limit"), maximum=limits.max_recall_limit)
        _constrain(self._props(schemas, "DescribeParams", "protocol"), enum=[PROTOCOL_VERSION])
        if "PromptOptions" in schemas:
            self._props(schemas, "PromptOptions", "method")["enum"] = ["template", "none"]
            # No model is offered, so none may be named (§4.16).
            model = self._props(schemas, "PromptOptions", "model")
            model.clear()
            model.update({"type": "null", "description": "No model is offered here."})
        top_k = self._props(schemas, "QueryRequest", "top_k")
        top_k["maximum"] = min(MAX_TOP_K, limits.max_recall_limit)
        for name in ("ForgetParams", "SummarizeParams"):
            if name in schemas:
                self._needs_selector(schemas[name])
        schemas["QueryRequest"]["anyOf"] = [
            {"required": ["embedding"], "properties": {"embedding": {"type": "array"}}},
            {"required": ["query"], "properties": {"query": {"type": "string"}}},
        ]
        unknown = self._props(schemas, "UnknownEvent", "kind")
        if unknown:
            # The events union is a oneOf: an unknown event is one of no known kind.
            unknown["not"] = {"enum": list(KNOWN_EVENT_KINDS)}
        self._entries(schemas)
        cursor = self._props(schemas, "EventsParams", "cursor")
        cursor["description"] = (
            "Opaque: only a cursor this server issued (by an earlier memory:events) is "
            "accepted; any other string is 400."
        )

    def _props(self, schemas: dict[str, Any], model: str, field: str) -> dict[str, Any]:
        prop: dict[str, Any] = schemas.get(model, {}).get("properties", {}).get(field, {})
        return prop

    def _drop_undeclared(self, schema: dict[str, Any]) -> None:
        props = schema.get("properties", {})
        for name in [
            n for n, p in props.items() if p.get("x-a2m-capability", "core") not in self.caps
        ]:
            del props[name]
            if name in schema.get("required", []):
                schema["required"].remove(name)

    def _needs_selector(self, schema: dict[str, Any]) -> None:
        # At least one selector, and not a null, an empty query or an empty where (those
        # select nothing in particular).
        present = [s for s in _SELECTORS if s in schema.get("properties", {})]
        kinds = {"ids": "array", "query": "string", "tier": "string", "where": "object"}
        branches = []
        for name in present:
            shape: dict[str, Any] = {"type": kinds.get(name, "string")}
            if name == "query":
                shape["minLength"] = 1
            if name == "where":
                shape["minProperties"] = 1
            branches.append({"required": [name], "properties": {name: shape}})
        schema["anyOf"] = branches

    def _entries(self, schemas: dict[str, Any]) -> None:
        """What an entry write and a query may carry on this server."""
        writable = [
            t
            for t in MEMORY_TYPES
            if (t == "external" and "external" in self.caps)
            or (
                t != "external"
                and (self.view.tier_for_kind is None or t in self.view.tier_for_kind)
            )
        ]
        self._props(schemas, "EntryWrite", "type")["enum"] = writable
        if "embeddings" not in self.caps:
            for name in ("EntryWrite", "QueryRequest"):
                schemas[name]["properties"].pop("embedding", None)
            schemas["QueryRequest"]["required"] = ["query"]
            schemas["QueryRequest"].pop("anyOf", None)
