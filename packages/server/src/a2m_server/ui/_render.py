"""The memory page's HTML, written by hand: every value from the store passes through
:func:`esc` (content holding ``<script>`` shows as text), no inline script or style (the
Content-Security-Policy forbids both), and every control has a label."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from ._fields import NOTE, Row
from ._listing import OLDEST, Filters, SearchPage

__all__ = [
    "CLASSIFICATIONS",
    "PageContext",
    "agent_url",
    "agents_page",
    "confirm_delete_page",
    "error_page",
    "history_fragment",
    "history_page",
    "login_page",
    "memory_page",
    "row_html",
]

CLASSIFICATIONS = ("pattern", "decision", "error", "tool-use", "convention", NOTE)
"""The seed's classifications, offered in the filter bar (others may be typed into the URL)."""
FRAMEWORKS = ("langchain", "langgraph", "crewai", "autogen", "agno")


def esc(value: object) -> str:
    """``value`` as HTML text or attribute content."""
    return html.escape(str(value), quote=True)


@dataclass(frozen=True)
class PageContext:
    """What every page needs to know about the viewer."""

    principal: str | None
    """Whom the session acts as (``None``: a server without tokens)."""
    csrf: str
    auth: bool
    """The server authenticates (show logout)."""
    read_only: bool


def agent_url(agent: str) -> str:
    """The memory page of ``agent`` (``""``: records nobody claims)."""
    return f"/ui/agents/{quote(agent or '-', safe='')}/memory"


def _layout(ctx: PageContext | None, title: str, body: str) -> str:
    nav = ""
    if ctx is not None and ctx.auth and ctx.principal is not None:
        nav = (
            '<form class="logout" method="post" action="/ui/logout">'
            f"<span>Signed in as <strong>{esc(ctx.principal)}</strong></span> "
            f'<input type="hidden" name="csrf" value="{esc(ctx.csrf)}">'
            '<button type="submit">Log out</button></form>'
        )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · A2M memory</title>"
        '<link rel="stylesheet" href="/ui/static/ui.css">'
        '<script src="/ui/static/ui.js" defer></script></head><body>'
        '<a class="skip" href="#main">Skip to content</a>'
        f'<header><a class="brand" href="/ui/">A2M memory</a>{nav}</header>'
        f'<main id="main" tabindex="-1">{body}</main></body></html>'
    )


def error_page(ctx: PageContext | None, status: int, message: str) -> str:
    titles = {400: "Bad request", 401: "Not signed in", 403: "Refused", 404: "Not found"}
    title = titles.get(status, "Error")
    body = (
        f'<h1>{esc(title)}</h1><p class="error" role="alert">{esc(message)}</p>'
        '<p><a href="/ui/">Back to the agents</a></p>'
    )
    return _layout(ctx, title, body)


def login_page(csrf: str, *, next_url: str, failed: bool) -> str:
    alert = (
        '<p class="error" role="alert">That token authenticates nobody on this server.</p>'
        if failed
        else ""
    )
    body = (
        "<h1>Sign in</h1>"
        "<p>Use the bearer token you give the API; the page keeps it in a session cookie "
        "and acts as its principal.</p>"
        f"{alert}"
        '<form class="login" method="post" action="/ui/login">'
        f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
        f'<input type="hidden" name="next" value="{esc(next_url)}">'
        '<label for="token">Bearer token</label>'
        '<input id="token" name="token" type="password" autocomplete="current-password" '
        "required autofocus>"
        '<button type="submit">Sign in</button></form>'
    )
    return _layout(None, "Sign in", body)


def agents_page(
    ctx: PageContext,
    agents: Sequence[tuple[str, int, dict[str, int], dict[str, int]]],
) -> str:
    """The agents the viewer may see, with counts per framework and tier."""
    rows = []
    for agent, total, frameworks, tiers in agents:
        name = esc(agent) if agent else "<em>unattributed</em>"
        rows.append(
            "<tr>"
            f'<th scope="row"><a href="{esc(agent_url(agent))}">{name}</a></th>'
            f'<td data-label="Records">{total}</td>'
            f'<td data-label="Frameworks">{_counts(frameworks)}</td>'
            f'<td data-label="Tiers">{_counts(tiers)}</td>'
            "</tr>"
        )
    table = (
        '<table class="agents"><caption>Agents and what they know</caption>'
        '<thead><tr><th scope="col">Agent</th><th scope="col">Records</th>'
        '<th scope="col">By framework</th><th scope="col">By tier</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        if rows
        else '<p class="empty">No records you may read yet.</p>'
    )
    body = f'<h1>Agents</h1>{table}<p><a href="/ui/memory">Every record, all agents</a></p>'
    return _layout(ctx, "Agents", body)


