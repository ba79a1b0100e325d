"""The memory page's routes: reads through the store under the caller's principal's read
scope (as the REST binding reads), every change through the protocol's own methods on a
connection of that principal (``memory/remember``, ``memory/reinforce``,
``memory/forget``), exactly as a JSON-RPC call would make it.

Every route passes the guard (``_guard.py``): sign-in, CSRF and origin checks, security
headers; a read-only server shows no edit controls and refuses edits."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from a2m_server._web import in_worker
from a2m_server.auth import TokenMap
from a2m_server.errors import ProtocolError
from a2m_server.protocol import CallContext
from a2m_server.protocol.core import now_ms
from a2m_server.protocol.observations import (
    Tenant,
    access_of,
    is_observation,
    operator_of,
    operator_reach,
)
from a2m_server.protocol.reads import rank_candidates, server_query_vector
from a2m_server.server import A2MServer
from a2m_server.store import RecordFilter, StoredRecord
from a2m_server.text import query_terms
from a2m_types import ErrorCode

from . import _render as render
from ._fields import (
    TRANSFERRED_KEY,
    TYPE_KEY,
    Row,
    row_of,
    row_of_observation,
)
from ._guard import (
    MAX_FORM_BYTES,
    SECURITY_HEADERS,
    Refusal,
    State,
    back_to,
    call_context,
    guarded,
    html_response,
    page_context,
)
from ._listing import (
    SEARCH_LIMIT,
    BadRequest,
    Filters,
    SearchPage,
    read_page,
    recall_where,
    selector_for,
)
from ._sessions import Session, Sessions

__all__ = ["create_ui_app"]

STATIC = Path(__file__).parent / "static"
WEIGHT_STEP = 0.5
"""How much one click on weight up or down changes it (never below 0)."""
AUDIT = "memory/observations/audit"
UPDATE = "memory/observations/update"
DELETE = "memory/observations/delete"
LIST = "memory/observations/list"
"""The observations extension's methods the page uses when describe offers them."""
FETCH_HEADER = "x-a2m-ui"
"""Sent by the page's script: answer an edit with the row's new HTML, not a redirect."""


def create_ui_app(
    server: A2MServer,
    *,
    tokens: TokenMap | None = None,
    max_body_bytes: int = MAX_FORM_BYTES,
) -> ASGIApp:
    """The memory page as an ASGI app serving ``/ui/…``; ``tokens`` are the API's bearer
    tokens (without them, as the API, it acts as no principal and sees every record)."""
    state = State(server, tokens, Sessions())
    limit = min(max_body_bytes, MAX_FORM_BYTES)

    def page(handler: Callable[[Request, State, Session], Awaitable[Response]]) -> Any:
        async def endpoint(request: Request) -> Response:
            return await guarded(request, state, handler, limit)

        return endpoint

    routes = [
        Route("/ui", _to_index, methods=["GET"]),
        Route("/ui/", page(_agents), methods=["GET"]),
        Route("/ui/login", page(_login), methods=["GET", "POST"]),
        Route("/ui/logout", page(_logout), methods=["POST"]),
        Route("/ui/memory", page(_memory), methods=["GET"]),
        Route("/ui/agents/{agent:path}/memory", page(_memory), methods=["GET"]),
        Route("/ui/record/history", page(_history), methods=["GET"]),
        Route("/ui/record/delete", page(_delete), methods=["GET", "POST"]),
        Route("/ui/record/edit", page(_edit), methods=["POST"]),
        Route("/ui/record/weight", page(_weight), methods=["POST"]),
        Route("/ui/static/{name}", _static, methods=["GET"]),
    ]
    return Starlette(routes=routes)


async def _to_index(request: Request) -> Response:
    return RedirectResponse("/ui/", status_code=308)


async def _static(request: Request) -> Response:
    name = request.path_params["name"]
    types = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8"}
    if name not in types:
        return html_response(render.error_page(None, 404, "no such file"), 404)
    body = (STATIC / name).read_bytes()
    headers = {**SECURITY_HEADERS, "Cache-Control": "public, max-age=300"}
    return Response(body, media_type=types[name], headers=headers)


# --- login ----------------------------------------------------------------------------


async def _login(request: Request, state: State, session: Session) -> Response:
    if state.tokens is None:
        return RedirectResponse("/ui/", status_code=303)
    if request.method == "GET":
        target = back_to(request.query_params.get("next"))
        return html_response(render.login_page(session.csrf, next_url=target, failed=False))
    form = request.state.form
    target = back_to(form.get("next"))
    principal = state.tokens.principal_for(form.get("token", "").strip())
    if principal is None:
        return html_response(render.login_page(session.csrf, next_url=target, failed=True), 401)
    state.sessions.close(session.id)
    request.state.session = state.sessions.open(principal, authenticated=True)
    return RedirectResponse(target, status_code=303)


