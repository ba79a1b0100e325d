"""``A2MSessionStore``: Agent Framework's ``SessionStore`` on A2M, so a session snapshot
survives a restart and is shared between processes."""

from __future__ import annotations

import warnings
from typing import Any
from urllib.parse import quote

from agent_framework import AgentSession, SessionStore

from a2m import AsyncA2MClient
from a2m.adapter_support import DEFAULT_TIMEOUT, ClientSource
from a2m.errors import CapabilityNotSupported, InvalidParams
from a2m_types.json_values import JSONValueError, check_json_value

from ._messages import SOURCE_FRAMEWORK, checked_namespace

__all__ = ["DEFAULT_SESSIONS_NAMESPACE", "SNAPSHOT_FIELD", "A2MSessionStore"]

DEFAULT_SESSIONS_NAMESPACE = "agent-framework/sessions"
"""Where session snapshots are kept when no namespace is given."""

SNAPSHOT_FIELD = "agent_session"
"""The metadata key holding ``AgentSession.to_dict()``."""


# Agent Framework marks SessionStore experimental and warns when it is subclassed: the
# warning would meet everyone who imports this package, session store or not. Its state
# is said in the README instead.
warnings.filterwarnings("ignore", message=r"\[SESSION_STORE\]", module=__name__)


class A2MSessionStore(SessionStore):
    """Session snapshots as A2M records at ``{namespace}/{session id}``: ``get`` is one
    ``memory/fetch``, ``set`` one ``memory/remember`` (a write to an occupied key replaces
    it in place: never a moment with no snapshot), ``delete`` one fetch and one
    ``memory/forget``. Over an authenticated connection each principal reads and writes
    only its own snapshot at an address (keys are scoped per owner, spec §3.6). Needs a
    server with the ``keys`` capability.

    ``client`` stays the caller's; without one, a client is opened from ``url``
    (``A2M_URL``) on the first call and closed by :meth:`aclose`."""

    def __init__(
        self,
        client: AsyncA2MClient | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        namespace: str = DEFAULT_SESSIONS_NAMESPACE,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        super().__init__()
        self.namespace = checked_namespace(namespace)
        self._source = ClientSource(client, url=url, token=token, timeout=timeout)

    async def _open(self) -> AsyncA2MClient:
        client, layout = await self._source.open()
        if not layout.supports("keys"):
            raise CapabilityNotSupported(
                "A2MSessionStore keeps each session at a key, and this server does not "
                "declare the A2M capability 'keys'",
                data={"capability": "keys"},
            )
        return client

    def _key(self, session_id: str) -> str:
        SessionStore.validate_session_id(session_id)
        return f"{self.namespace}/{quote(session_id, safe='')}"

    async def get(self, session_id: str) -> AgentSession | None:
        """The stored session, or ``None`` when there is none (one ``memory/fetch``)."""
        key = self._key(session_id)
        record = (await (await self._open()).fetch(key)).record
        if record is None:
            return None
        snapshot = (record.metadata or {}).get(SNAPSHOT_FIELD)
        if not isinstance(snapshot, dict):
            raise InvalidParams(f"the record at {key!r} holds no Agent Framework session")
        return AgentSession.from_dict(snapshot)

    async def set(self, session_id: str, session: AgentSession) -> None:
        """Store ``session`` under ``session_id``, replacing what was there (one
        ``memory/remember``). A session whose state A2M cannot carry exactly is refused
        before anything is written."""
        key = self._key(session_id)
        snapshot = session.to_dict()
        try:
            check_json_value(snapshot, "session")
        except JSONValueError as exc:
            raise InvalidParams(f"{exc}; nothing was written", data={"path": exc.path}) from None
        metadata: dict[str, Any] = {
            "namespace": self.namespace,
            "type": "procedural",
            "source_framework": SOURCE_FRAMEWORK,
            "session": session_id,
            SNAPSHOT_FIELD: snapshot,
        }
        record = {
            "key": key,
            "content": f"Agent Framework session {session_id}",
            "metadata": metadata,
        }
        await (await self._open()).remember(record)

    async def delete(self, session_id: str) -> None:
        """Delete the stored session, if any (one fetch and one forget)."""
        key = self._key(session_id)
        client = await self._open()
        record = (await client.fetch(key)).record
        if record is not None:
            await client.forget([record.id])

    async def aclose(self) -> None:
        """Close the client this store opened from a URL; a given client stays open."""
        await self._source.aclose()