def _counts(counts: dict[str, int]) -> str:
    if not counts:
        return "—"
    items = "".join(
        f'<li>{esc(name or "—")} <span class="count">{n}</span></li>'
        for name, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    )
    return f'<ul class="counts">{items}</ul>'


def _filter_bar(base: str, filters: Filters, tiers: Sequence[str]) -> str:
    picked = set(filters.classifications)
    offered = list(CLASSIFICATIONS) + [
        c for c in filters.classifications if c not in CLASSIFICATIONS
    ]
    boxes = "".join(
        f'<label class="check"><input type="checkbox" name="classification" value="{esc(c)}"'
        f"{' checked' if c in picked else ''}> {esc(c)}</label>"
        for c in offered
    )
    tier_options = '<option value="">any</option>' + "".join(
        f'<option value="{esc(t)}"{" selected" if t == filters.tier else ""}>{esc(t)}</option>'
        for t in tiers
    )
    frameworks = "".join(f'<option value="{esc(f)}"></option>' for f in FRAMEWORKS)
    return (
        f'<form class="filters" method="get" action="{esc(base)}" role="search">'
        '<div class="field"><label for="f-q">Search</label>'
        f'<input id="f-q" name="q" type="search" value="{esc(filters.q)}"></div>'
        '<div class="field"><label for="f-tag">Tag</label>'
        f'<input id="f-tag" name="tag" value="{esc(filters.tag)}"></div>'
        '<div class="field"><label for="f-framework">Framework</label>'
        f'<input id="f-framework" name="framework" list="frameworks" value="{esc(filters.framework)}">'
        f'<datalist id="frameworks">{frameworks}</datalist></div>'
        '<div class="field"><label for="f-tier">Tier</label>'
        f'<select id="f-tier" name="tier">{tier_options}</select></div>'
        f'<fieldset class="field classes"><legend>Classification</legend>{boxes}</fieldset>'
        '<div class="actions"><button type="submit">Apply filters</button> '
        f'<a href="{esc(base)}">Clear</a></div></form>'
    )


def memory_page(
    ctx: PageContext,
    *,
    title: str,
    base: str,
    filters: Filters,
    tiers: Sequence[str],
    rows: Sequence[Row],
    editable: Iterable[bool],
    next_cursor: str | None,
    oldest: bool,
    searched: bool,
    back: str,
    transferred: Sequence[Row] = (),
    search: SearchPage | None = None,
) -> str:
    """One page of an agent's (or every agent's) records, newest first; ``transferred``:
    observations read through a transfer grant, shown apart and read-only."""
    bar = _filter_bar(base, filters, tiers)
    read_only = (
        '<p class="note" role="note">This server is read-only: records can be read, not '
        "changed.</p>"
        if ctx.read_only
        else ""
    )
    if rows:
        body_rows = "".join(
            row_html(ctx, row, index=i, editable=e, back=back)
            for i, (row, e) in enumerate(zip(rows, editable, strict=True))
        )
        table = (
            '<table class="records"><caption>'
            + ("Best matches first" if searched else "Most recent first")
            + "</caption>"
            + _HEAD
            + f"<tbody>{body_rows}</tbody></table>"
        )
    else:
        table = '<p class="empty">No records match.</p>'
    if search is not None:
        pager = _search_pager(base, filters, search, shown=len(rows))
    else:
        pager = _pager(base, filters, next_cursor, oldest=oldest, searched=searched)
    shared = ""
    if transferred:
        shared_rows = "".join(
            row_html(ctx, row, index=10_000 + i, editable=False, back=back)
            for i, row in enumerate(transferred)
        )
        shared = (
            '<h2 id="transferred">Transferred from other projects</h2>'
            '<p class="note">Read through a transfer grant at a discounted weight; they can '
            "be changed only in their own project.</p>"
            '<table class="records"><caption>Transferred observations, read-only</caption>'
            f"{_HEAD}<tbody>{shared_rows}</tbody></table>"
        )
    body = f"<h1>{esc(title)}</h1>{read_only}{bar}{table}{pager}{shared}"
    return _layout(ctx, title, body)


_HEAD = (
    "<thead><tr>"
    '<th scope="col">Content</th><th scope="col">Type</th>'
    '<th scope="col">Weight</th><th scope="col">Tags</th>'
    '<th scope="col">Classification</th><th scope="col">Created</th>'
    '<th scope="col">Source</th><th scope="col">Framework</th>'
    '<th scope="col">Actions</th></tr></thead>'
)