async def _logout(request: Request, state: State, session: Session) -> Response:
    state.sessions.close(session.id)
    request.state.logged_out = True
    request.state.session = session  # no new cookie: the old one is deleted
    return RedirectResponse("/ui/login" if state.tokens is not None else "/ui/", status_code=303)


# --- reading --------------------------------------------------------------------------


async def _agents(request: Request, state: State, session: Session) -> Response:
    ctx = call_context(state, session)
    agents = await in_worker(_agent_counts, state, ctx)
    return html_response(render.agents_page(page_context(state, session), agents))


def _agent_counts(
    state: State, ctx: CallContext
) -> list[tuple[str, int, dict[str, int], dict[str, int]]]:
    """Every agent the viewer may read, most records first, with its records per
    framework and tier: exact, from the counts the store keeps (never a scan); for an
    operator, plus the agents' observations it audits, counted by one grouped read."""
    proto = state.server.protocol
    owner = proto.acting_owner(ctx, None)
    scope = proto.read_scope(owner)
    reach = operator_reach(proto, ctx)
    with proto.store.reading() as reader:
        counted = reader.count_by_agent(scope)
        if reach is not None:
            # An operator's index also counts the agents' observations it audits, but
            # not twice those its own scope counted (its own and unowned ones).
            others = reach.with_(where={**(reach.where or {}), "owner": {"$nin": [owner, None]}})
            counted += reader.count_agents_where(others)
    totals: Counter[str] = Counter()
    frameworks: dict[str, Counter[str]] = {}
    tiers: dict[str, Counter[str]] = {}
    for count in counted:
        totals[count.agent] += count.n
        frameworks.setdefault(count.agent, Counter())[count.framework] += count.n
        tiers.setdefault(count.agent, Counter())[count.tier or ""] += count.n
    return [
        (agent, n, dict(frameworks[agent]), dict(tiers[agent]))
        for agent, n in sorted(totals.items(), key=lambda item: (-item[1], item[0]))
    ]


def _tier_names(state: State, ctx: CallContext) -> list[str]:
    if "tiers" not in ctx.capabilities:
        return []
    return [t.name for t in state.server.config.tiers]


async def _memory(request: Request, state: State, session: Session) -> Response:
    ctx = call_context(state, session)
    raw_agent = request.path_params.get("agent")
    agent = None if raw_agent is None else ("" if raw_agent == "-" else raw_agent)
    if agent is not None and (len(agent) > 500 or "\x00" in agent):
        raise BadRequest("not an agent name")
    filters = Filters.from_query(request.query_params, tiers=_tier_names(state, ctx))
    base = request.url.path if raw_agent is None else render.agent_url(agent or "")
    back = base + (f"?{request.url.query}" if request.url.query else "")
    listed = await in_worker(_read, state, ctx, filters, agent)
    transferred: list[Row] = []
    if agent and not filters.cursor and not filters.q:
        transferred = await in_worker(_transferred, state, ctx, agent)
    title = "Every record" if agent is None else f"Memory of {agent or 'unattributed records'}"
    return html_response(
        render.memory_page(
            page_context(state, session),
            title=title,
            base=base,
            filters=filters,
            tiers=_tier_names(state, ctx),
            rows=listed.rows,
            editable=listed.editable,
            next_cursor=listed.next_cursor,
            oldest=listed.oldest,
            searched=bool(filters.q),
            back=back_to(back),
            transferred=transferred,
            search=listed.search,
        )
    )


def _transferred(state: State, ctx: CallContext, agent: str) -> list[Row]:
    """The agent's observations read through transfer grants (the extension's ``list``),
    newest first; none without the extension or when the viewer may not list that agent."""
    if LIST not in _extension(state, ctx):
        return []
    params = {"agent": agent, "include_transferred": True, "order": "recent", "limit": 50}
    try:
        listed = _call(state, ctx, LIST, params)
    except Refusal:
        return []
    return [
        row_of_observation(o)
        for o in listed.get("observations", [])
        if isinstance(o, dict) and o.get("transferred")
    ]


@dataclass(frozen=True)
class _Listed:
    rows: list[Row]
    editable: list[bool]
    next_cursor: str | None
    oldest: bool
    search: SearchPage | None


