"""Reading a REST request: which route its path names, its query parameters, its JSON body.

Every refusal here is a :class:`RestError` with the draft's body, raised before anything
touches the store."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from types import UnionType
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from starlette.datastructures import QueryParams
from starlette.requests import Request

from a2m_types import (
    DEFAULT_LIST_LIMIT,
    MAX_LIST_LIMIT,
    MEMORY_TYPES,
    ROUTE_WORDS,
    InvalidKey,
    InvalidNamespace,
    validate_key,
    validate_namespace,
)
from a2m_types.json_values import is_utf8_text

from .errors import RestError
from .service import ListOptions

__all__ = [
    "ALLOWED_METHODS",
    "MAX_OFFSET",
    "NO_BODY",
    "Target",
    "list_options",
    "parse_target",
    "read_json",
    "read_model",
    "whole_numbers",
]

MAX_OFFSET = 2**31 - 1
"""The largest ``offset`` a list accepts."""

RouteKind = Literal["entries", "entry", "query", "subscribe", "method", "openapi"]

ALLOWED_METHODS: dict[RouteKind, tuple[str, ...]] = {
    "entries": ("GET", "POST", "DELETE"),
    "entry": ("GET", "DELETE"),
    "query": ("POST",),
    "subscribe": ("GET",),
    "method": ("POST",),
    "openapi": ("GET",),
}
"""The HTTP methods each kind of route answers (``memory:describe`` also answers GET)."""

_METHOD_PREFIX = "memory:"

Model = TypeVar("Model", bound=BaseModel)


@dataclass(frozen=True)
class Target:
    """What a path under ``/a2m/v1/`` names."""

    kind: RouteKind
    namespace: str = ""
    key: str = ""
    method: str = ""
    """The A2M method of a ``memory:{method}`` route, e.g. ``memory/recall``."""

    def allowed(self) -> tuple[str, ...]:
        if self.method == "memory/describe":
            return ("GET", "POST")
        return ALLOWED_METHODS[self.kind]


def parse_target(path: str) -> Target:
    """The route ``path`` (what follows ``/a2m/v1/``) names: the namespace runs up to the
    first segment that names a route; ``memory:`` and ``openapi.json`` cannot be namespaces."""
    if path == "openapi.json":
        return Target("openapi")
    if path.startswith(_METHOD_PREFIX) and len(path) > len(_METHOD_PREFIX):
        return Target("method", method="memory/" + path[len(_METHOD_PREFIX) :])
    segments = path.split("/")
    position = next((i for i, s in enumerate(segments) if s in ROUTE_WORDS), None)
    if position is None:
        raise RestError("NOT_FOUND", f"no REST route at /a2m/v1/{path}")
    namespace = "/".join(segments[:position])
    try:
        validate_namespace(namespace)
    except InvalidNamespace as exc:
        raise RestError("INVALID_NAMESPACE", str(exc), data={"namespace": namespace}) from None
    word = segments[position]
    rest = "/".join(segments[position + 1 :])
    if word == "entries" and rest:
        try:
            return Target("entry", namespace, validate_key(rest))
        except InvalidKey as exc:
            raise RestError.invalid_body(f"invalid key: {exc}", field="key") from None
    if rest:
        raise RestError("NOT_FOUND", f"no REST route at /a2m/v1/{path}")
    kind: RouteKind = (
        "entries" if word == "entries" else "query" if word == "query" else "subscribe"
    )
    return Target(kind, namespace)


def _one(params: QueryParams, name: str) -> str | None:
    """The query parameter ``name``, given at most once: a second value would be a second
    answer to one question, and taking either would drop the other without a word."""
    values = params.getlist(name)
    if len(values) > 1:
        raise RestError.invalid_body(
            f"{name} is given {len(values)} times; give it once", field=name
        )
    return values[0] if values else None


def _integer(params: QueryParams, name: str, default: int, low: int, high: int) -> int:
    raw = _one(params, name)
    if raw is None:
        return default
    try:
        value: int | None = int(raw.strip())
    except ValueError:
        value = _whole(raw)  # JSON Schema's integers include 2.0
    if value is None:
        raise RestError.invalid_body(f"{name} must be an integer, not {raw!r}")
    if not low <= value <= high:
        raise RestError.invalid_body(f"{name} must lie between {low} and {high}, not {value}")
    return value


def _boolean(params: QueryParams, name: str) -> bool:
    raw = _one(params, name)
    if raw is None:
        return False
    value = raw.strip().lower()
    if value in ("true", "1"):
        return True
    if value in ("false", "0"):
        return False
    raise RestError.invalid_body(f"{name} must be true or false, not {raw!r}")


def list_options(params: QueryParams) -> ListOptions:
    """``type``, repeated ``tag``, ``limit`` (1 to 500), ``offset``, ``recursive``, and the
    additions ``where`` (a JSON object) and ``cursor``."""
    type_ = _one(params, "type")
    if type_ is not None and type_ not in MEMORY_TYPES:
        raise RestError(
            "INVALID_TYPE",
            f"type must be one of {', '.join(MEMORY_TYPES)}, not {type_!r}",
            data={"type": type_},
        )
    return ListOptions(
        type=type_,
        tags=params.getlist("tag"),
        limit=_integer(params, "limit", DEFAULT_LIST_LIMIT, 1, MAX_LIST_LIMIT),
        offset=_integer(params, "offset", 0, 0, MAX_OFFSET),
        recursive=_boolean(params, "recursive"),
        where=_where(params),
        cursor=_one(params, "cursor"),
    )


def _where(params: QueryParams) -> dict[str, Any] | None:
    """``where``: a JSON object, as ``memory/timeline`` takes it."""
    raw = _one(params, "where")
    if raw is None:
        return None
    where = _parsed(raw, "where", field="where")
    if not isinstance(where, dict):
        raise RestError.invalid_body("where must be a JSON object", field="where")
    return where


NO_BODY: Any = object()
"""What :func:`read_json` returns for an empty body (JSON ``null`` is a body)."""


async def read_json(request: Request) -> Any:
    """The body as JSON; :data:`NO_BODY` when there is none."""
    body = await request.body()
    if not body:
        return NO_BODY
    try:
        text = body.decode("utf-8")
    except ValueError as exc:
        raise RestError.invalid_body(f"malformed JSON: {exc}") from None
    return _parsed(text, "body")


def _parsed(text: str, what: str, **data: Any) -> Any:
    """``text`` as JSON: INVALID_BODY (``data`` naming the field) for malformed JSON, NaN
    or an infinity, nesting past the parser's depth, or a lone surrogate."""
    try:
        value = json.loads(text, parse_constant=_refuse, parse_float=_finite)
    except (ValueError, RecursionError) as exc:
        prefix = "" if what == "body" else f"{what}: "
        raise RestError.invalid_body(f"{prefix}malformed JSON: {exc}", **data) from None
    where = _lone_surrogate(value, what)
    if where is not None:
        raise RestError.invalid_body(
            f"{where} holds a lone surrogate, which is not text in UTF-8", **data
        )
    return value


