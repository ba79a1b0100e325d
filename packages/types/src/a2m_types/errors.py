"""The error codes of A2M 0.1 (§7) and the JSON-RPC error object that carries them."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["ErrorCode", "RpcError"]


class ErrorCode(IntEnum):
    """Every code a conformant server may answer with, named as in the spec."""

    PARSE_ERROR = -32700
    """Malformed JSON."""
    INVALID_REQUEST = -32600
    """Not a valid JSON-RPC request object (a batch array included)."""
    METHOD_NOT_FOUND = -32601
    """The method is not an A2M method at all."""
    INVALID_PARAMS = -32602
    """Missing or malformed parameters."""
    INTERNAL_ERROR = -32603
    """A fault inside the server."""
    UNKNOWN_RECORD = -32001
    """A referenced id does not exist and the operation cannot ignore it."""
    UNKNOWN_TIER = -32002
    """A referenced tier does not exist."""
    CAPABILITY_NOT_SUPPORTED = -32003
    """A method or field of an undeclared capability was used."""
    READ_ONLY = -32004
    """The store does not accept writes."""
    SCOPE_DENIED = -32005
    """The caller may not act on that owner's records."""
    QUOTA_EXCEEDED = -32006
    """A documented limit was exceeded."""
    PROTOCOL_NOT_SUPPORTED = -32007
    """The client declared an incompatible protocol version."""
    EMBEDDING_MISMATCH = -32008
    """A vector's width disagrees with the store's."""


class RpcError(BaseModel):
    """A JSON-RPC error object: ``message`` is for humans, ``data`` for programs."""

    model_config = ConfigDict(extra="allow")

    code: int
    """One of :class:`ErrorCode`, or a code this library does not know yet."""
    message: str
    """Human-readable; clients must not parse it."""
    data: Any = None
    """Optional structured detail."""
