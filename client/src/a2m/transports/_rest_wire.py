"""What the REST transport's two modes share, without I/O: the HTTP calls a JSON-RPC request
turns into, the replies they get, and how a reply that is not a success becomes the JSON-RPC
error (or the transport error) the HTTP binding would have produced.

A request is carried as an *exchange*: a generator that yields each :class:`HttpCall`, is
sent the :class:`Reply` to it, and finally returns the JSON-RPC response object. The sync
and async transports only drive it, so the translation is written once."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import TypeAdapter, ValidationError

from a2m.errors import A2MHTTPStatusError, ResponseValidationError, error_for_status
from a2m_types import ErrorCode
from a2m_types.rest import a2m_code_for

from ._base import decode_message
from ._hints import status_cause
from .http import _BODY_SNIPPET, _retry_after

__all__ = [
    "Exchange",
    "HttpCall",
    "Refused",
    "Reply",
    "Steps",
    "answered",
    "expect",
    "failure",
    "parse",
]

T = TypeVar("T")


@dataclass(frozen=True)
class HttpCall:
    """One HTTP request under the REST base path (``/a2m/v1/``)."""

    method: Literal["GET", "POST", "DELETE"]
    path: str
    """The path after ``/a2m/v1/``, already percent-encoded."""
    query: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None


@dataclass(frozen=True)
class Reply:
    """What came back for one :class:`HttpCall`."""

    status: int
    headers: Mapping[str, str]
    """Case-insensitive, as httpx gives them."""
    content: bytes
    url: str
    reason: str


Steps = Generator[HttpCall, Reply, T]
"""A part of an exchange that returns ``T``."""

Exchange = Generator[HttpCall, Reply, dict[str, Any]]
"""One JSON-RPC request carried over REST; it returns the JSON-RPC response object."""


class Refused(Exception):
    """The server refused with an A2M error: carried back as a JSON-RPC error object, so the
    client raises exactly the class it would over JSON-RPC."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("message"))
        self.error = error


_REQUEST_FAULTS = frozenset({"INVALID_NAMESPACE", "INVALID_TYPE", "KEY_CONFLICT"})
"""REST codes A2M has no code of its own for, which say the request cannot be valid here:
``INVALID_PARAMS``, the class a JSON-RPC server uses for a parameter it cannot accept."""


def _json(reply: Reply) -> Any:
    try:
        return decode_message(reply.content)
    except ResponseValidationError:
        return None


def _a2m_code(body: Mapping[str, Any]) -> int | None:
    code = body.get("a2m_code")
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    name = body["code"]
    if name in _REQUEST_FAULTS:
        return int(ErrorCode.INVALID_PARAMS)
    return a2m_code_for(name)


def failure(reply: Reply, method: str | None) -> Refused | A2MHTTPStatusError:
    """What a reply that is not a success means.

    A REST error body naming an A2M error (its ``a2m_code``, else the code its name
    stands for) is :class:`Refused`; anything else, the gate's refusals included (401, an
    Origin's 403, 413) and statuses from proxies, is the HTTP status error the HTTP
    transport raises, with ``Retry-After`` honoured."""
    body = _json(reply)
    rest = (
        isinstance(body, dict)
        and isinstance(body.get("code"), str)
        and isinstance(body.get("message"), str)
    )
    if rest:
        code = _a2m_code(body)
        if code is not None:
            error: dict[str, Any] = {"code": code, "message": body["message"]}
            if body.get("data") is not None:
                error["data"] = body["data"]
            return Refused(error)
    message = f"HTTP {reply.status} {reply.reason or 'error'} from {reply.url}"
    if rest:
        message += f" ({body['code']}): {body['message']}"
    cause = status_cause(
        reply.status, reply.content, reply.headers.get("content-type") or "", bool(rest)
    )
    if cause is not None:
        message += f": {cause[0]}"
    refusal = error_for_status(reply.status)(
        message,
        status=reply.status,
        body=reply.content[:_BODY_SNIPPET].decode("utf-8", "replace"),
        retry_after=_retry_after(reply.headers.get("retry-after")),
        method=method,
        data=body.get("data") if rest else None,
    )
    if cause is not None:
        refusal.hint = cause[1]
    return refusal


def expect(reply: Reply, method: str | None, *, ok: tuple[int, ...] = (200,)) -> Any:
    """The JSON body of a successful reply (``None`` for an empty one); otherwise raise
    what :func:`failure` says."""
    if reply.status not in ok:
        raise failure(reply, method)
    if not reply.content:
        return None
    return decode_message(reply.content, method=method)


def parse(
    adapter: TypeAdapter[T],
    reply: Reply,
    method: str | None,
    what: str,
    *,
    ok: tuple[int, ...] = (200,),
) -> T:
    """The body of a successful reply as the model ``adapter`` validates (from JSON, so
    timestamps are read as the wire writes them), or :class:`ResponseValidationError`;
    a reply that is not a success raises what :func:`failure` says."""
    if reply.status not in ok:
        raise failure(reply, method)
    try:
        return adapter.validate_json(reply.content, strict=False)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or what
        raise ResponseValidationError(
            f"the server's {what} does not match the REST binding ({exc.error_count()} "
            f"problem(s); first at {where}: {first['msg']})",
            method=method,
            data=exc.errors(include_url=False, include_context=False, include_input=False),
        ) from None


def answered(request: Mapping[str, Any], steps: Steps[Any]) -> Exchange:
    """Run ``steps`` and wrap what it returns as the JSON-RPC response to ``request``: its
    result, or the error a :class:`Refused` carries."""
    try:
        result = yield from steps
    except Refused as refused:
        return {"jsonrpc": "2.0", "id": request.get("id"), "error": refused.error}
    return {"jsonrpc": "2.0", "id": request.get("id"), "result": result}
