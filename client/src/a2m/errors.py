"""Every failure an A2M call can raise, in one tree, so one ``except`` can be as broad or as
narrow as the caller needs::

    A2MError                              anything this library raises about a call
    ├── A2MTransportError                 no JSON-RPC answer came back
    │   ├── A2MConnectionError            the server could not be reached, or went away
    │   │   └── A2MConnectError           could not connect: the request provably never left
    │   │       └── A2MPoolTimeout        every pooled connection stayed busy: never sent
    │   ├── A2MTimeoutError               no answer within the timeout
    │   ├── A2MEventLoopError             this event loop cannot be served (also a
    │   │                                 RuntimeError)
    │   └── A2MHTTPStatusError            an HTTP status that is not a JSON-RPC answer
    │       ├── BadRequestError           400
    │       ├── AuthenticationError       401
    │       ├── PermissionDeniedError     403
    │       ├── MethodNotAllowedError     405
    │       ├── PayloadTooLargeError      413
    │       ├── RateLimitError            429
    │       └── ServerError               5xx
    ├── A2MProtocolError                  the server answered with a JSON-RPC error (§7);
    │   │                                 an unknown code raises this base class
    │   ├── ParseError                    -32700
    │   ├── InvalidRequest                -32600
    │   ├── MethodNotFound                -32601
    │   ├── InvalidParams                 -32602
    │   ├── InternalError                 -32603
    │   ├── UnknownRecord                 -32001
    │   ├── UnknownTier                   -32002
    │   ├── CapabilityNotSupported        -32003
    │   ├── ReadOnly                      -32004
    │   ├── ScopeDenied                   -32005
    │   ├── QuotaExceeded                 -32006
    │   ├── ProtocolNotSupported          -32007
    │   └── EmbeddingMismatch             -32008
    └── ResponseValidationError           an answer that does not match the schema

The client raises some protocol errors itself, before sending anything, with the same class
the server would have used: ``CapabilityNotSupported`` for a method or parameter of an
undeclared capability, ``InvalidParams`` for arguments that cannot be valid, and
``ProtocolNotSupported`` for a server speaking an incompatible version. Every error carries
the ``method``, the ``code`` where there is one, the server's ``message`` and ``data``.

Apart from the tree, one warning: ``IncompleteListing`` (a ``UserWarning``), which an
adapter listing that may be missing records issues rather than answer silently short.
"""

from __future__ import annotations

from typing import Any, ClassVar

from a2m_types import ErrorCode

__all__ = [
    "A2MConnectError",
    "A2MConnectionError",
    "A2MError",
    "A2MEventLoopError",
    "A2MHTTPStatusError",
    "A2MPoolTimeout",
    "A2MProtocolError",
    "A2MTimeoutError",
    "A2MTransportError",
    "AuthenticationError",
    "BadRequestError",
    "CapabilityNotSupported",
    "EmbeddingMismatch",
    "IncompleteListing",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "MethodNotAllowedError",
    "MethodNotFound",
    "ParseError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "ProtocolNotSupported",
    "QuotaExceeded",
    "RateLimitError",
    "ReadOnly",
    "ResponseValidationError",
    "ScopeDenied",
    "ServerError",
    "UnknownRecord",
    "UnknownTier",
    "error_for_code",
    "error_for_status",
]


class A2MError(Exception):
    """Base of everything this library raises about a call."""

    hint: str = ""
    """What the caller can do about it; appended to the message. Each class has its own;
    an error whose cause is known more closely (connection refused, an HTML page from a
    proxy) carries one fitting that cause."""

    def __init__(
        self,
        message: str,
        *,
        method: str | None = None,
        code: int | None = None,
        data: Any = None,
    ) -> None:
        self.message = message
        """The server's message (for humans; never parse it), or the client's own."""
        self.method = method
        """The ``memory/*`` method that failed, when known."""
        self.code = code
        """The JSON-RPC error code, where there is one."""
        self.data = data
        """Structured detail from the server (``error.data``), or from the client."""
        super().__init__(message)

    def __str__(self) -> str:
        where = f"{self.method}: " if self.method else ""
        code = ""
        if self.code is not None:
            name = ErrorCode(self.code).name if self.code in _KNOWN_CODES else "unknown code"
            code = f" [{self.code} {name}]"
        hint = f" {self.hint}" if self.hint else ""
        return f"{where}{self.message.rstrip('.')}{code}.{hint}"


_KNOWN_CODES = frozenset(int(code) for code in ErrorCode)


# --- transport ----------------------------------------------------------------------------


class A2MTransportError(A2MError):
    """The call got no JSON-RPC answer: the transport failed underneath it."""

    def __init__(
        self,
        message: str,
        *,
        method: str | None = None,
        code: int | None = None,
        data: Any = None,
        retryable: bool = True,
    ) -> None:
        super().__init__(message, method=method, code=code, data=data)
        self.retryable = retryable
        """Whether sending again could help; ``False`` when the peer is gone for good."""