def _lone_surrogate(value: Any, path: str) -> str | None:
    """Where ``value`` holds a string (or a key) with a lone surrogate, which JSON's
    ``\\ud800`` escape can spell but UTF-8 text, and so no store, can hold; ``None``
    when nowhere. Refused here, whatever field it is in, so no write meets it later."""
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if not is_utf8_text(item):
                return where
        elif isinstance(item, dict):
            for key, inner in item.items():
                if not is_utf8_text(key):
                    return f"{where} (a key)"
                stack.append((inner, f"{where}.{key}"))
        elif isinstance(item, list):
            stack.extend((inner, f"{where}[{n}]") for n, inner in enumerate(item))
    return None


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite(text: str) -> float:
    # 1e400 is JSON grammar, but no double holds it: it would come back as inf, which
    # nothing can store or send back as JSON.
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large for a number")
    return value


def read_model(model: type[Model], payload: Any, what: str) -> Model:
    """``payload`` validated as ``model``; ``400 INVALID_BODY`` (or ``422 INVALID_TYPE``)."""
    if not isinstance(payload, dict):
        raise RestError.invalid_body(f"the {what} must be a JSON object")
    try:
        return model.model_validate(whole_numbers(model, payload))
    except ValidationError as exc:
        raise RestError.from_validation(exc, what) from None


def _whole(raw: str) -> int | None:
    try:
        number = float(raw)
    except ValueError:
        return None
    return int(number) if number.is_integer() else None


def whole_numbers(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with a whole float (``2.0``) made an int wherever ``model`` expects an int.

    In JSON Schema ``2.0`` is an integer, and the OpenAPI document promises integers; the
    wire models take only ``2``. Nothing else is touched: a float in ``metadata``, a
    ``where`` value or an entry's ``value`` stays exactly as it was sent."""
    fields = {field.alias or name: field.annotation for name, field in model.model_fields.items()}
    return {
        key: _whole_in(fields[key], item) if key in fields else item for key, item in data.items()
    }


def _whole_in(annotation: Any, value: Any) -> Any:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _whole_in(args[0], value)
    if isinstance(value, float) and value.is_integer() and _takes_int_not_float(annotation):
        return int(value)
    if isinstance(value, dict):
        for option in args if origin in (Union, UnionType) else (annotation,):
            if isinstance(option, type) and issubclass(option, BaseModel):
                return whole_numbers(option, value)
    if isinstance(value, list) and origin in (Union, UnionType):
        lists = [a for a in args if get_origin(a) is list]
        return _whole_in(lists[0], value) if len(lists) == 1 else value
    if isinstance(value, list) and origin is list and args:
        return [_whole_in(args[0], item) for item in value]
    return value


def _takes_int_not_float(annotation: Any) -> bool:
    options = (
        get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    )
    return int in options and float not in options and Any not in options
