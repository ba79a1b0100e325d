"""The part of the client that does no I/O, shared by :class:`A2MClient` and
:class:`AsyncA2MClient`: building params and requests from the method table, gating them
against the negotiated capabilities, parsing responses into result models, mapping errors,
and the retry arithmetic. The two clients add only their send loops.

**Gating rule.** Once describe has run, a method of an undeclared capability, and any
parameter (or record-input field) of an undeclared capability whose value asks for
something — anything but ``None`` or ``False`` — raises :class:`CapabilityNotSupported`
before anything is sent. ``prompt`` and ``embeddings`` follow the same rule: a server without
``prompt`` would ignore the parameter (§4.16), but a caller asking for text it will not get
has made a mistake better reported than discovered as a missing field."""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from a2m_types import (
    EVENT_NOTIFICATION,
    METHODS,
    PROTOCOL_VERSION,
    ConsolidateResult,
    DescribeResult,
    Event,
    EventsResult,
    FetchResult,
    ForgetResult,
    MethodSpec,
    Params,
    PromoteResult,
    RecallResult,
    RecordInput,
    ReinforceResult,
    RememberParams,
    RememberResult,
    SessionCloseResult,
    SessionListResult,
    SubscribeResult,
    SummarizeResult,
    TimelineResult,
    UnsubscribeResult,
    WireModel,
    field_capabilities,
    filters,
    is_compatible,
    new_id,
)
from a2m_types.json_values import (
    MAX_JSON_DEPTH,
    JSONValueError,
    check_json_value,
    is_utf8_text,
)
from a2m_types.observations import OBSERVATIONS_EXTENSION
from a2m_types.plain_json import is_plain_json

from ._types import NOT_GIVEN
from .errors import (
    A2MConnectError,
    A2MConnectionError,
    A2MError,
    A2MHTTPStatusError,
    A2MTimeoutError,
    A2MTransportError,
    CapabilityNotSupported,
    InvalidParams,
    ProtocolNotSupported,
    ResponseValidationError,
    error_for_code,
)
from .transports._base import PlainRequest

__all__ = [
    "CONSOLIDATE",
    "DESCRIBE",
    "EVENTS",
    "FETCH",
    "FORGET",
    "PROMOTE",
    "RECALL",
    "REINFORCE",
    "REMEMBER",
    "SESSION_CLOSE",
    "SESSION_LIST",
    "SUBSCRIBE",
    "SUMMARIZE",
    "TIMELINE",
    "UNSUBSCRIBE",
    "Call",
    "Method",
    "build_request",
    "check_version",
    "gate",
    "log",
    "log_retry",
    "parse_event",
    "parse_response",
    "prepare",
    "prepare_remember",
    "remember_values",
    "retry_delay",
    "should_retry",
]

log = logging.getLogger("a2m")

R = TypeVar("R", bound=WireModel)

INITIAL_RETRY_DELAY = 0.5
"""Seconds before the first retry; doubled for each one after."""
MAX_RETRY_DELAY = 8.0
"""The longest computed backoff between two attempts."""
MAX_RETRY_AFTER = 60.0
"""The longest ``Retry-After`` waited out before a retry; past it the error is raised,
carrying ``retry_after``, for the caller to decide."""
RETRY_STATUSES = frozenset({429, 502, 503, 504})
"""HTTP statuses that retrying can fix."""


@dataclass(frozen=True)
class Method(Generic[R]):
    """A method of the table, typed by its result model so the clients' verbs are typed."""

    spec: MethodSpec
    result: type[R]


def _method(name: str, result: type[R]) -> Method[R]:
    spec = METHODS[name]
    if spec.result is not result:  # the table is the source of truth; this only types it
        raise TypeError(f"{name} returns {spec.result.__name__}, not {result.__name__}")
    return Method(spec, result)


DESCRIBE = _method("memory/describe", DescribeResult)
REMEMBER = _method("memory/remember", RememberResult)
RECALL = _method("memory/recall", RecallResult)
TIMELINE = _method("memory/timeline", TimelineResult)
FORGET = _method("memory/forget", ForgetResult)
PROMOTE = _method("memory/promote", PromoteResult)
CONSOLIDATE = _method("memory/consolidate", ConsolidateResult)
REINFORCE = _method("memory/reinforce", ReinforceResult)
FETCH = _method("memory/fetch", FetchResult)
SESSION_LIST = _method("memory/session/list", SessionListResult)
SESSION_CLOSE = _method("memory/session/close", SessionCloseResult)
EVENTS = _method("memory/events", EventsResult)
SUBSCRIBE = _method("memory/events/subscribe", SubscribeResult)
UNSUBSCRIBE = _method("memory/events/unsubscribe", UnsubscribeResult)
SUMMARIZE = _method("memory/summarize", SummarizeResult)

