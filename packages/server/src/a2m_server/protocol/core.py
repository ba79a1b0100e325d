"""The meaning of the protocol: method lookup, capability checks, params validation, and
the rules every method shares (owners, tiers, limits, read-only, events).

Each method's own logic lives in a sibling module; this one wires them together."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pydantic import ValidationError

from a2m_server.config import ServerConfig, TierConfig
from a2m_server.embedders.service import EmbeddingService
from a2m_server.errors import ProtocolError
from a2m_server.store import Scope, Store, StoreError, StoreWriter
from a2m_types import (
    METHODS,
    ErrorCode,
    ForgetParams,
    RecordInput,
    SummarizeParams,
    field_capabilities,
)
from a2m_types.observations import OBSERVATION_METHODS, OBSERVATIONS_EXTENSION

from .context import CallContext
from .hub import EventHub, deletion_event

__all__ = ["Protocol", "now_ms"]

Handler = Callable[["Protocol", CallContext, Any], dict[str, Any]]

# Params a server without the capability ignores instead of refusing: rendering text
# (§4.16 says so explicitly) and asking for vectors both leave the records unchanged.
_IGNORED_WHEN_UNDECLARED = frozenset({"prompt", "embeddings"})

_CAPABILITY_FIELDS = {name: field_capabilities(spec.params) for name, spec in METHODS.items()}

# Record fields a server without their capability ignores (§4.2); ``tier`` alone is refused,
# by the write itself, since dropping a caller's placement would be a correctness bug.
_IGNORED_RECORD_FIELDS = {
    name: capability
    for name, capability in field_capabilities(RecordInput).items()
    if name != "tier"
}


def now_ms() -> int:
    """The current time in epoch milliseconds, the precision of every timestamp (§3.3)."""
    return time.time_ns() // 1_000_000


_UNION_TAGS = frozenset({"bool", "str", "int", "float", "list", "dict", "none"})


def _is_union_tag(part: object) -> bool:
    """Whether a location part names a union's branch (``bool``, ``PromptOptions``,
    ``list[str]``) rather than a field: every field here is snake_case."""
    text = str(part)
    return text in _UNION_TAGS or text[:1].isupper() or "[" in text


def _validation_message(method: str, exc: ValidationError) -> ProtocolError:
    # A union reports one error per branch; one per field is what a caller needs: the
    # deepest, which is the branch the value was meant for ({"style": "haiku"} fails in
    # the options object's style, not as "a valid boolean"), without the branch's name.
    chosen: dict[str, tuple[int, str, str]] = {}
    for error in exc.errors(include_url=False):
        loc = error["loc"]
        top = str(loc[0]) if loc else "params"
        field = ".".join(str(p) for p in loc if not _is_union_tag(p)) or "params"
        if top not in chosen or len(loc) > chosen[top][0]:
            chosen[top] = (len(loc), field, str(error["msg"]))
    errors = [{"field": field, "message": message} for _, field, message in chosen.values()]
    summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors[:5])
    return ProtocolError(
        ErrorCode.INVALID_PARAMS, f"invalid params for {method}: {summary}", {"errors": errors}
    )


def _unencodable_path(value: Any, path: str = "") -> str | None:
    """Where in ``value`` a string that UTF-8 cannot encode sits, as a dotted path."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "params"
        return None
    items: Any = (
        value.items()
        if isinstance(value, dict)
        else (enumerate(value) if isinstance(value, list) else ())
    )
    for key, item in items:
        here = f"{path}.{key}" if path else str(key)
        found = _unencodable_path(key, here) if isinstance(key, str) else None
        found = found or _unencodable_path(item, here)
        if found:
            return found
    return None


_UNBOUNDED = 2**62
"""A read's limit when the server declares none and the caller asks for all."""


