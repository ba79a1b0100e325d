"""The eight messages of the A2E memory capability (seed 000) as plain dicts: their type
names, every field's default, :func:`new_message` to build one, and the host's error
message, the one shape the seed leaves open."""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "CAPABILITY",
    "ERROR",
    "FORGET_REQ",
    "FORGET_RESP",
    "INIT_REQ",
    "INIT_RESP",
    "PROTOCOL_VERSION",
    "RETRIEVE_REQ",
    "RETRIEVE_RESP",
    "STORE_REQ",
    "STORE_RESP",
    "TIERS",
    "ErrorCode",
    "error_message",
    "new_message",
]

CAPABILITY: Final = "memory"
"""``A2ECapability.MEMORY``: the capability these messages belong to."""
PROTOCOL_VERSION: Final = "1.0"

INIT_REQ: Final = "memory/init/req"
INIT_RESP: Final = "memory/init/resp"
STORE_REQ: Final = "memory/store/req"
STORE_RESP: Final = "memory/store/resp"
RETRIEVE_REQ: Final = "memory/retrieve/req"
RETRIEVE_RESP: Final = "memory/retrieve/resp"
FORGET_REQ: Final = "memory/forget/req"
FORGET_RESP: Final = "memory/forget/resp"
ERROR: Final = "memory/error"
"""The host's answer to a request it could not carry out (not one of the seed's eight)."""

TIERS: Final = ("working", "episodic", "semantic")
"""``MemoryTier``: in-session scratch pad, the agent's own, shared by all agents."""


class ErrorCode:
    """The ``code`` of a ``memory/error`` message: the seed's two, then the host's own."""

    MEMORY_FULL: Final = "memory_full"
    """A configured storage quota is reached (not retryable)."""
    MEMORY_NOT_FOUND: Final = "memory_not_found"
    """A keyed lookup found nothing (not retryable)."""
    INVALID_MESSAGE: Final = "invalid_message"
    """Not JSON, not an object, or a field of the wrong type or missing."""
    UNKNOWN_TYPE: Final = "unknown_type"
    """A ``type`` that is not one of the four requests."""
    UNSUPPORTED_VERSION: Final = "unsupported_version"
    """A ``version`` whose major number is not 1."""
    UNKNOWN_MEMORY: Final = "unknown_memory"
    """A ``memory_id`` this host never issued, or one whose session has ended."""
    PERMISSION_DENIED: Final = "permission_denied"
    """Writing the shared ``semantic`` tier without the host's grant, or a ``scope.agent``
    that is not the authenticated principal."""
    BACKEND_ERROR: Final = "backend_error"
    """The A2M store failed the call; ``retryable`` says whether trying again may help."""


# type -> the fields that type carries beyond the envelope, with their defaults (a value of
# ``None`` is a field the seed gives no default: the caller must supply it).
_FIELDS: Final[Mapping[str, Mapping[str, Any]]] = {
    INIT_REQ: {"namespace": None, "scope": {}, "metadata": {}},
    INIT_RESP: {"req_id": "", "memory_id": None, "namespace": None},
    STORE_REQ: {"memory_id": None, "entries": []},
    STORE_RESP: {"req_id": "", "stored": [], "errors": []},
    RETRIEVE_REQ: {
        "memory_id": None,
        "keys": [],
        "query": "",
        "tags": [],
        "tier": "",
        "limit": 10,
        "min_score": 0.0,
    },
    RETRIEVE_RESP: {"req_id": "", "entries": [], "total": 0},
    FORGET_REQ: {"memory_id": None, "keys": [], "tags": [], "tier": "episodic"},
    FORGET_RESP: {"req_id": "", "deleted": 0},
    ERROR: {"req_id": "", "code": None, "message": "", "retryable": False},
}


def new_message(type: str, **fields: Any) -> dict[str, Any]:
    """A complete message of ``type``: ``id`` a fresh UUID, ``version`` ``"1.0"``, ``ts``
    now (epoch seconds), every field the caller leaves out at the seed's default. Raises
    ``ValueError`` for an unknown type, an unknown field, or a field with no default left
    out."""
    try:
        defaults = _FIELDS[type]
    except KeyError:
        raise ValueError(f"unknown message type {type!r}") from None
    envelope = {"id", "version", "ts"}
    unknown = set(fields) - set(defaults) - envelope
    if unknown:
        raise ValueError(f"{type} has no field(s) {', '.join(sorted(unknown))}")
    message: dict[str, Any] = {
        "type": type,
        "id": fields.get("id", str(uuid.uuid4())),
        "version": fields.get("version", PROTOCOL_VERSION),
        "ts": fields.get("ts", time.time()),
    }
    for name, default in defaults.items():
        if name in fields:
            message[name] = fields[name]
        elif default is None:
            raise ValueError(f"{type} needs {name}")
        else:
            message[name] = copy.deepcopy(default)
    return message


def error_message(
    req_id: str, code: str, message: str, *, retryable: bool = False
) -> dict[str, Any]:
    """The ``memory/error`` answering request ``req_id``."""
    return new_message(ERROR, req_id=req_id, code=code, message=message, retryable=retryable)