# Computed once: which parameters (and record-input fields) belong to which capability.
_PARAM_CAPABILITIES = {
    name: tuple(field_capabilities(spec.params).items()) for name, spec in METHODS.items()
}
_RECORD_CAPABILITIES = tuple(field_capabilities(RecordInput).items())
_RECORD_FIELDS = frozenset(info.alias or name for name, info in RecordInput.model_fields.items())
_EVENT: TypeAdapter[Event] = TypeAdapter(Event)


@dataclass(frozen=True)
class Call(Generic[R]):
    """One prepared call: the method, its validated wire params, and whether a retry after
    the request may have reached the server is safe."""

    method: Method[R]
    params: dict[str, Any]
    idempotent: bool
    plain: bool = False
    """Whether ``params`` are proven exact JSON types without NaN or infinity by how they
    were built (see :func:`_remember_wire`), so the request skips the encoder's walk."""

    @property
    def name(self) -> str:
        """The wire method name."""
        return self.method.spec.name


# --- building -----------------------------------------------------------------------------


def _floats(value: Any, name: str, method: str) -> Any:
    # Vectors arrive as lists, tuples or numpy arrays; the wire wants plain JSON numbers.
    if value is None or isinstance(value, (str, bytes)):
        return value
    tolist = getattr(value, "tolist", None)
    items = tolist() if callable(tolist) else value
    if type(items) is list:
        # The usual vector: numbers only, which one C-speed sum proves (a str, bytes or
        # None makes it fail), converted at C speed; anything else takes the close look.
        try:
            sum(items)
            return list(map(float, items))
        except (TypeError, ValueError, OverflowError):
            pass
    numbers = list(items) if isinstance(items, Iterable) else None
    if numbers is None or not all(
        hasattr(type(item), "__float__") and not isinstance(item, (str, bytes)) for item in numbers
    ):
        raise InvalidParams(f"{name} must be a sequence of numbers", method=method)
    return [float(item) for item in numbers]


def _plain(name: str, value: Any, method: str) -> Any:
    """Loosen the containers callers naturally pass into the JSON shapes params expect."""
    if name == "embedding":
        return _floats(value, name, method)
    if (
        name in ("ids", "kinds")
        and isinstance(value, Iterable)
        and not isinstance(value, (str, bytes, Mapping))
    ):
        return list(value)
    if name == "where" and isinstance(value, Mapping):
        return {
            key: list(item) if isinstance(item, (tuple, set, frozenset)) else item
            for key, item in value.items()
        }
    if name == "prompt" and isinstance(value, Mapping):
        return dict(value)
    return value


def prepare(method: Method[R], values: Mapping[str, Any]) -> Call[R]:
    """Validate the caller's arguments (``NOT_GIVEN`` ones left out) against the method's
    params model; a value that cannot be valid raises :class:`InvalidParams` unsent."""
    spec = method.spec
    given = {
        key: _plain(key, value, spec.name)
        for key, value in values.items()
        if value is not NOT_GIVEN
    }
    try:
        validated = spec.params.model_validate(given)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'params'}: {error['msg']}"
            for error in exc.errors(include_url=False)
        )
        raise InvalidParams(
            f"invalid arguments ({problems})",
            method=spec.name,
            data=exc.errors(include_url=False, include_context=False, include_input=False),
        ) from None
    try:
        proven = _check_carried(validated, "")
    except JSONValueError as exc:
        raise InvalidParams(
            f"{exc} (nothing was sent)", method=spec.name, data={"field": exc.path}
        ) from None
    params, plain = _wire(validated, proven)
    where = params.get("where")
    if where is not None:
        try:
            filters.parse(where)
        except filters.FilterError as exc:
            raise InvalidParams(
                f"{exc} (nothing was sent)", method=spec.name, data={"field": exc.field}
            ) from None
    return Call(method, params, _idempotent(spec, params), plain)


