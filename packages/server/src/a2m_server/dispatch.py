"""JSON-RPC 2.0 framing and nothing else: parse a message, refuse batches, tell requests from
notifications, and turn whatever the handler raises into an error object (§7, §8).

It knows no method and no storage; ``invoke`` does the work."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

from a2m_types import ErrorCode
from a2m_types.json_values import MAX_JSON_DEPTH, JSONValueError, check_json_value

from . import _json
from .errors import ProtocolError

__all__ = ["Invoke", "decode", "encode", "error_response", "handle_message"]

log = logging.getLogger("a2m_server")

Invoke = Callable[[str, dict[str, Any]], dict[str, Any]]
"""Runs one method with its params and returns the result object, or raises ProtocolError."""


def decode(raw: str | bytes) -> Any:
    """Parse one JSON text strictly (no NaN or Infinity); raises ``ValueError``."""
    return _json.loads(raw)


def encode(message: Any) -> str:
    """Serialise one message as a single line of JSON (orjson where it writes the same
    value); raises ``ValueError`` for a value JSON cannot carry.

    A stored record no reader can serialise (metadata nested past what an encoder
    follows, written by a release that did not bound it) does not fail the answer: the
    records, entries or events that cannot be written are left out of their lists,
    each logged with its id, and the rest is answered."""
    try:
        return _json.dumps(message)
    except (ValueError, TypeError, RecursionError) as exc:
        failure = exc
    dropped: list[str] = []
    try:
        pruned = _prune(message, dropped, 0)
    except (ValueError, TypeError, RecursionError):
        dropped = []
    if not dropped:
        raise failure
    log.error(
        "left %d stored item(s) out of an answer, as they cannot be written as JSON "
        "(metadata nested too deep, written by an earlier release?): %s",
        len(dropped),
        ", ".join(dropped),
    )
    try:
        return _json.dumps(pruned)
    except (ValueError, TypeError, RecursionError) as exc:
        raise ValueError(f"the answer holds a value JSON cannot carry: {exc}") from None


# Lists of stored items sit this far down an answer at most: {"result": {"records": [..]}},
# {"entries": [..]}, [{"entry": ..}] and an event's {"record": ..}.
_PRUNE_DEPTH = 3


def _prune(value: Any, dropped: list[str], depth: int) -> Any:
    """``value`` without the list items that cannot be written as JSON (their ids added
    to ``dropped``), looking through the first few levels of objects."""
    if depth > _PRUNE_DEPTH:
        return value
    if isinstance(value, dict):
        return {key: _prune(item, dropped, depth + 1) for key, item in value.items()}
    if not isinstance(value, list):
        return value
    kept = []
    for item in value:
        try:
            _json.dumps(item)
        except (ValueError, TypeError, RecursionError):
            if not _fails_by_metadata(item):
                raise  # a value the server made (a NaN score): a fault, not a stored record
            dropped.append(_item_id(item))
            continue
        kept.append(item)
    return kept


def _fails_by_metadata(item: Any) -> bool:
    """Whether ``item`` (a record, or an event holding one) serialises once the record's
    metadata is taken out: only stored metadata leaves an item out of an answer."""
    if not isinstance(item, dict):
        return False
    if "metadata" in item:
        bare = {key: entry for key, entry in item.items() if key != "metadata"}
    elif isinstance(item.get("record"), dict) and "metadata" in item["record"]:
        record = {key: entry for key, entry in item["record"].items() if key != "metadata"}
        bare = {**item, "record": record}
    else:
        return False
    try:
        _json.dumps(bare)
    except (ValueError, TypeError, RecursionError):
        return False
    return True


def _item_id(item: Any) -> str:
    """The id of a record, an entry, a scored entry or an event, for the log."""
    if isinstance(item, dict):
        for key in ("entry", "record"):
            inner = item.get(key)
            if isinstance(inner, dict) and isinstance(inner.get("id"), str):
                return str(inner["id"])
        if isinstance(item.get("id"), str):
            return str(item["id"])
    return "(an item without an id)"


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
    except RecursionError:
        # Params nested deeper than a check below follows are bad input, not a fault.
        refusal = _too_deep(params)
        if refusal is None:
            log.exception("internal error in %s", method)
            refusal = ProtocolError(
                ErrorCode.INTERNAL_ERROR,
                f"internal error while handling {method}; the server log has the details",
            )
        if not has_id:
            return None
        return error_response(request_id, refusal.code, refusal.message, refusal.data)
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


def _too_deep(params: dict[str, Any]) -> ProtocolError | None:
    """``INVALID_PARAMS`` naming where ``params`` nest too deep, if they do."""
    try:
        # params -> records -> a record -> its metadata: three levels above a value.
        check_json_value(params, "params", max_depth=MAX_JSON_DEPTH + 3)
    except JSONValueError as exc:
        return ProtocolError.invalid_params(f"{exc.path[:160]} {exc.reason}", field=exc.path)
    return None


def _is_number(value: Any) -> bool:
    # 1e400 is valid JSON but parses to infinity, which no response could echo back.
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, int) and not isinstance(value, bool)
