"""Reading: ``memory/recall`` (§4.3, ranked), ``memory/timeline`` (§4.4, creation order),
``memory/fetch`` (§4.9), ``memory/describe`` (§4.1), and the ``prompt`` option (§4.16)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from a2m_server import ranking
from a2m_server.errors import ProtocolError
from a2m_server.prompt import render_prompt
from a2m_server.store import RecordFilter, StoredRecord, StoreReader
from a2m_server.text import query_terms
from a2m_types import (
    CAPABILITIES,
    METHODS,
    PROTOCOL_VERSION,
    DescribeParams,
    ErrorCode,
    FetchParams,
    PromptOption,
    PromptOptions,
    RecallParams,
    TimelineParams,
    is_compatible,
)
from a2m_types.json_values import MAX_JSON_DEPTH
from a2m_types.observations import CLASSIFICATIONS, OBSERVATION_METHODS

from .context import CallContext
from .core import Protocol, now_ms
from .filtering import checked_where, where_info
from .paging import decode_page_cursor, encode_page_cursor, listing_digest
from .wire import record_to_wire

__all__ = [
    "comparable",
    "describe",
    "fetch",
    "rank_candidates",
    "ranked_candidates",
    "recall",
    "server_query_vector",
    "timeline",
]

_ACCESS_FIELDS = frozenset({"accessed_at", "access_count"})
_CANDIDATE_POOL = 50
_CANDIDATE_FACTOR = 4
# Ranking by similarity re-scores the index's best exactly; the margin covers rows the
# float32 index orders differently from the float64 vectors by a rounding.
_RESCORE_MARGIN = 8


def _prompt_options(option: PromptOption | None) -> PromptOptions | None:
    """The rendering asked for, or None when none was (false, method none, absent)."""
    if option is None or option is False:
        return None
    options = PromptOptions() if option is True else option
    if options.method == "none":
        return None
    if options.method == "model":
        # §4.16: never silently substitute another method for the one asked for.
        raise ProtocolError.invalid_params(
            "prompt method 'model' is not offered by this server (describe lists "
            "prompt.methods); use 'template'",
            offered=["template", "none"],
        )
    if options.model is not None:
        # §4.16: nor a model; this server offers none (describe says prompt.model: null).
        raise ProtocolError.invalid_params(
            f"prompt model {options.model!r} is not offered by this server (describe "
            "lists none: the template method uses no model); leave model out",
            offered=[],
        )
    return options


def _with_prompt(
    result: dict[str, Any], options: PromptOptions | None, *, chronological: bool
) -> dict[str, Any]:
    if options is not None:
        text, ids = render_prompt(result["records"], options, chronological=chronological)
        result["prompt"] = text
        result["prompt_ids"] = ids
    return result


def comparable(reader: StoreReader, vector: list[float], model: str | None = None) -> bool:
    """Whether ``vector`` can be compared here; EMBEDDING_MISMATCH for a wrong width,
    naming ``model`` (the model the store's vectors speak) when it is known."""
    width = reader.dimensions()
    if width is None:
        return False
    if len(vector) != width:
        if model is None and not reader.holds_vectors():
            return False  # nothing to compare with, and the next vector sets the width
        speaks = f" (model {model!r})" if model else ""
        data: dict[str, Any] = {"expected": width, "got": len(vector)}
        if model:
            data["model"] = model
        raise ProtocolError(
            ErrorCode.EMBEDDING_MISMATCH,
            f"query embedding has {len(vector)} dimensions; this store's vectors have "
            f"{width}{speaks}",
            data,
        )
    return True


def server_query_vector(proto: Protocol, query: str | None) -> list[float] | None:
    """The server-side embedder's vector for a text query that came without one; None
    with no embedder, no text, or an embedder failing (the recall then ranks lexically)."""
    if proto.embedding is None or not query or "embeddings" not in proto.config.capabilities:
        return None
    return proto.embedding.embed_query(query)


def _read_filter(
    proto: Protocol,
    ctx: CallContext,
    *,
    tier: str | None,
    where: Mapping[str, Any] | None,
    key_prefix: str | None,
    owner: str | None,
) -> RecordFilter:
    if tier is not None:
        proto.tier(ctx, tier)
    where = checked_where(proto.config, where)
    if where and not _ACCESS_FIELDS.isdisjoint(where):
        proto.store.flush_access()  # buffered recalls must be visible to this filter
    return RecordFilter(
        tier=tier,
        where=where,
        key_prefix=key_prefix,
        scope=proto.read_scope(proto.acting_owner(ctx, owner)),
    )


def recall(proto: Protocol, ctx: CallContext, params: RecallParams) -> dict[str, Any]:
    """§4.3: the records most worth knowing, best first; newest first without a query."""
    options = _prompt_options(params.prompt)
    limit = proto.result_limit(params.limit, proto.config.default_recall_limit)
    selector = _read_filter(
        proto,
        ctx,
        tier=params.tier,
        where=params.where,
        key_prefix=params.key_prefix,
        owner=params.owner,
    )
    terms = query_terms(params.query) if params.query else []
    want_vectors = bool(params.embeddings) and "embeddings" in ctx.capabilities
    # By similarity the vector alone orders: a query takes no part, and with no vector
    # nothing is near anything.
    by_similarity = params.rank == "similarity"
    query_vector = params.embedding
    server_vector = server_query_vector(proto, params.query) if query_vector is None else None
    now = now_ms()
    with proto.store.reading() as reader:
        if server_vector is not None and reader.dimensions() == len(server_vector):
            query_vector = server_vector
        use_vector = query_vector is not None and comparable(
            reader, query_vector, proto.embedding_model
        )
        if by_similarity:
            vector = query_vector if use_vector else None
            ranked = _by_similarity(proto, reader, selector, vector, limit, want_vectors)
        elif not terms and not use_vector:
            records = reader.select(selector, order="created_desc", limit=limit)
            scores = ranking.by_recency([r.created_at for r in records], now)
            ranked = list(zip(records, scores, strict=False))
        else:
            ranked = rank_candidates(
                proto, reader, selector, terms, query_vector if use_vector else None, limit, now
            )
        if params.min_score is not None:
            ranked = [(r, s) for r, s in ranked if s >= params.min_score]
        ranked = ranked[:limit]
        if want_vectors and ranked and not by_similarity:  # by similarity they are read
            with_vectors = {r.id: r for r in reader.get([r.id for r, _ in ranked], embeddings=True)}
            ranked = [(with_vectors.get(r.id, r), s) for r, s in ranked]
    ranked_records = [r for r, _ in ranked]
    if ranked_records and not proto.config.read_only:
        # Recall is what counts as an access (§3.1 salience; promote_after counts it).
        proto.store.record_access([r.id for r in ranked_records], now)
        for record in ranked_records:
            record.access_count += 1
            record.accessed_at = now
    result = {
        "records": [
            record_to_wire(r, ctx.capabilities, embeddings=want_vectors, score=s) for r, s in ranked
        ]
    }
    return _with_prompt(result, options, chronological=False)


def _by_similarity(
    proto: Protocol,
    reader: StoreReader,
    selector: RecordFilter,
    vector: list[float] | None,
    limit: int,
    with_vectors: bool,
) -> list[tuple[StoredRecord, float]]:
    """The ``limit`` records nearest ``vector`` by the store's metric, scored exactly from
    their verbatim vectors (closest first; ties newer first), by the store, which may
    score the vectors without decoding them; the winners' vectors are read when
    ``with_vectors``."""
    if vector is None:
        return []  # no query vector, or none stored yet
    ids = [i for i, _ in reader.nearest(selector, vector, limit + _RESCORE_MARGIN)]
    ranked = sorted(
        reader.rescore(ids, vector, proto.config.metric),
        key=lambda p: (-p[1], -p[0].created_at, -p[0].rowid),
    )[:limit]
    if with_vectors and any(r.embedding is None for r, _ in ranked):
        whole = {r.id: r for r in reader.get([r.id for r, _ in ranked], embeddings=True)}
        ranked = [(whole.get(r.id, r), s) for r, s in ranked]
    return ranked


def rank_candidates(
    proto: Protocol,
    reader: StoreReader,
    selector: RecordFilter,
    terms: list[str],
    vector: list[float] | None,
    limit: int,
    now: int,
) -> list[tuple[StoredRecord, float]]:
    """The §5 blend of the records the query's words and vector find, best first."""
    ranked = ranked_candidates(proto, reader, selector, terms, vector, limit, now)
    return [(record, score) for record, score, _ in ranked]


def ranked_candidates(
    proto: Protocol,
    reader: StoreReader,
    selector: RecordFilter,
    terms: list[str],
    vector: list[float] | None,
    limit: int,
    now: int,
) -> list[tuple[StoredRecord, float, bool]]:
    """:func:`rank_candidates`, each record also saying whether it was found only through
    a typo's correction (those come last), for a caller that ranks them again."""
    pool = max(limit * _CANDIDATE_FACTOR, _CANDIDATE_POOL)
    lexical = {hit.id: hit for hit in reader.lexical(selector, terms, pool)} if terms else {}
    similar = dict(reader.nearest(selector, vector, pool)) if vector is not None else {}
    records = reader.get(list(lexical.keys() | similar.keys()))
    candidates = {}
    for r in records:
        hit = lexical.get(r.id)
        candidates[r.id] = ranking.Candidate(
            id=r.id,
            created_at=r.created_at,
            salience=r.salience,
            tier=r.tier,
            lexical=None if hit is None else hit.relevance,
            similarity=similar.get(r.id),
            # found by neither a word as given nor its vector: a typo's guess
            guessed=hit is not None and hit.guessed and r.id not in similar,
        )
    half_lives: dict[str | None, float | None] = {t.name: t.half_life for t in proto.config.tiers}
    scored = ranking.blend(
        list(candidates.values()),
        now=now,
        half_lives=half_lives,
        use_lexical=bool(terms),
        use_vector=vector is not None,
    )
    by_id = {r.id: r for r in records}
    return [(by_id[c.id], s, c.guessed) for c, s in scored]


def timeline(proto: Protocol, ctx: CallContext, params: TimelineParams) -> dict[str, Any]:
    """§4.4: oldest first; with ``limit``, the most recent ``limit`` records."""
    options = _prompt_options(params.prompt)
    limit = proto.result_limit(params.limit, None)
    selector = _read_filter(
        proto,
        ctx,
        tier=params.tier,
        where=params.where,
        key_prefix=params.key_prefix,
        owner=params.owner,
    )
    want_vectors = bool(params.embeddings) and "embeddings" in ctx.capabilities
    if params.cursor is not None and proto.config.timeline_cursor:
        return _with_prompt(
            _page(proto, selector, params, limit, want_vectors, ctx.capabilities),
            options,
            chronological=True,
        )
    with proto.store.reading() as reader:
        newest = reader.select(selector, order="created_desc", limit=limit, embeddings=want_vectors)
    newest.reverse()
    result = {
        "records": [record_to_wire(r, ctx.capabilities, embeddings=want_vectors) for r in newest]
    }
    return _with_prompt(result, options, chronological=True)


def _page(
    proto: Protocol,
    selector: RecordFilter,
    params: TimelineParams,
    limit: int,
    want_vectors: bool,
    capabilities: frozenset[str],
) -> dict[str, Any]:
    """The ``cursor`` extension: the oldest ``limit`` records after the cursor's position,
    and the cursor after the last of them while more follow."""
    store_id = proto.store.store_id

    @functools.cache
    def digest() -> str:
        # Only a cursor read or written needs it: a first page that is the last one not.
        return listing_digest(
            tier=selector.tier,
            where=selector.where,
            key_prefix=selector.key_prefix,
            scope=selector.scope,
        )

    after = decode_page_cursor(store_id, digest(), params.cursor) if params.cursor else None
    with proto.store.reading() as reader:
        page = reader.select(selector.with_(after=after), limit=limit + 1, embeddings=want_vectors)
    following = None
    if len(page) > limit:
        page = page[:limit]
        last = page[-1]
        following = encode_page_cursor(store_id, digest(), last.created_at, last.rowid)
    return {
        "records": [record_to_wire(r, capabilities, embeddings=want_vectors) for r in page],
        "next_cursor": following,
    }


def fetch(proto: Protocol, ctx: CallContext, params: FetchParams) -> dict[str, Any]:
    """§4.9: the record at a key, or null; an unused key is not an error.

    Keys are unique per owner (§3.6), so one key may hold several owners' records. The
    caller's own record wins, then the unowned one, then the most recently written one
    the caller may read (a shared tier's, or any when the caller has no owner)."""
    owner = proto.acting_owner(ctx, params.owner)
    want_vectors = bool(params.embeddings) and "embeddings" in ctx.capabilities
    with proto.store.reading() as reader:
        record = reader.get_by_key(owner, params.key, embeddings=want_vectors)
        if record is None:
            readable = reader.select(
                RecordFilter(where={"key": params.key}, scope=proto.read_scope(owner)),
                embeddings=want_vectors,
            )
            readable.sort(key=lambda r: (r.owner is not None, -r.updated_at, -r.rowid))
            record = readable[0] if readable else None
    if record is None:
        return {"record": None}
    return {"record": record_to_wire(record, ctx.capabilities, embeddings=want_vectors)}


def describe(proto: Protocol, ctx: CallContext, params: DescribeParams) -> dict[str, Any]:
    """§4.1: what this server speaks, declares and holds."""
    if params.protocol is not None and not is_compatible(PROTOCOL_VERSION, params.protocol):
        raise ProtocolError(
            ErrorCode.PROTOCOL_NOT_SUPPORTED,
            f"this server speaks {PROTOCOL_VERSION} only; {params.protocol!r} is not "
            "compatible (0.x versions need an exact minor match)",
            {"supported": [PROTOCOL_VERSION]},
        )
    caps = ctx.capabilities
    config = proto.config
    capabilities = [c for c in CAPABILITIES if c in caps]
    methods = [name for name, spec in METHODS.items() if spec.capability in caps]
    limits = config.limits
    result: dict[str, Any] = {
        "protocol": PROTOCOL_VERSION,
        "name": config.name,
        "capabilities": capabilities,
        "methods": methods,
        "limits": {
            "max_records_per_call": limits.max_records_per_call,
            "max_recall_limit": limits.max_recall_limit,
            "max_content_length": limits.max_content_length,
            # Extensions (§4.1 lets limits carry more): what a record's metadata may be.
            "max_metadata_bytes": limits.max_metadata_bytes,
            "max_metadata_depth": MAX_JSON_DEPTH,
        },
    }
    if not config.declare_recall_limit:
        del result["limits"]["max_recall_limit"]
    owner = proto.acting_owner(ctx, params.owner)
    with proto.store.reading() as reader:
        if "tiers" in caps:
            counts = reader.count_by_tier(RecordFilter(scope=proto.read_scope(owner)))
            result["tiers"] = [_tier_info(t, counts.get(t.name, 0)) for t in config.tiers]
        dimensions = reader.dimensions()
        if dimensions is not None and not reader.holds_vectors():
            dimensions = None  # §3.7: null until a vector fixes it, again once none is left
    if dimensions is None and proto.embedding is not None:
        dimensions = proto.embedding.embedder.dimensions  # what its first vector will have
    if "events" in caps:
        result["events"] = {"push": ctx.push}
    if "summarize" in caps:
        result["summarize"] = {"model": None}
    if "prompt" in caps:
        result["prompt"] = {
            "styles": ["auto", "facts", "transcript"],
            "methods": ["template", "none"],
            "model": None,
        }
    if "embeddings" in caps:
        result["recall"] = {"rank": ["blend", "similarity"]}
    if config.timeline_cursor:
        result["timeline"] = {"cursor": True}
    if "scopes" in caps:
        # An extension: whom this connection's calls act as (the authenticated principal),
        # so a client can tell its own records from others' at different keys.
        result["owner"] = owner
    observations = _observations_info(proto)
    if observations is not None:
        result["observations"] = observations
    filtering = where_info(config)
    if filtering is not None:
        result["where"] = filtering
    if "embeddings" in caps:
        result["embeddings"] = {
            "dimensions": dimensions,
            "metric": config.metric,
            "metrics": ["cosine", "dot", "l2"],
            "model": proto.embedding_model,
        }
    return result


def _tier_info(tier: Any, count: int) -> dict[str, Any]:
    info: dict[str, Any] = {"name": tier.name, "count": count}
    if tier.kind is not None:
        info["kind"] = tier.kind
    info["capacity"] = tier.capacity
    info["spill_to"] = tier.spill_to
    info["promote_to"] = tier.promote_to
    if tier.promote_after is not None:
        info["promote_after"] = tier.promote_after
    if tier.half_life is not None:
        info["half_life"] = tier.half_life
    info["shared"] = tier.shared
    info["per_session"] = tier.per_session
    return info


def _observations_info(proto: Protocol) -> dict[str, Any] | None:
    """The ``observations`` object of describe (``docs/observations.md``), or None when
    the extension is off."""
    config = proto.config.observations
    if not config.enabled:
        return None
    return {
        "methods": list(OBSERVATION_METHODS),
        "classifications": list(CLASSIFICATIONS),
        "max_weight": config.max_weight,
        "transfer_multiplier": config.transfer_multiplier,
        "transfers": bool(config.grants),
    }
