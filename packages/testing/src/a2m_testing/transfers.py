"""A server on which project ``acme/api`` has granted its observations to ``acme/web``, for
tests of an adapter's injected context: what the same agent learned in the other project
must reach the model, marked, and nothing must be asked where no grant exists."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from a2m_server.config import ServerConfig
    from a2m_server.server import A2MServer

__all__ = [
    "GRANTED_FACT",
    "OTHER_AGENT_FACT",
    "TOKENS",
    "WEB_TOKEN",
    "granted_config",
    "seed_granted_project",
]

GRANTED_FACT = "pin the fastapi version to 0.115 in every service"
"""What ``acme/api/planner`` learned: granted to ``acme/web/planner``."""
OTHER_AGENT_FACT = "the fastapi version of the billing service is frozen"
"""What another agent of ``acme/api`` learned: the grant covers the same agent only."""
WEB_TOKEN = "web-planner-token"
"""The token of ``acme/web/planner``, the agent reading through the grant."""
TOKENS = {WEB_TOKEN: "acme/web/planner", "api-planner-token": "acme/api/planner"}
"""Tokens for :func:`a2m_testing.servers.serve_http`."""


def granted_config(*, grant: bool = True) -> ServerConfig:
    """The default server, its observations in ``acme/web``, with the grant from
    ``acme/api`` (or, with ``grant=False``, none)."""
    from a2m_server.config import ObservationsConfig, ServerConfig, TransferGrant

    grants = (TransferGrant("acme/api", "acme/web"),) if grant else ()
    observations = ObservationsConfig(org="acme", project="web", grants=grants)
    return replace(ServerConfig(), observations=observations)


def seed_granted_project(server: A2MServer) -> str:
    """Write :data:`GRANTED_FACT` as ``acme/api/planner`` and :data:`OTHER_AGENT_FACT` as
    ``acme/api/other``; the id of the first."""
    method = "memory/observations/remember"
    other = server.connect(principal="acme/api/other")
    other.call(method, {"content": OTHER_AGENT_FACT, "weight": 5.0})
    written = server.connect(principal="acme/api/planner").call(
        method, {"content": GRANTED_FACT, "weight": 2.0}
    )
    return str(written["id"])
