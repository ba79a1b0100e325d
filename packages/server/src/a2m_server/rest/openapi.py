"""``GET /a2m/v1/openapi.json``: the OpenAPI 3.1 document of the REST binding, as this server
shows itself to this caller.

Schemas are the wire models' JSON Schemas, narrowed to what this server accepts: fields of
capabilities it does not declare are left out, and tier names, limits, the protocol
version and (once the first vector fixed it) the embedding width become enums and bounds.
A request the document allows is one the server accepts, except where stored state
decides (an entry that is not there, a key another entry holds)."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from a2m_types import (
    DELETED_COUNT_HEADER,
    KEY_PATTERN,
    MAX_KEY_LENGTH,
    MAX_LIST_LIMIT,
    MAX_NAMESPACE_LENGTH,
    MEMORY_TYPES,
    METHODS,
    NAMESPACE_PATTERN,
    PROTOCOL_VERSION,
    REST_BASE_PATH,
    Where,
)

from .params import MAX_OFFSET
from .schemas import component_schemas
from .view import RestView

__all__ = ["PUSH_METHODS", "openapi_document"]

PUSH_METHODS = frozenset({"memory/events/subscribe", "memory/events/unsubscribe"})
"""Methods REST does not offer: HTTP cannot push (watch with the WebSocket route)."""

_REF = "#/components/schemas/{model}"
_NEEDS_PARAMS = frozenset({"memory/forget", "memory/summarize"})
"""Methods whose params have no required field but must name a selector."""


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": _REF.format(model=name)}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _param(name: str, where: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    parameter: dict[str, Any] = {
        "name": name,
        "in": where,
        "schema": schema,
        "description": description,
    }
    if where == "path":
        parameter["required"] = True
    return parameter


_NAMESPACE = _param(
    "namespace",
    "path",
    {"type": "string", "pattern": NAMESPACE_PATTERN, "maxLength": MAX_NAMESPACE_LENGTH},
    "Slash-separated [a-z0-9_-]+ segments, none of them entries, query or subscribe. Its "
    "slashes are path separators (sent as is or as %2F).",
)
_KEY = _param(
    "key",
    "path",
    {"type": "string", "pattern": KEY_PATTERN, "minLength": 1, "maxLength": MAX_KEY_LENGTH},
    "The entry's key; its slashes may be sent as is or as %2F.",
)


def _filters(max_limit: int, *, paged: bool) -> list[dict[str, Any]]:
    params = [
        _param("type", "query", {"type": "string", "enum": list(MEMORY_TYPES)}, "Only this type."),
        {
            **_param(
                "tag",
                "query",
                {"type": "array", "items": {"type": "string"}},
                "Repeatable: only entries carrying every one of these tags.",
            ),
            "style": "form",
            "explode": True,
        },
        _param("recursive", "query", {"type": "boolean"}, "Include child namespaces."),
        {
            "name": "where",
            "in": "query",
            "content": {"application/json": {"schema": TypeAdapter(Where).json_schema()}},
            "description": "A record-level where, as memory/timeline takes it (equality, "
            "and the operators describe lists under where.operators). An addition to the "
            "draft.",
        },
    ]
    if paged:
        params += [
            _param(
                "limit",
                "query",
                {"type": "integer", "minimum": 1, "maximum": max_limit},
                "Entries per page (default 50).",
            ),
            _param(
                "offset",
                "query",
                {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET},
                "Entries to skip.",
            ),
            _param(
                "cursor",
                "query",
                {"type": "string", "maxLength": 1024},
                "Page by keyset cursor instead of offset: empty for the first page, then "
                "each page's next_cursor (describe timeline.cursor). An addition to the draft.",
            ),
        ]
    return params


def _errors(*statuses: int, authenticated: bool, body: bool) -> dict[str, Any]:
    # Every route: a refused Origin (403), a bad version header (400), a fault (500),
    # shutdown (503); with auth, 401; with a body, its size limit (413).
    codes = {400, 403, 500, 503, *statuses}
    if authenticated:
        codes.add(401)
    if body:
        codes.add(413)
    return {str(c): _json(_ref("RestErrorBody"), "An error.") for c in sorted(codes)}


def _operation(
    op_id: str,
    summary: str,
    responses: dict[str, Any],
    *,
    errors: tuple[int, ...],
    authenticated: bool,
    body: dict[str, Any] | None = None,
    body_required: bool = True,
    parameters: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    operation: dict[str, Any] = {"operationId": op_id, "summary": summary}
    if parameters:
        operation["parameters"] = parameters
    if body is not None:
        operation["requestBody"] = {
            "required": body_required,
            "content": {"application/json": {"schema": body}},
        }
    operation["responses"] = {
        **responses,
        **_errors(*errors, authenticated=authenticated, body=body is not None),
    }
    return operation


def _entry_paths(view: RestView, authenticated: bool) -> dict[str, Any]:
    entry = _ref("Entry")
    max_limit = min(MAX_LIST_LIMIT, view.proto.config.limits.max_recall_limit)
    deleted = {
        "description": "Deleted.",
        "headers": {
            DELETED_COUNT_HEADER: {
                "required": True,
                "description": "How many entries were deleted.",
                "schema": {"type": "integer", "minimum": 0},
            }
        },
    }
    base = REST_BASE_PATH + "/{namespace}"
    return {
        base + "/entries": {
            "parameters": [_NAMESPACE],
            "post": _operation(
                "upsertEntry",
                "Create or replace the entry at (namespace, key)",
                {"200": _json(entry, "Replaced."), "201": _json(entry, "Created.")},
                errors=(409, 422, 501),
                body=_ref("EntryWrite"),
                authenticated=authenticated,
            ),
            "get": _operation(
                "listEntries",
                "List entries, oldest first",
                {"200": _json(_ref("EntryList"), "One page.")},
                errors=(422, 501),
                parameters=_filters(max_limit, paged=True),
                authenticated=authenticated,
            ),
            "delete": _operation(
                "deleteEntries",
                "Delete every entry the filters select",
                {"204": deleted},
                errors=(422, 501),
                parameters=_filters(max_limit, paged=False),
                authenticated=authenticated,
            ),
        },
        base + "/entries/{key}": {
            "parameters": [_NAMESPACE, _KEY],
            "get": _operation(
                "readEntry",
                "Read one entry",
                {"200": _json(entry, "The entry.")},
                errors=(404, 422, 501),
                authenticated=authenticated,
            ),
            "delete": _operation(
                "deleteEntry",
                "Delete one entry",
                {"204": {"description": "Deleted."}},
                errors=(404, 422, 501),
                authenticated=authenticated,
            ),
        },
        base + "/query": {
            "parameters": [_NAMESPACE],
            "post": _operation(
                "queryEntries",
                "Entries nearest an embedding, or ranked for a text query, best first",
                {"200": _json({"type": "array", "items": _ref("ScoredEntry")}, "Best first.")},
                errors=(422, 501),
                body=_ref("QueryRequest"),
                authenticated=authenticated,
            ),
        },
    }


def _method_paths(methods: list[str], authenticated: bool) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for method in methods:
        spec = METHODS[method]
        name = method.removeprefix("memory/")
        operation = _operation(
            "memory_" + name.replace("/", "_"),
            f"Run {method} (the body is its params object)",
            {"200": _json(_ref(spec.result.__name__), "The method's result.")},
            errors=(409, 422, 501) if method == "memory/remember" else (422, 501),
            body=_ref(spec.params.__name__),
            # Without a body the params are {}: fine unless something must be given.
            body_required=method in _NEEDS_PARAMS
            or any(f.is_required() for f in spec.params.model_fields.values()),
            authenticated=authenticated,
        )
        item = {"post": operation}
        if method == "memory/describe":
            item["get"] = {**operation, "operationId": "memory_describe_get"}
            del item["get"]["requestBody"]
            item["get"]["responses"].pop("413", None)
        paths[f"{REST_BASE_PATH}/memory:{name}"] = item
    return paths


def openapi_document(view: RestView, authenticated: bool) -> dict[str, Any]:
    """The document; ``authenticated`` says whether the server requires bearer tokens."""
    caps = view.ctx.capabilities
    with view.proto.store.reading() as reader:
        dimensions = reader.dimensions()
    methods = [m for m, s in METHODS.items() if s.capability in caps and m not in PUSH_METHODS]
    schemas = component_schemas(view, methods, dimensions, ref=_REF)
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": f"A2M REST binding ({view.proto.config.name})",
            "version": PROTOCOL_VERSION.removeprefix("a2m/"),
            "description": (
                "Entries addressed by namespace and key, and every A2M method as "
                "memory:{method}. WebSocket: GET "
                f"{REST_BASE_PATH}/{{namespace}}/subscribe?pattern=glob upgrades to a "
                'stream of {"event": "write" | "delete", "entry": Entry} messages '
                "(see x-a2m-websocket). The mapping onto A2M records is docs/rest-binding.md."
            ),
        },
        "paths": {
            f"{REST_BASE_PATH}/openapi.json": {
                "get": _operation(
                    "openapi",
                    "This document",
                    {"200": _json({"type": "object"}, "The OpenAPI document.")},
                    errors=(),
                    authenticated=authenticated,
                )
            },
            # Without keys every entry route answers 501: they are not offered.
            **(_entry_paths(view, authenticated) if "keys" in caps else {}),
            **_method_paths(methods, authenticated),
        },
        "components": {"schemas": schemas},
        "x-a2m-websocket": {
            f"{REST_BASE_PATH}/{{namespace}}/subscribe": {
                "parameters": [
                    _NAMESPACE,
                    _param(
                        "pattern",
                        "query",
                        {"type": "string", "maxLength": MAX_KEY_LENGTH},
                        "Glob over keys; * and ? stay within one segment. Absent: every key.",
                    ),
                ],
                "message": {
                    "type": "object",
                    "required": ["event", "entry"],
                    "properties": {
                        "event": {"enum": ["write", "delete"]},
                        "entry": _ref("Entry"),
                    },
                },
            }
        },
    }
    if authenticated:
        document["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        document["security"] = [{"bearer": []}]
    return document