def _read(state: State, ctx: CallContext, filters: Filters, agent: str | None) -> _Listed:
    proto = state.server.protocol
    selector = selector_for(proto, ctx, filters, agent)
    search: SearchPage | None = None
    if filters.q:
        records, search = _search(state, ctx, selector, filters, agent)
        next_cursor, oldest = None, False
    else:
        page = read_page(proto, selector, filters)
        records, next_cursor, oldest = page.records, page.next_cursor, page.oldest
    owner = proto.acting_owner(ctx, None)
    salience = "salience" in ctx.capabilities
    rows = [row_of(r, salience=salience) for r in records]
    operator = operator_of(proto, ctx)
    editable = [_may_change(state, r, owner, operator) for r in records]
    return _Listed(rows, editable, next_cursor, oldest, search)


def _may_change(
    state: State, record: StoredRecord, owner: str | None, operator: Tenant | None
) -> bool:
    """Whether the viewer may edit, reweigh or delete ``record``: its own (or any, acting
    as no owner), and as an operator the observations it audits; never a transfer."""
    metadata = record.metadata or {}
    if metadata.get(TRANSFERRED_KEY) is not None:
        return False
    if owner is None or record.owner == owner:
        return True
    return operator is not None and access_of(state.server.protocol, operator, record) == "own"


def _search(
    state: State, ctx: CallContext, selector: RecordFilter, filters: Filters, agent: str | None
) -> tuple[list[StoredRecord], SearchPage]:
    """One page of the server's own recall for the text, with the listing's filters on
    what it ranked, in its order. Recall has no cursor: page ``k`` asks it for the best
    ``k * SEARCH_LIMIT + 1`` (the one past the page says whether another follows), within
    the server's declared recall limit, and shows the last ``SEARCH_LIMIT``. A tag filter,
    which ``where`` cannot say, is applied after the recall: it then asks for the limit."""
    proto = state.server.protocol
    cap = proto.config.limits.max_recall_limit or 1000
    end = filters.page * SEARCH_LIMIT
    asked = cap if selector.tags_all else min(cap, end + 1)
    params: dict[str, Any] = {"query": filters.q, "limit": asked}
    if selector.tier is not None:
        params["tier"] = selector.tier
    where = recall_where(filters, agent)
    if where:
        params["where"] = where
    if operator_reach(proto, ctx) is None:
        ids = [r["id"] for r in _call(state, ctx, "memory/recall", params)["records"]]
    else:
        # Core recall reads the operator's own records only; the same ranking is run
        # over what the listing shows, the agents' observations with them.
        ids = _ranked_within(state, selector, filters.q, asked)
    found: dict[str, StoredRecord] = {}
    if ids:
        with proto.store.reading() as reader:
            found = {r.id: r for r in reader.select(selector.with_(ids=ids))}
    matches = [found[i] for i in ids if i in found]
    start = end - SEARCH_LIMIT
    # The recall gave all it may: matches past it cannot be reached by paging on.
    stopped = len(ids) >= asked and asked == cap
    place = SearchPage(
        page=filters.page,
        first=start + 1,
        more=len(matches) > end,
        limit=cap if stopped and len(matches) <= end else None,
    )
    return matches[start:end], place


def _ranked_within(state: State, selector: RecordFilter, query: str, limit: int) -> list[str]:
    """The ids of the records of ``selector`` that ``query`` finds, best first, ranked as
    ``memory/recall`` ranks (§5: words and the server's own embedding blended)."""
    proto = state.server.protocol
    terms = query_terms(query)
    vector = server_query_vector(proto, query)
    with proto.store.reading() as reader:
        if vector is not None and reader.dimensions() != len(vector):
            vector = None
        if not terms and vector is None:
            return []
        ranked = rank_candidates(proto, reader, selector, terms, vector, limit, now_ms())
    return [record.id for record, _ in ranked[:limit]]