def _plainly_carried(value: dict[str, Any] | list[Any]) -> bool:
    """Whether ``value`` is made only of exact JSON types that JSON carries exactly, no
    deeper than :data:`MAX_JSON_DEPTH`: the usual metadata, proven without building the
    path of each entry that :func:`check_json_value` builds to name a bad one. ``False``
    sends the value to that check, which names what is wrong (or lets through what is
    only unusual, such as an enum)."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    pop, push = pending.pop, pending.append
    while pending:
        item, depth = pop()
        if depth > MAX_JSON_DEPTH:
            return False
        if type(item) is dict:
            for key in item:
                if type(key) is not str or not (key.isascii() or is_utf8_text(key)):
                    return False
            entries: Iterable[Any] = item.values()
        else:
            entries = item
        for entry in entries:
            kind = type(entry)
            if kind is str:
                if not entry.isascii() and not is_utf8_text(entry):
                    return False
            elif kind is int or entry is None or kind is bool:
                continue
            elif kind is float:
                if not math.isfinite(entry):
                    return False
            elif kind is dict or kind is list:
                push((entry, depth + 1))
            else:
                return False
    return True


def _check_carried(model: BaseModel, prefix: str) -> bool:
    """Raise :class:`JSONValueError` naming the first value in ``model``'s set fields that
    JSON cannot carry exactly (see :func:`~a2m_types.json_values.check_json_value`), before
    ``to_wire`` would rewrite it (NaN to null, a set to a list, bytes to text). Vectors
    are skipped: validation already made them exact, finite floats. Returns whether every
    object and array was proven plain JSON on the way (:func:`_plainly_carried`), so
    building the wire params need not walk them again."""
    plain = True
    values = model.__dict__
    for name in model.model_fields_set:
        value = values[name]
        kind = type(value)
        # Most params are text, numbers or flags: settled here, without a call each.
        if (
            (kind is str and (value.isascii() or is_utf8_text(value)))
            or kind is int
            or kind is bool
            or value is None
        ):
            continue
        if name == "embedding":
            continue
        path = f"{prefix}{name}"
        if isinstance(value, BaseModel):
            plain = _check_carried(value, f"{path}.") and plain
        elif name == "records" and kind is list:
            for index, record in enumerate(value):
                plain = _check_carried(record, f"{path}[{index}].") and plain
        elif (kind is dict or kind is list) and _plainly_carried(value):
            continue
        else:
            check_json_value(value, path)
            plain = False
    return plain


def _wire(params: Params, proven: bool) -> tuple[dict[str, Any], bool]:
    """``params.to_wire()``, and whether it is proven plain, finite JSON; for
    ``memory/remember`` built from the validated values instead, when that is the same
    JSON: dumping re-walks every vector it has just validated, and a batch of vectors is
    most of what a client spends on a write. Only that path is proven plain."""
    if type(params) is RememberParams:
        wire = _remember_wire(params, proven)
        if wire is not None:
            return wire, True
    return params.to_wire(), False


def _fields(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    return tuple((name, info.alias or name) for name, info in model.model_fields.items())


_REMEMBER_FIELDS = _fields(RememberParams)
_RECORD_INPUT_FIELDS = _fields(RecordInput)


def _remember_wire(params: RememberParams, proven: bool = False) -> dict[str, Any] | None:
    """What ``to_wire`` gives for ``params``, read off the validated model: its strict
    fields hold JSON values already (strings, finite floats made exact, a list of them,
    each an exact ``str`` or ``float`` whatever subclass came in), so only metadata, which
    holds anything, is looked at; ``None`` when some metadata is not plain JSON, which
    ``to_wire`` converts. What it returns is plain, finite JSON throughout: the encoder
    need not walk it again (``Call.plain``)."""
    records: list[dict[str, Any]] = []
    for record in params.records:
        values = record.__dict__
        chosen = record.model_fields_set
        wire = {alias: values[name] for name, alias in _RECORD_INPUT_FIELDS if name in chosen}
        metadata = wire.get("metadata")
        if metadata is not None and not proven and not is_plain_json(metadata):
            return None
        records.append(wire)
    values, chosen = params.__dict__, params.model_fields_set
    out = {alias: values[name] for name, alias in _REMEMBER_FIELDS if name in chosen}
    out["records"] = records
    return out


def _idempotent(spec: MethodSpec, params: Mapping[str, Any]) -> bool:
    if spec.name == "memory/promote":
        return params.get("salience") is None
    if spec.name == "memory/summarize":
        return params.get("key") is not None
    return spec.idempotent


def prepare_remember(records: Any, owner: Any, session: Any) -> Call[RememberResult]:
    """The ``memory/remember`` call for ``records`` (see :func:`remember_values`).

    A vector that is a ``list`` goes to validation as it is, which makes its numbers exact
    floats and refuses a NaN or infinity, rather than being copied number by number first.
    Only if validation fails are the vectors converted as any other sequence is (``True``
    is the number 1 there) and validated again, so the outcome is the same."""
    values = remember_values(records, owner, session, convert=False)
    try:
        return prepare(REMEMBER, values)
    except InvalidParams:
        listed = False
        for index, record in enumerate(values["records"]):
            if type(record.get("embedding")) is list:
                listed = True
                record["embedding"] = _floats(
                    record["embedding"], f"records[{index}].embedding", REMEMBER.spec.name
                )
        if not listed:
            raise
    return prepare(REMEMBER, values)


def remember_values(
    records: Any, owner: Any, session: Any, *, convert: bool = True
) -> dict[str, Any]:
    """``memory/remember`` params from a string, a :class:`RecordInput`, a dict, or a list of
    them; every record without an id gets one here, once, so a retried write cannot
    duplicate it (§3.2). ``convert=False`` leaves a vector that is a ``list`` as it is
    (:func:`prepare_remember`)."""
    if isinstance(records, (str, RecordInput, Mapping)):
        items = [records]
    elif isinstance(records, Iterable):
        items = list(records)
    else:
        items = [records]  # refused below, naming the type
    wire: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            record: dict[str, Any] = {"content": item}
        elif isinstance(item, RecordInput):
            # Its values as they are: to_wire would already have rewritten what JSON
            # cannot carry (NaN to null), which the check in prepare refuses instead.
            record = {
                alias: item.__dict__[name]
                for name, alias in _RECORD_INPUT_FIELDS
                if name in item.model_fields_set and item.__dict__[name] is not None
            }
        elif isinstance(item, Mapping):
            record = dict(item)
            if not _RECORD_FIELDS.issuperset(record):
                unknown = sorted(str(key) for key in record if key not in _RECORD_FIELDS)
                raise InvalidParams(
                    f"records[{index}] has unknown fields {unknown}; custom data belongs in "
                    "metadata",
                    method="memory/remember",
                )
        else:
            raise InvalidParams(
                f"records[{index}] must be a str, a RecordInput or a dict, not "
                f"{type(item).__name__}",
                method="memory/remember",
            )
        if record.get("id") is None:
            record["id"] = new_id()
        embedding = record.get("embedding")
        if embedding is not None and (convert or type(embedding) is not list):
            record["embedding"] = _floats(
                record["embedding"], f"records[{index}].embedding", "memory/remember"
            )
        wire.append(record)
    return {"records": wire, "owner": owner, "session": session}


def build_request(call: Call[Any], request_id: int) -> dict[str, Any]:
    """The JSON-RPC request object for ``call``: a :class:`PlainRequest` when its params
    are proven plain, finite JSON, which the encoder then need not walk."""
    if call.plain:
        return PlainRequest(jsonrpc="2.0", id=request_id, method=call.name, params=call.params)
    return {"jsonrpc": "2.0", "id": request_id, "method": call.name, "params": call.params}


# --- gating -------------------------------------------------------------------------------


def _asks(value: Any) -> bool:
    return value is not None and value is not False


def _refuse(method: str, capability: str, what: str) -> CapabilityNotSupported:
    return CapabilityNotSupported(
        f"{what} needs the '{capability}' capability, which this server does not declare "
        "(nothing was sent)",
        method=method,
        data={"capability": capability},
    )


@dataclass(frozen=True)
class Extensions:
    """What a server declares beyond the capabilities: keyset paging on
    ``memory/timeline`` (describe ``timeline.cursor``) and ``where`` operators (describe
    ``where.operators``). Nothing, until a describe says otherwise."""

    cursor: bool = False
    operators: frozenset[str] = frozenset()
    ranks: frozenset[str] = frozenset({"blend"})
    """The orders ``memory/recall`` takes as ``rank`` (describe ``recall.rank``)."""
    observations: bool = False
    """The ``observations`` extension (describe ``observations``, docs/observations.md)."""

    @classmethod
    def of(cls, result: DescribeResult) -> Extensions:
        """The extensions ``result`` declares."""
        cursor = result.timeline is not None and result.timeline.cursor
        operators = frozenset(result.where.operators) if result.where is not None else frozenset()
        ranks = frozenset(result.recall.rank) if result.recall is not None else frozenset()
        known = frozenset(filters.OPERATORS) | frozenset(filters.LOGICAL_OPERATORS)
        return cls(
            bool(cursor), operators & known, ranks | {"blend"}, result.observations is not None
        )


_CARRIED_BY = {
    "observations": (
        "the JSON-RPC bindings (in-process, stdio, HTTP) and REST's memory:{method} routes "
        "carry its methods; a server offering only the REST draft's entry routes cannot"
    )
}
"""Where each extension's methods can travel, said when one is refused."""