class A2MConnectionError(A2MTransportError):
    """The server could not be reached, or the connection broke mid-call."""

    hint = "Check that the server is running and reachable."


class A2MConnectError(A2MConnectionError):
    """No connection could be opened, so the request provably never left; any call is safe
    to retry after this."""


class A2MPoolTimeout(A2MConnectError):
    """Every connection the client may open stayed busy for the whole timeout, so the
    request never left; like any :class:`A2MConnectError`, safe to retry."""

    hint = "Raise max_connections or the timeout, or make fewer calls at once."


class A2MTimeoutError(A2MTransportError):
    """No answer arrived within the timeout; the server may still have acted on the call."""

    hint = "Raise the timeout (timeout=… per call, or client.with_options(timeout=…))."


class A2MEventLoopError(A2MTransportError, RuntimeError):
    """The call was awaited on an event loop this client cannot serve: under an async
    library it does not run on, or on a loop other than the one a loop-bound resource
    belongs to (an injected ``httpx.AsyncClient``, a stdio server's pipes), or that loop
    ended during the call. Sending again from the same loop cannot help."""

    hint = (
        "Await the client on asyncio (any loop) or trio; a stdio client or an injected "
        "http_client serves only the loop that owns it, so make one client per loop there."
    )

    def __init__(self, message: str, *, method: str | None = None, data: Any = None) -> None:
        super().__init__(message, method=method, data=data, retryable=False)


class A2MHTTPStatusError(A2MTransportError):
    """The HTTP server answered with a status that does not carry a JSON-RPC answer."""

    status_code: ClassVar[int | None] = None
    """The status this class stands for; ``None`` on the base class."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        body: str = "",
        retry_after: float | None = None,
        method: str | None = None,
        code: int | None = None,
        data: Any = None,
    ) -> None:
        super().__init__(message, method=method, code=code, data=data)
        self.status = status
        """The HTTP status received."""
        self.body = body
        """The start of the response body, for diagnosis."""
        self.retry_after = retry_after
        """Seconds the server asked us to wait (``Retry-After``), when it said."""


class BadRequestError(A2MHTTPStatusError):
    """400: the server refused the HTTP request itself."""

    status_code = 400
    hint = "The request was malformed for this endpoint; check the URL and the server version."


class AuthenticationError(A2MHTTPStatusError):
    """401: a missing or invalid credential (§6.1)."""

    status_code = 401
    hint = "Pass token=… or set A2M_TOKEN to a credential this server accepts."


class PermissionDeniedError(A2MHTTPStatusError):
    """403: the credential, or the request's ``Origin``, is not permitted (§8.3.1)."""

    status_code = 403
    hint = "Use a credential with access, and do not send a browser Origin the server refuses."


class MethodNotAllowedError(A2MHTTPStatusError):
    """405: the URL does not accept ``POST``; it is probably not the JSON-RPC endpoint."""

    status_code = 405
    hint = "Point the client at the server's JSON-RPC endpoint."


class PayloadTooLargeError(A2MHTTPStatusError):
    """413: the request body is larger than the server accepts."""

    status_code = 413
    hint = "Send fewer records per call, or shorter content (see describe().limits)."


class RateLimitError(A2MHTTPStatusError):
    """429: too many requests; retried automatically, honouring ``Retry-After``."""

    status_code = 429
    hint = "Slow down, or raise max_retries."


class ServerError(A2MHTTPStatusError):
    """5xx: the server or a gateway in front of it failed; 502, 503 and 504 are retried."""

    hint = "The server failed; its log has the details. Retry later."


_STATUS_CLASSES: dict[int, type[A2MHTTPStatusError]] = {
    cls.status_code: cls
    for cls in (
        BadRequestError,
        AuthenticationError,
        PermissionDeniedError,
        MethodNotAllowedError,
        PayloadTooLargeError,
        RateLimitError,
    )
    if cls.status_code is not None
}


def error_for_status(status: int) -> type[A2MHTTPStatusError]:
    """The class raised for an HTTP ``status``."""
    if status >= 500:
        return ServerError
    return _STATUS_CLASSES.get(status, A2MHTTPStatusError)


# --- protocol -----------------------------------------------------------------------------


class A2MProtocolError(A2MError):
    """The server answered with a JSON-RPC error object; ``code`` says which (§7).

    A code this library does not know raises this base class, carrying the code."""

    error_code: ClassVar[ErrorCode | None] = None
    """The spec code this class stands for; ``None`` on the base class."""
    hint = "The server used a code this client does not know; its message and data say more."

    def __init__(
        self, message: str, *, method: str | None = None, code: int | None = None, data: Any = None
    ) -> None:
        if code is None and self.error_code is not None:
            code = int(self.error_code)
        super().__init__(message, method=method, code=code, data=data)