def _call(state: State, ctx: CallContext, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One protocol method, as the JSON-RPC binding runs it, for this session's principal."""
    with state.server.connect(transport="http", principal=ctx.principal) as connection:
        try:
            return connection.call(method, params)
        except ProtocolError as exc:
            raise _refusal_of(exc) from None


def _refusal_of(exc: ProtocolError) -> Refusal:
    status = {
        int(ErrorCode.READ_ONLY): 403,
        int(ErrorCode.SCOPE_DENIED): 403,
        int(ErrorCode.INVALID_PARAMS): 400,
        int(ErrorCode.UNKNOWN_TIER): 400,
        int(ErrorCode.CAPABILITY_NOT_SUPPORTED): 400,
        int(ErrorCode.QUOTA_EXCEEDED): 413,
        int(ErrorCode.EMBEDDING_MISMATCH): 400,
        int(ErrorCode.UNKNOWN_RECORD): 404,
    }.get(int(exc.code), 500)
    return Refusal(status, exc.message)


# --- one record -----------------------------------------------------------------------


def _record_id(value: str | None) -> str:
    if value is None or not value.strip():
        raise BadRequest("no record id given")
    if len(value) > 1000 or "\x00" in value:
        raise BadRequest("not a record id")
    return value


def _find(state: State, ctx: CallContext, record_id: str) -> tuple[StoredRecord, bool]:
    """The record the viewer may read, and whether they may change it; 404 otherwise."""
    proto = state.server.protocol
    owner = proto.acting_owner(ctx, None)
    readable = RecordFilter(scope=proto.read_scope(owner))
    reach = operator_reach(proto, ctx)
    visible = readable if reach is None else RecordFilter(any_of=[readable, reach])
    with proto.store.reading() as reader:
        found = reader.select(visible.with_(ids=[record_id]))
    if not found:
        raise Refusal(404, "no record with that id that you may read")
    return found[0], _may_change(state, found[0], owner, operator_of(proto, ctx))


async def _history(request: Request, state: State, session: Session) -> Response:
    ctx = call_context(state, session)
    record_id = _record_id(request.query_params.get("id"))
    record, _ = await in_worker(_find, state, ctx, record_id)
    row = row_of(record, salience="salience" in ctx.capabilities)
    entries = await in_worker(_audit, state, ctx, record)
    fragment = render.history_fragment(row, entries)
    if request.query_params.get("fragment") == "1":
        return html_response(fragment)
    back = back_to(request.query_params.get("back"))
    return html_response(
        render.history_page(page_context(state, session), row, fragment, back=back)
    )


def _extension(state: State, ctx: CallContext) -> frozenset[str]:
    """The observations extension's methods this server offers (describe's
    ``observations.methods``); empty without the extension."""
    described = _call(state, ctx, "memory/describe", {})
    extension = described.get("observations")
    methods = extension.get("methods") if isinstance(extension, dict) else None
    return frozenset(m for m in methods or () if isinstance(m, str))


def _is_observation(record: StoredRecord) -> bool:
    return is_observation(record)


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return "—" if value is None else str(value)


def _audit(state: State, ctx: CallContext, record: StoredRecord) -> list[dict[str, Any]] | None:
    """The audit log's entries for an observation, newest first, as the history panel shows
    them; ``None`` when the server keeps no audit log (or the record is no observation)."""
    if not _is_observation(record) or AUDIT not in _extension(state, ctx):
        return None
    result = _call(state, ctx, AUDIT, {"observation_id": record.id, "limit": 50})
    shown: list[dict[str, Any]] = []
    for entry in result.get("entries", []):
        before = entry.get("before") if isinstance(entry.get("before"), dict) else {}
        after = entry.get("after") if isinstance(entry.get("after"), dict) else {}
        changed = [
            name for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)
        ]
        item: dict[str, Any] = {
            "at": str(entry.get("at", "")),
            "action": str(entry.get("action", "")),
            "who": str(entry.get("actor", "")),
        }
        if before and after and changed:
            item["changes"] = [(n, _shown(before.get(n)), _shown(after.get(n))) for n in changed]
        shown.append(item)
    return shown


def _writable(state: State, record: StoredRecord, may_change: bool) -> None:
    if state.server.config.read_only:
        raise Refusal(403, "this server is read-only: records can be read, not changed")
    if (record.metadata or {}).get(TRANSFERRED_KEY) is not None:
        raise Refusal(403, "a transferred observation is read-only here")
    if not may_change:
        raise Refusal(403, "this record belongs to another owner; you may read it only")


async def _delete(request: Request, state: State, session: Session) -> Response:
    ctx = call_context(state, session)
    if request.method == "GET":
        record_id = _record_id(request.query_params.get("id"))
        back = back_to(request.query_params.get("back"))
        record, may_change = await in_worker(_find, state, ctx, record_id)
        _writable(state, record, may_change)
        row = row_of(record, salience="salience" in ctx.capabilities)
        return html_response(
            render.confirm_delete_page(page_context(state, session), row, back=back)
        )
    form = request.state.form
    record_id = _record_id(form.get("id"))
    record, may_change = await in_worker(_find, state, ctx, record_id)
    _writable(state, record, may_change)
    await in_worker(_remove, state, ctx, record)
    return RedirectResponse(back_to(form.get("back")), status_code=303)