def _refuse_extension(method: str, extension: str, what: str) -> CapabilityNotSupported:
    carried = _CARRIED_BY.get(extension)
    return CapabilityNotSupported(
        f"{what} needs a server declaring {extension} in describe, which this one does not "
        "(nothing was sent)" + (f"; {carried}" if carried else ""),
        method=method,
        data={"extension": extension},
    )


def gate(
    call: Call[Any], capabilities: frozenset[str], extensions: Extensions | None = None
) -> None:
    """Raise :class:`CapabilityNotSupported` if ``call`` uses anything the server did not
    declare (see the module docstring for the rule): a capability, or an extension — a
    server that does not know ``cursor`` would ignore it (§2) and answer a different
    question, and one without operators would read ``{"$gt": 3}`` as an object to equal."""
    spec = call.method.spec
    declared = extensions or Extensions()
    if spec.capability == OBSERVATIONS_EXTENSION:
        if not declared.observations:
            raise _refuse_extension(spec.name, "observations", spec.name)
    elif spec.capability not in capabilities:
        raise _refuse(spec.name, spec.capability, spec.name)
    params = call.params
    for key, capability in _PARAM_CAPABILITIES.get(spec.name, ()):
        if capability not in capabilities and _asks(params.get(key)):
            raise _refuse(spec.name, capability, f"the {key!r} parameter")
    if spec.name == "memory/remember":
        undeclared = [(k, c) for k, c in _RECORD_CAPABILITIES if c not in capabilities]
        for index, record in enumerate(params["records"] if undeclared else ()):
            for key, capability in undeclared:
                if _asks(record.get(key)):
                    raise _refuse(spec.name, capability, f"records[{index}].{key}")
    if spec.name == "memory/timeline" and params.get("cursor") is not None and not declared.cursor:
        raise _refuse_extension(spec.name, "timeline.cursor", "the 'cursor' parameter")
    rank = params.get("rank") if spec.name == "memory/recall" else None
    if rank is not None and rank not in declared.ranks:
        raise _refuse_extension(spec.name, f"recall.rank {rank!r}", "the 'rank' parameter")
    where = params.get("where")
    if isinstance(where, Mapping) and filters.uses_extension(where):
        used = filters.operators_used(where)
        if not declared.operators or not used <= declared.operators:
            raise _refuse_extension(spec.name, "where.operators", "a where with operators")


