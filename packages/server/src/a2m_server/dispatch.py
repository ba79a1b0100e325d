"""JSON-RPC 2.0 framing and nothing else: parse a message, refuse batches, tell requests from
notifications, and turn whatever the handler raises into an error object (§7, §8).

It knows no method and no storage; ``invoke`` does the work."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

from a2m_types import ErrorCode

from . import _json
from .errors import ProtocolError

__all__ = ["Invoke", "decode", "encode", "error_response", "handle_message"]

log = logging.getLogger("a2m_server")

Invoke = Callable[[str, dict[str, Any]], dict[str, Any]]
"""Runs one method with its params and returns the result object, or raises ProtocolError."""


def decode(raw: str | bytes) -> Any:
    """Parse one JSON text strictly (no NaN or Infinity); raises ``ValueError``."""
    return _json.loads(raw)


def encode(message: dict[str, Any]) -> str:
    """Serialise one message as a single line of JSON (orjson where it writes the same
    value); raises ``ValueError`` for a value JSON cannot carry."""
    return _json.dumps(message)


def error_response(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def parse_error(detail: str) -> dict[str, Any]:
    return error_response(None, ErrorCode.PARSE_ERROR, f"malformed JSON: {detail}")


def handle_text(raw: str | bytes, invoke: Invoke) -> dict[str, Any] | None:
    """Parse ``raw`` and handle it; the response, or ``None`` for a notification."""
    try:
        message = decode(raw)
    except (ValueError, RecursionError) as exc:
        return parse_error(str(exc) or type(exc).__name__)
    return handle_message(message, invoke)


def handle_message(message: Any, invoke: Invoke) -> dict[str, Any] | None:
    """Handle one parsed message; the response, or ``None`` for a notification."""
    if isinstance(message, list):
        return error_response(
            None,
            ErrorCode.INVALID_REQUEST,
            "JSON-RPC batches are not used by A2M; send one request per message",
        )
    if not isinstance(message, dict):
        return error_response(None, ErrorCode.INVALID_REQUEST, "a request must be a JSON object")
    has_id = "id" in message
    request_id = message.get("id")
    if has_id and not (request_id is None or isinstance(request_id, str) or _is_number(request_id)):
        return error_response(
            None, ErrorCode.INVALID_REQUEST, "id must be a string, a number or null"
        )
    if message.get("jsonrpc") != "2.0":
        return error_response(
            request_id, ErrorCode.INVALID_REQUEST, 'jsonrpc must be exactly "2.0"'
        )
    method = message.get("method")
    if not isinstance(method, str):
        if "result" in message or "error" in message:
            # A response sent to a server: clients never answer (§8), so nothing to reply.
            return None
        return error_response(request_id, ErrorCode.INVALID_REQUEST, "method must be a string")
    params = message.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        response = error_response(
            request_id, ErrorCode.INVALID_PARAMS, "params must be an object of named parameters"
        )
        return response if has_id else None
    try:
        result = invoke(method, params)
    except ProtocolError as exc:
        if not has_id:
            return None
        return error_response(request_id, exc.code, exc.message, exc.data)
    except Exception:
        log.exception("internal error in %s", method)
        if not has_id:
            return None
        return error_response(
            request_id,
            ErrorCode.INTERNAL_ERROR,
            f"internal error while handling {method}; the server log has the details",
        )
    if not has_id:
        return None
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _is_number(value: Any) -> bool:
    # 1e400 is valid JSON but parses to infinity, which no response could echo back.
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, int) and not isinstance(value, bool)