def _remove(state: State, ctx: CallContext, record: StoredRecord) -> None:
    """Delete for good: the extension's audited delete for an observation, else forget."""
    if _is_observation(record) and DELETE in _extension(state, ctx):
        _call(state, ctx, DELETE, {"ids": [record.id]})
    else:
        _call(state, ctx, "memory/forget", {"ids": [record.id]})


def _reweight(state: State, ctx: CallContext, record: StoredRecord, up: bool) -> None:
    """One step up or down (never below 0): the extension's audited update for an
    observation, else ``memory/reinforce`` by the step."""
    current = max(record.salience, 0.0)
    amount = WEIGHT_STEP if up else -min(WEIGHT_STEP, current)
    if amount == 0 or not math.isfinite(current + amount):
        return
    if _is_observation(record) and UPDATE in _extension(state, ctx):
        _call(state, ctx, UPDATE, {"id": record.id, "weight": current + amount})
    else:
        _call(state, ctx, "memory/reinforce", {"ids": [record.id], "amount": amount})


async def _weight(request: Request, state: State, session: Session) -> Response:
    ctx = call_context(state, session)
    form = request.state.form
    record_id = _record_id(form.get("id"))
    direction = form.get("direction")
    if direction not in ("up", "down"):
        raise BadRequest("direction must be up or down")
    if "salience" not in ctx.capabilities:
        raise BadRequest("this server keeps no weights (the salience capability is off)")
    record, may_change = await in_worker(_find, state, ctx, record_id)
    _writable(state, record, may_change)
    await in_worker(_reweight, state, ctx, record, direction == "up")
    return await _after_change(request, state, session, ctx, record_id)


async def _edit(request: Request, state: State, session: Session) -> Response:
    ctx = call_context(state, session)
    form = request.state.form
    record_id = _record_id(form.get("id"))
    content = form.get("content", "")
    kind = form.get("type", "").strip()
    if not content.strip():
        raise BadRequest("content must not be empty")
    if len(kind) > 200:
        raise BadRequest("type is longer than 200 characters")
    record, may_change = await in_worker(_find, state, ctx, record_id)
    _writable(state, record, may_change)
    new_id = await in_worker(_rewrite, state, ctx, record, content, kind)
    return await _after_change(request, state, session, ctx, new_id)


def _rewrite(state: State, ctx: CallContext, record: StoredRecord, content: str, kind: str) -> str:
    """Change a record's content and type through ``memory/remember``: a keyed record is
    replaced at its key (same id, revision + 1); any other is written anew and the old one
    forgotten after (new state before removing old). An observation goes through the
    extension's audited update where the server has it."""
    if _is_observation(record) and UPDATE in _extension(state, ctx):
        _call(state, ctx, UPDATE, {"id": record.id, "content": content, "type": kind or None})
        return record.id
    metadata = dict(record.metadata or {})
    if kind:
        metadata[TYPE_KEY] = kind
    else:
        metadata.pop(TYPE_KEY, None)
    caps = ctx.capabilities
    entry: dict[str, Any] = {"content": content, "metadata": metadata}
    for name, value in (
        ("role", record.role),
        ("group", record.group),
        ("uri", record.uri),
        ("media_type", record.media_type),
    ):
        if value is not None:
            entry[name] = value
    if "tiers" in caps and record.tier is not None:
        entry["tier"] = record.tier
    if "salience" in caps:
        entry["salience"] = record.salience
    if "sessions" in caps and record.session is not None:
        entry["session"] = record.session
    params: dict[str, Any] = {"records": [entry]}
    if "scopes" in caps and record.owner is not None and ctx.principal is None:
        params["owner"] = record.owner
    if "keys" in caps and record.key is not None:
        entry["key"] = record.key
        ids = _call(state, ctx, "memory/remember", params)["ids"]
        return str(ids[0])
    ids = _call(state, ctx, "memory/remember", params)["ids"]
    _call(state, ctx, "memory/forget", {"ids": [record.id]})
    return str(ids[0])


async def _after_change(
    request: Request, state: State, session: Session, ctx: CallContext, record_id: str
) -> Response:
    form = request.state.form
    if request.headers.get(FETCH_HEADER) != "fetch":
        return RedirectResponse(back_to(form.get("back")), status_code=303)
    record, may_change = await in_worker(_find, state, ctx, record_id)
    row = row_of(record, salience="salience" in ctx.capabilities)
    index = form.get("index", "0")
    position = int(index) if index.isdigit() and len(index) < 6 else 0
    return html_response(
        render.row_html(
            page_context(state, session),
            row,
            index=position,
            editable=may_change,
            back=back_to(form.get("back")),
        )
    )