def check_version(result: DescribeResult) -> DescribeResult:
    """Refuse a server whose protocol version is incompatible with ours (§9)."""
    if not is_compatible(PROTOCOL_VERSION, result.protocol):
        raise ProtocolNotSupported(
            f"the server speaks {result.protocol!r}; this client speaks {PROTOCOL_VERSION!r}, "
            "and 0.x versions interoperate only with an exact minor match",
            method="memory/describe",
            data={"server": result.protocol, "client": PROTOCOL_VERSION},
        )
    return result


# --- parsing ------------------------------------------------------------------------------


def parse_response(call: Call[R], request_id: int, response: Mapping[str, Any]) -> R:
    """The result model of a JSON-RPC response, or the error it carries raised as its class."""
    name = call.name
    error = response.get("error")
    if error is not None:
        answered = response.get("id")
        if answered is not None and answered != request_id:
            # Another request's error (``null`` is the server not knowing which: ours).
            raise ResponseValidationError(
                f"the error response answers id {answered!r}, not this request's "
                f"{request_id}: {error!r}",
                method=name,
                data=dict(response),
            )
        code = error.get("code") if isinstance(error, dict) else None
        if not isinstance(code, int) or isinstance(code, bool):
            raise ResponseValidationError(
                f"malformed JSON-RPC error object: {error!r}", method=name, data=error
            )
        message = error.get("message")
        raise error_for_code(code)(
            message if isinstance(message, str) and message else "(the server gave no message)",
            method=name,
            code=code,
            data=error.get("data"),
        )
    if response.get("jsonrpc") != "2.0" or "result" not in response:
        raise ResponseValidationError(
            "not a JSON-RPC 2.0 response object (no result and no error)",
            method=name,
            data=dict(response),
        )
    if response.get("id") != request_id:
        raise ResponseValidationError(
            f"the response answers id {response.get('id')!r}, not this request's {request_id}",
            method=name,
        )
    try:
        return call.method.result.model_validate(response["result"])
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "result"
        raise ResponseValidationError(
            f"the result does not match the {name} schema ({exc.error_count()} problem(s); "
            f"first at {where}: {first['msg']})",
            method=name,
            data=exc.errors(include_url=False, include_context=False),
        ) from None