class ParseError(A2MProtocolError):
    """-32700: the server could not parse the request as JSON."""

    error_code = ErrorCode.PARSE_ERROR
    hint = "This is a client or proxy fault: the request body was mangled on the way."


class InvalidRequest(A2MProtocolError):
    """-32600: the message was not a valid JSON-RPC request object."""

    error_code = ErrorCode.INVALID_REQUEST
    hint = "This is a client or proxy fault: the request envelope was mangled on the way."


class MethodNotFound(A2MProtocolError):
    """-32601: the method is not an A2M method at all."""

    error_code = ErrorCode.METHOD_NOT_FOUND
    hint = "The server may not be an A2M server; check the URL or command."


class InvalidParams(A2MProtocolError):
    """-32602: a parameter is missing or malformed (raised client-side when it cannot be
    valid, before anything is sent)."""

    error_code = ErrorCode.INVALID_PARAMS
    hint = "Fix the arguments named in the message (spec §4 lists each method's params)."


class InternalError(A2MProtocolError):
    """-32603: a fault inside the server."""

    error_code = ErrorCode.INTERNAL_ERROR
    hint = "The server failed; its log has the details."


class UnknownRecord(A2MProtocolError):
    """-32001: a referenced id does not exist and the operation cannot ignore it."""

    error_code = ErrorCode.UNKNOWN_RECORD
    hint = "The record may have been forgotten or consolidated away; recall it again."


class UnknownTier(A2MProtocolError):
    """-32002: a referenced tier does not exist."""

    error_code = ErrorCode.UNKNOWN_TIER
    hint = "Use a tier name from describe().tiers."


class CapabilityNotSupported(A2MProtocolError):
    """-32003: a method or parameter of a capability the server did not declare; the client
    raises it before sending anything whenever describe already says so."""

    error_code = ErrorCode.CAPABILITY_NOT_SUPPORTED
    hint = "Check client.supports(…) first, or use a server that declares the capability."

    @property
    def capability(self) -> str | None:
        """The capability that was missing, when known."""
        if isinstance(self.data, dict) and isinstance(self.data.get("capability"), str):
            return str(self.data["capability"])
        return None


class ReadOnly(A2MProtocolError):
    """-32004: the store does not accept writes (§2.1); never retried."""

    error_code = ErrorCode.READ_ONLY
    hint = "This server only answers describe, recall and timeline; write to another one."


class ScopeDenied(A2MProtocolError):
    """-32005: the caller may not act on that owner's records."""

    error_code = ErrorCode.SCOPE_DENIED
    hint = "Act as the owner your credential grants, or leave owner unset."


class QuotaExceeded(A2MProtocolError):
    """-32006: a documented limit was exceeded."""

    error_code = ErrorCode.QUOTA_EXCEEDED
    hint = "Stay within describe().limits: fewer records per call, shorter content."


class ProtocolNotSupported(A2MProtocolError):
    """-32007: client and server speak incompatible protocol versions (§9)."""

    error_code = ErrorCode.PROTOCOL_NOT_SUPPORTED
    hint = "Use a client release that speaks the server's protocol version."


class EmbeddingMismatch(A2MProtocolError):
    """-32008: a vector's width disagrees with the store's (§3.7)."""

    error_code = ErrorCode.EMBEDDING_MISMATCH
    hint = "Use the embedding model whose width describe().embeddings.dimensions reports."


_CODE_CLASSES: dict[int, type[A2MProtocolError]] = {
    int(cls.error_code): cls
    for cls in (
        ParseError,
        InvalidRequest,
        MethodNotFound,
        InvalidParams,
        InternalError,
        UnknownRecord,
        UnknownTier,
        CapabilityNotSupported,
        ReadOnly,
        ScopeDenied,
        QuotaExceeded,
        ProtocolNotSupported,
        EmbeddingMismatch,
    )
    if cls.error_code is not None
}


def error_for_code(code: int) -> type[A2MProtocolError]:
    """The class raised for JSON-RPC error ``code``; the base class for an unknown one."""
    return _CODE_CLASSES.get(code, A2MProtocolError)


# --- validation ---------------------------------------------------------------------------


class ResponseValidationError(A2MError):
    """The server answered, but not with what the schema allows for this method: not JSON,
    not a JSON-RPC response, or a ``result`` of the wrong shape."""

    hint = "The server is not speaking A2M 0.1 correctly; report it to its maintainers."


class IncompleteListing(UserWarning):
    """A listing that may be missing records: the server pages by no cursor, and one call
    reached its ``max_recall_limit``. Every adapter listing that cannot be complete warns
    with this (or a subclass), or raises where the framework promises an exact answer."""