class Protocol:
    """Runs ``memory/*`` methods against a store, under one configuration."""

    def __init__(self, config: ServerConfig, store: Store, handlers: Mapping[str, Handler]) -> None:
        """``handlers`` is the method table (``protocol.handlers.HANDLERS``), passed in so
        this module never imports the methods that build on it."""
        self.config = config
        self.store = store
        self.events = EventHub(store)
        self._handlers: Mapping[str, Handler] = handlers
        self.shared_tiers = tuple(tier.name for tier in config.tiers if tier.shared)
        self.extensions = frozenset(
            {OBSERVATIONS_EXTENSION} if config.observations.enabled else set()
        )
        """Extension capabilities offered (declared by their own describe objects)."""
        self.embedding: EmbeddingService | None = None
        """The server-side embedder, when one is configured (set by the server)."""

    @property
    def embedding_model(self) -> str | None:
        """The model the store's vectors speak: the embedder's, else the configured name."""
        if self.embedding is not None:
            return self.embedding.model
        return self.config.embedding_model

    # --- entry point -------------------------------------------------------------------

    def invoke(self, ctx: CallContext, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Run ``method``; raises :class:`ProtocolError` with the spec's code on failure."""
        spec = METHODS.get(method) or OBSERVATION_METHODS.get(method)
        handler = self._handlers.get(method)
        if spec is None or handler is None:
            raise ProtocolError(
                ErrorCode.METHOD_NOT_FOUND,
                f"{method!r} is not an A2M method",
                {"method": method},
            )
        if spec.capability not in ctx.capabilities and spec.capability not in self.extensions:
            # §2: an undeclared capability is -32003, never -32601.
            raise ProtocolError(
                ErrorCode.CAPABILITY_NOT_SUPPORTED,
                f"{method} needs the '{spec.capability}' capability, which this server "
                "does not declare",
                {"capability": spec.capability, "method": method},
            )
        params = self._undeclared_left_out(ctx, method, params)
        try:
            parsed = spec.params.model_validate(params)
        except ValidationError as exc:
            raise _validation_message(method, exc) from None
        try:
            return handler(self, ctx, parsed)
        except StoreError as exc:
            # A lost connection or a cancelled statement: the transaction rolled back.
            raise ProtocolError(
                ErrorCode.INTERNAL_ERROR,
                f"{method} failed in the store and changed nothing: {exc}",
                {"retryable": True},
            ) from None
        except UnicodeEncodeError:
            # JSON can spell a lone surrogate ("\\ud800"); no UTF-8 store can keep one.
            raise ProtocolError.invalid_params(
                f"invalid params for {method}: {_unencodable_path(params) or 'a string'} "
                "is not valid Unicode (it holds a lone surrogate)"
            ) from None

    def _undeclared_left_out(
        self, ctx: CallContext, method: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        """``params`` without what a capability this server does not declare would carry,
        decided before any value is read, so what is ignored is never also refused for
        its shape: a parameter is refused (``CAPABILITY_NOT_SUPPORTED``) unless it is one
        a server ignores (``prompt``, ``embeddings``), a record field ignored (§4.2)."""
        undeclared = [
            name
            for name, capability in _CAPABILITY_FIELDS.get(method, {}).items()
            if capability not in ctx.capabilities and params.get(name) is not None
        ]
        for name in undeclared:
            if name not in _IGNORED_WHEN_UNDECLARED:
                capability = _CAPABILITY_FIELDS[method][name]
                raise ProtocolError.capability(capability, f"the '{name}' parameter of {method}")
        if undeclared:
            params = {name: value for name, value in params.items() if name not in undeclared}
        records = params.get("records") if method == "memory/remember" else None
        ignored = [
            name
            for name, capability in _IGNORED_RECORD_FIELDS.items()
            if capability not in ctx.capabilities
        ]
        if ignored and isinstance(records, list):
            params = {
                **params,
                "records": [
                    {k: v for k, v in record.items() if k not in ignored}
                    if isinstance(record, dict)
                    else record
                    for record in records
                ],
            }
        return params

    def close(self) -> None:
        """Drop every subscription."""
        self.events.close()

    def disconnect(self, ctx: CallContext) -> None:
        """Forget what ``ctx``'s connection subscribed to."""
        self.events.unsubscribe(ctx)

    # --- rules shared by the methods ---------------------------------------------------

    def ensure_writable(self, method: str) -> None:
        """§2.1: a read-only store refuses every write with READ_ONLY, consistently."""
        if self.config.read_only:
            raise ProtocolError.read_only(method)

    def require_selector(
        self, method: str, params: ForgetParams | SummarizeParams, why: str
    ) -> None:
        """§4.5, §4.15: a call that would otherwise take the whole store needs at least one
        of ids, query, tier, where or key_prefix. An empty ``where`` (or ``query``) selects
        nothing in particular, and is what a templated request sends for a blank filter:
        it counts as absent, so it can never take the whole store on its own."""
        if (
            params.ids is None
            and not params.query
            and params.tier is None
            and not params.where
            and params.key_prefix is None
        ):
            raise ProtocolError.invalid_params(
                f"{method} needs at least one of ids, query, tier, a non-empty where or "
                f"key_prefix; {why}"
            )

    def acting_owner(self, ctx: CallContext, requested: str | None) -> str | None:
        """The owner a call acts as (§6).

        With an authenticated principal the owner *is* the principal, and naming another
        is SCOPE_DENIED; on a local transport the caller's word is taken; without the
        ``scopes`` capability there are no owners at all."""
        if "scopes" not in ctx.capabilities:
            return None
        if ctx.principal is not None:
            if requested is not None and requested != ctx.principal:
                raise ProtocolError(
                    ErrorCode.SCOPE_DENIED,
                    f"authenticated as {ctx.principal!r}; may not act on owner {requested!r}",
                    {"principal": ctx.principal, "owner": requested},
                )
            return ctx.principal
        return requested

    def read_scope(self, owner: str | None) -> Scope | None:
        """What ``owner`` may read: its own records, unowned ones, and shared tiers."""
        if owner is None:
            return None
        return Scope(owner, include_shared=True, shared_tiers=self.shared_tiers)

    def write_scope(self, owner: str | None) -> Scope | None:
        """What ``owner`` may change: only records it owns."""
        return None if owner is None else Scope(owner, include_shared=False)

    def tier(self, ctx: CallContext, name: str, what: str = "tier") -> TierConfig:
        """The configured tier ``name``; UNKNOWN_TIER when there is none."""
        if "tiers" not in ctx.capabilities:
            raise ProtocolError.capability("tiers", f"the '{what}' parameter")
        tier = self.config.tier(name)
        if tier is None:
            raise ProtocolError.unknown_tier(name, [t.name for t in self.config.tiers])
        return tier

    def result_limit(self, requested: int | None, default: int | None) -> int:
        """The number of records a read may return (§4.3 and the declared limits)."""
        maximum = self.config.limits.max_recall_limit
        if not self.config.declare_recall_limit:
            # §4.3: with no declared maximum, 0 is "no limit", and any limit is honoured.
            if requested is None:
                return _UNBOUNDED if default is None else default
            return _UNBOUNDED if requested == 0 else requested
        if requested is None:
            return maximum if default is None else min(default, maximum)
        if requested == 0:
            # §4.3: 0 means "no limit" only without a declared maximum; we declare one.
            return maximum
        if requested > maximum:
            raise ProtocolError.quota("max_recall_limit", maximum, requested)
        return requested

    @contextmanager
    def transaction(self) -> Iterator[StoreWriter]:
        """One atomic write: expired records are purged first, and subscribers hear
        about the events it appended once it has committed."""
        with self.store.writing() as writer:
            now = now_ms()
            expired = writer.expire(now)
            if expired:
                # Filed by owner only, as before: an expiry names no tier.
                payload, owner, _ = deletion_event(expired, None)
                writer.append_event("expired", now, payload, owner, None)
            yield writer
        self.events.publish()