def parse_event(message: Mapping[str, Any]) -> Event | None:
    """The typed event of a ``memory/event`` notification; ``None`` (logged) otherwise."""
    if message.get("method") != EVENT_NOTIFICATION:
        log.debug("ignoring notification %r", message.get("method"))
        return None
    try:
        return _EVENT.validate_python(message.get("params"))
    except ValidationError as exc:
        log.warning("dropping a malformed memory/event notification: %s", exc)
        return None


# --- retries ------------------------------------------------------------------------------


def should_retry(call: Call[Any], error: A2MError, attempt: int, max_retries: int) -> bool:
    """Whether to send ``call`` again after ``error`` on the given zero-based ``attempt``.

    Connection errors, timeouts, 429, 502, 503 and 504 are retried. A call that is not
    idempotent is retried only when the request provably never left (a connect error);
    protocol errors, ``READ_ONLY`` included, never are. A call whose result counts what it
    did (``forget``, ``promote``) is idempotent in effect, but a retry after the server
    may have acted would answer 0: it is retried only where the server provably did not
    act (a connect error, 429, 503). A ``Retry-After`` longer than
    :data:`MAX_RETRY_AFTER` is not waited out here: the error, carrying it, is raised."""
    if attempt >= max_retries or not isinstance(error, A2MTransportError) or not error.retryable:
        return False
    if isinstance(error, A2MConnectError):
        return True
    if not call.idempotent:
        return False
    if isinstance(error, A2MHTTPStatusError):
        retry_after = error.retry_after
        if retry_after is not None and retry_after > MAX_RETRY_AFTER:
            return False
        if call.name in _COUNTING:
            return error.status in (429, 503)
        return error.status in RETRY_STATUSES
    if call.name in _COUNTING:
        return False
    return isinstance(error, (A2MConnectionError, A2MTimeoutError))


_COUNTING = frozenset({"memory/forget", "memory/promote", "memory/observations/delete"})
"""Methods whose result counts the records this very call changed: retried only where
the server provably did not act, since after that a retry would answer 0."""


def retry_delay(attempt: int, error: A2MError, *, jitter: float | None = None) -> float:
    """Seconds to wait before retry ``attempt + 1``: the server's ``Retry-After`` when it
    gave a sane one, else exponential backoff, capped, less up to 25% jitter."""
    retry_after = getattr(error, "retry_after", None)
    if isinstance(retry_after, (int, float)) and 0 <= retry_after <= MAX_RETRY_AFTER:
        return float(retry_after)
    delay = min(INITIAL_RETRY_DELAY * 2.0**attempt, MAX_RETRY_DELAY)
    return delay * (1 - 0.25 * (random.random() if jitter is None else jitter))


def log_retry(
    call: Call[Any], error: A2MError, attempt: int, max_retries: int, delay: float
) -> None:
    """One WARNING per retry, naming the method, the failure and the wait."""
    log.warning(
        "retrying %s in %.2fs (retry %d of %d) after %s: %s",
        call.name,
        delay,
        attempt + 1,
        max_retries,
        type(error).__name__,
        error.message,
    )