def _pager(
    base: str, filters: Filters, next_cursor: str | None, *, oldest: bool, searched: bool
) -> str:
    if searched:
        return '<p class="note">A search shows its best matches; clear it to page.</p>'
    links = []
    if filters.cursor:
        links.append(f'<a href="{esc(_with_query(base, filters, ""))}" rel="first">Newest</a>')
    if next_cursor is not None:
        links.append(
            f'<a href="{esc(_with_query(base, filters, next_cursor))}" rel="next">Older</a>'
        )
    if not oldest and next_cursor is not None:
        links.append(f'<a href="{esc(_with_query(base, filters, OLDEST))}" rel="last">Oldest</a>')
    if not links:
        return ""
    return f'<nav class="pager" aria-label="Pages">{" ".join(links)}</nav>'


def _search_pager(base: str, filters: Filters, search: SearchPage, *, shown: int) -> str:
    """The links between a text search's pages of matches, and where they end."""
    links = []
    if search.page > 1:
        links.append(f'<a href="{esc(_search_url(base, filters, 1))}" rel="first">Best matches</a>')
        links.append(
            f'<a href="{esc(_search_url(base, filters, search.page - 1))}" rel="prev">'
            "Better matches</a>"
        )
    if search.more:
        links.append(
            f'<a href="{esc(_search_url(base, filters, search.page + 1))}" rel="next">'
            "More matches</a>"
        )
    if shown:
        place = f"Matches {search.first} to {search.first + shown - 1}, page {search.page}."
    else:
        place = f"No matches on page {search.page}."
    if search.more:
        end = ""
    elif search.limit is not None:
        end = (
            f" The server's recall ranks at most {search.limit:,} matches, so the search "
            "ends here; narrow it (a filter, more words) to reach others."
        )
    else:
        end = " That is every match."
    note = f'<p class="note search-end" role="status">{esc(place + end)}</p>'
    nav = f'<nav class="pager" aria-label="Pages">{" ".join(links)}</nav>' if links else ""
    return note + nav


def _search_url(base: str, filters: Filters, page: int) -> str:
    items = [(k, v) for k, v in filters.query_items(cursor="") if k not in ("cursor", "page")]
    if page > 1:
        items.append(("page", str(page)))
    return f"{base}?{urlencode(items)}"


def _with_query(base: str, filters: Filters, cursor: str) -> str:
    items = filters.query_items(cursor=cursor)
    if not cursor:
        items = [(k, v) for k, v in items if k != "cursor"]
    return f"{base}?{urlencode(items)}" if items else base


def row_html(ctx: PageContext, row: Row, *, index: int, editable: bool, back: str) -> str:
    """One record's table row, with its actions when the viewer may change it."""
    tags = "".join(f'<li class="tag">{esc(t)}</li>' for t in row.tags)
    badge = (
        f'<span class="badge badge-{esc(_slug(row.classification))}">{esc(row.classification)}</span>'
        if row.classification
        else ""
    )
    source = "".join(
        f'<div><span class="label">{esc(label)}</span> {_source_value(value)}</div>'
        for label, value in row.source
    )
    if row.transferred_from:
        source += (
            f'<div class="transferred">transferred from <strong>{esc(row.transferred_from)}'
            "</strong> (read-only)</div>"
        )
    weight = "" if row.weight is None else f"{row.weight:g}"
    rid = esc(row.id)
    history_url = esc(f"/ui/record/history?{urlencode({'id': row.id})}")
    # A transferred row's history is its own project's audit log, not the reader's.
    actions = (
        []
        if row.transferred_from
        else [
            f'<details class="history" data-src="{history_url}&amp;fragment=1">'
            f'<summary>History</summary><div class="panel" aria-live="polite">'
            f'<a href="{history_url}">Open the history of this record</a></div></details>'
        ]
    )
    if editable and not ctx.read_only:
        hidden = (
            f'<input type="hidden" name="csrf" value="{esc(ctx.csrf)}">'
            f'<input type="hidden" name="id" value="{rid}">'
            f'<input type="hidden" name="back" value="{esc(back)}">'
        )
        actions.insert(
            0,
            f'<details class="edit"><summary>Edit</summary>'
            f'<form class="inline" method="post" action="/ui/record/edit">{hidden}'
            f'<label for="c-{index}">Content</label>'
            f'<textarea id="c-{index}" name="content" rows="3" required>{esc(row.content)}</textarea>'
            f'<label for="t-{index}">Type</label>'
            f'<input id="t-{index}" name="type" value="{esc(row.type)}">'
            '<button type="submit">Save</button></form></details>',
        )
        if row.weight is not None:
            actions.append(
                f'<form class="inline weight" method="post" action="/ui/record/weight">{hidden}'
                f'<button type="submit" name="direction" value="up" '
                f'aria-label="Raise weight" title="Raise weight">▲</button>'
                f'<button type="submit" name="direction" value="down" '
                f'aria-label="Lower weight" title="Lower weight">▼</button></form>'
            )
        delete_url = esc(f"/ui/record/delete?{urlencode({'id': row.id, 'back': back})}")
        actions.append(f'<a class="delete" href="{delete_url}">Delete…</a>')
    elif row.transferred_from:
        actions.append('<span class="note">read-only</span>')
    return (
        f'<tr id="row-{index}" data-id="{rid}" data-index="{index}">'
        f'<td data-label="Content" class="content">{esc(row.content)}'
        + (
            f'<div class="key">key {esc(row.key)} · revision {row.revision}</div>'
            if row.key and not row.observation
            else ""
        )
        + "</td>"
        f'<td data-label="Type">{esc(row.type)}</td>'
        f'<td data-label="Weight" class="weight">{weight}</td>'
        f'<td data-label="Tags"><ul class="tags">{tags}</ul></td>'
        f'<td data-label="Classification">{badge}</td>'
        f'<td data-label="Created"><time datetime="{esc(row.created)}">{esc(_short(row.created))}</time></td>'
        f'<td data-label="Source" class="source">{source}</td>'
        f'<td data-label="Framework">{esc(row.framework)}'
        + (f'<div class="tier">{esc(row.tier)}</div>' if row.tier else "")
        + "</td>"
        f'<td data-label="Actions" class="actions"><div class="status" role="status"></div>'
        f"{''.join(actions)}</td></tr>"
    )


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in text.lower())[:40]


