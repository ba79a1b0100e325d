"""Observations another project granted the caller's, for an adapter's injected context:
the seed's "transferred observations appear in the destination project's injection
context". Core ``memory/recall`` never returns them (docs/observations.md §6), so an
adapter that puts memories before the model asks the extension once more, and only where
the server says a grant exists."""

from __future__ import annotations

import re
from collections.abc import Sequence

from a2m_types import DescribeResult
from a2m_types.observations import Observation

from ._adapter_steps import Flow, call

__all__ = [
    "TRANSFERRED_HEADER",
    "continued",
    "offers_transfers",
    "transferred_lines",
    "transferred_observations",
]

_LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
"""Every boundary ``str.splitlines()`` honours."""


def continued(text: str, indent: str = "  ") -> str:
    """``text`` with every line after its first indented by ``indent``: in a list of one
    line per memory, a memory's own line breaks can then never start a line that reads as
    another memory (``- [another/agent] …``), whichever way a reader splits lines. The
    server's prompt rendering does the same."""
    return _LINE_BREAK.sub(lambda found: found.group(0) + indent, text)


TRANSFERRED_HEADER = "Observations transferred from other projects (read-only):"
"""What the lines of transferred observations start under."""

# Own observations rank with them; asking for a few times k leaves room for k transferred.
_CANDIDATES_PER_WANTED = 4


def offers_transfers(description: DescribeResult | None) -> bool:
    """Whether the server declares the observations extension with a transfer grant in
    force, so that its observation recall may return another project's observations."""
    info = description.observations if description is not None else None
    return info is not None and info.transfers


def transferred_observations(
    description: DescribeResult | None,
    query: str,
    *,
    k: int,
    min_score: float | None = None,
) -> Flow[list[Observation]]:
    """Up to ``k`` transferred observations relevant to ``query``, best first, scoring at
    least ``min_score``: one ``memory/observations/recall`` where :func:`offers_transfers`
    holds for ``description`` (the client's, after its first call), no call elsewhere or
    for a blank query. Run it with :func:`a2m.adapter_support.drive` or ``drive_async``."""
    if k < 1 or not query.strip() or not offers_transfers(description):
        return []
    wanted = k * _CANDIDATES_PER_WANTED
    limits = description.limits if description is not None else None
    if limits is not None and limits.max_recall_limit:
        wanted = min(wanted, limits.max_recall_limit)
    result = yield call("recall_observations", query=query, limit=wanted)
    found: list[Observation] = result.observations
    granted = [
        o
        for o in found
        if o.transferred and (min_score is None or o.score is None or o.score >= min_score)
    ]
    return granted[:k]


def transferred_lines(
    observations: Sequence[Observation], header: str | None = TRANSFERRED_HEADER
) -> str:
    """Transferred observations as lines a model reads, each naming the project and agent
    it came from and its score, under ``header`` when given."""
    lines = [header] if header else []
    for observation in observations:
        origin = observation.source_project or "another project"
        if observation.agent:
            origin += f", agent {observation.agent}"
        score = f" (score {observation.score:.2f})" if observation.score is not None else ""
        lines.append(continued(f"- [{origin}] {observation.content}{score}"))
    return "\n".join(lines)
