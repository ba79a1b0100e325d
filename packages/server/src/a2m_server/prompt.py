"""Deterministic rendering of recalled records as prompt text (§4.16, ``method: template``):
a bullet list of facts or a role-tagged transcript, trimmed to a budget by whole records."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from a2m_types import PromptOptions, parse_timestamp

__all__ = ["render_prompt"]

_CONVERSATIONAL_ROLES = frozenset({"user", "assistant", "system", "tool"})

_DEFAULT_ROLE = "memory"
# Every boundary str.splitlines() honours: a reader splitting lines any of these ways
# must still see the continuation indented under its entry.
_LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_CONTINUATION = "  "


def render_prompt(
    records: Sequence[Mapping[str, Any]], options: PromptOptions, *, chronological: bool
) -> tuple[str, list[str]]:
    """Render ``records`` as ``(text, prompt_ids)`` for ``method: template``.

    ``records`` are wire-form dicts in the order the result carries them: relevance
    order for recall, oldest first (``chronological``) for timeline. ``prompt_ids``
    names the records the text contains, in the order they appear in it. When a
    budget is set, ``len(text) <= budget`` and records are dropped whole, never cut.
    """
    if options.method != "template":
        raise ValueError(f"render_prompt renders method 'template', not {options.method!r}")
    if not records:
        return "", []
    style = options.style
    if style == "auto":
        style = "transcript" if chronological and _is_conversation(records) else "facts"
    if style == "transcript":
        ordered = records if chronological else _oldest_first(records)
        entries = [_entry(f"{_role(r)}: ", r, cite=options.cite) for r in ordered]
        kept = _newest_that_fit(entries, options.budget)
    else:
        entries = [_entry("- ", r, cite=options.cite) for r in records]
        kept = _each_that_fits(entries, options.budget)
    return "\n".join(text for text, _ in kept), [record_id for _, record_id in kept]


def _is_conversation(records: Sequence[Mapping[str, Any]]) -> bool:
    turns = sum(1 for record in records if _role(record).casefold() in _CONVERSATIONAL_ROLES)
    return 2 * turns >= len(records)


def _role(record: Mapping[str, Any]) -> str:
    role = record.get("role")
    if isinstance(role, str) and role.strip():
        return role.strip()
    return _DEFAULT_ROLE


def _oldest_first(records: Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    # A transcript read out of order misleads, so relevance order is put back into
    # creation order; without a timestamp on every record there is no order to restore.
    stamps: list[datetime] = []
    for record in records:
        created_at = record.get("created_at")
        if not isinstance(created_at, str):
            return records
        try:
            stamps.append(parse_timestamp(created_at))
        except ValueError:
            return records
    order = sorted(range(len(records)), key=lambda i: (stamps[i], i))
    return [records[i] for i in order]


def _source(record: Mapping[str, Any]) -> str:
    for field in ("uri", "key"):
        value = record.get(field)
        if isinstance(value, str) and value:
            return value
    return str(record["id"])


def _entry(prefix: str, record: Mapping[str, Any], *, cite: bool) -> tuple[str, str]:
    text = prefix + str(record["content"])
    if cite:
        text += f" [source: {_source(record)}]"
    return _LINE_BREAK.sub(lambda m: m.group(0) + _CONTINUATION, text), str(record["id"])


def _each_that_fits(entries: list[tuple[str, str]], budget: int | None) -> list[tuple[str, str]]:
    # Relevance order: a shorter, less relevant entry may still fit after a long one did not.
    if budget is None:
        return entries
    kept: list[tuple[str, str]] = []
    used = 0
    for entry in entries:
        cost = len(entry[0]) + (1 if kept else 0)
        if used + cost <= budget:
            kept.append(entry)
            used += cost
    return kept


def _newest_that_fit(entries: list[tuple[str, str]], budget: int | None) -> list[tuple[str, str]]:
    # A transcript must stay contiguous: the first turn that does not fit ends it.
    if budget is None:
        return entries
    kept: list[tuple[str, str]] = []
    used = 0
    for entry in reversed(entries):
        cost = len(entry[0]) + (1 if kept else 0)
        if used + cost > budget:
            break
        kept.append(entry)
        used += cost
    kept.reverse()
    return kept