def _short(stamp: str) -> str:
    return stamp.replace("T", " ")[:19]


def _source_value(value: str) -> str:
    if value.startswith(("https://", "http://")):
        return f'<a href="{esc(value)}" rel="noopener noreferrer">{esc(value)}</a>'
    return esc(value)


def confirm_delete_page(ctx: PageContext, row: Row, *, back: str) -> str:
    body = (
        "<h1>Delete this record permanently?</h1>"
        '<p class="warning" role="alert">Deleting is permanent: there is no undo and no '
        "soft delete. To make a record matter less without losing it, lower its weight.</p>"
        f'<blockquote class="content">{esc(row.content)}</blockquote>'
        '<form method="post" action="/ui/record/delete">'
        f'<input type="hidden" name="csrf" value="{esc(ctx.csrf)}">'
        f'<input type="hidden" name="id" value="{esc(row.id)}">'
        f'<input type="hidden" name="back" value="{esc(back)}">'
        '<button class="danger" type="submit">Delete permanently</button> '
        f'<a href="{esc(back)}">Cancel</a></form>'
    )
    return _layout(ctx, "Delete", body)


def history_fragment(row: Row, entries: Sequence[dict[str, Any]] | None) -> str:
    """The history panel: the audit log's entries for the record, newest first (each
    changed field before and after), or, on a server without one, what the record itself
    says about its changes."""
    if entries is None:
        facts = f"Created {esc(row.created)}."
        if row.key:
            facts += f" Key {esc(row.key)}, rewritten {row.revision} time(s)."
        return (
            f'<p class="history-facts">{facts}</p>'
            '<p class="note">This server keeps no audit log of edits.</p>'
        )
    if not entries:
        return f'<p class="history-facts">Created {esc(row.created)}; never edited.</p>'
    items = []
    for entry in entries:
        changes = "".join(
            f'<div class="change"><span class="label">{esc(name)}</span> '
            f"<del>{esc(before)}</del> → <ins>{esc(after)}</ins></div>"
            for name, before, after in entry.get("changes", ())
        )
        items.append(
            "<li>"
            f'<time datetime="{esc(entry.get("at", ""))}">{esc(_short(entry.get("at", "")))}</time> '
            f"<strong>{esc(entry.get('action', ''))}</strong> by {esc(entry.get('who') or '—')}"
            f"{changes}</li>"
        )
    return f'<ol class="audit">{"".join(items)}</ol>'


def history_page(ctx: PageContext, row: Row, fragment: str, *, back: str) -> str:
    body = (
        "<h1>History of a record</h1>"
        f'<blockquote class="content">{esc(row.content)}</blockquote>'
        f"{fragment}"
        f'<p><a href="{esc(back)}">Back</a></p>'
    )
    return _layout(ctx, "History", body)
