"""Browser sessions of the memory page: a random id in an ``HttpOnly``, ``SameSite=Strict``
cookie naming, on the server, the principal a bearer token authenticated at login and the
CSRF token every state-changing form must echo.

Sessions live in memory: restarting the server signs everyone out, and logging out ends
the session on the server, not only in the browser."""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["COOKIE_NAME", "Session", "Sessions"]

COOKIE_NAME = "a2m_ui_session"
SESSION_SECONDS = 12 * 3600
"""How long a session lasts after it was opened."""
MAX_SESSIONS = 10_000
"""Most sessions of each kind kept, signed in and not; the oldest of its kind is dropped
past it, so visitors cannot fill memory, nor sign anyone out by opening sessions of their
own without a token."""


@dataclass
class Session:
    """One browser's session: whom it acts as (``None`` before login, or on a server
    without tokens) and the token its forms carry."""

    id: str
    csrf: str
    principal: str | None
    authenticated: bool
    expires: float

    def csrf_matches(self, offered: str | None) -> bool:
        """Whether a form's ``csrf`` field is this session's token (constant time)."""
        return offered is not None and hmac.compare_digest(offered.encode(), self.csrf.encode())


class Sessions:
    """Every open session, by cookie value; thread-safe. Signed-in sessions and the ones
    opened before a login are kept apart, each under its own limit: opening sessions
    without a token only ever drops sessions without one."""

    def __init__(self, *, lifetime: float = SESSION_SECONDS, limit: int = MAX_SESSIONS) -> None:
        self._lifetime = lifetime
        self._limit = limit
        self._pools: dict[bool, OrderedDict[str, Session]] = {
            True: OrderedDict(),
            False: OrderedDict(),
        }
        self._lock = threading.Lock()

    def open(self, principal: str | None, *, authenticated: bool) -> Session:
        """A new session (a new id and CSRF token: logging in never keeps the old id)."""
        session = Session(
            id=secrets.token_urlsafe(32),
            csrf=secrets.token_urlsafe(32),
            principal=principal,
            authenticated=authenticated,
            expires=time.monotonic() + self._lifetime,
        )
        with self._lock:
            pool = self._pools[authenticated]
            pool[session.id] = session
            while len(pool) > self._limit:
                pool.popitem(last=False)
        return session

    def find(self, cookie: str | None) -> Session | None:
        """The live session a cookie names, or ``None``."""
        if not cookie:
            return None
        with self._lock:
            for pool in self._pools.values():
                session = pool.get(cookie)
                if session is None:
                    continue
                if session.expires <= time.monotonic():
                    del pool[cookie]
                    return None
                return session
            return None

    def close(self, cookie: str | None) -> None:
        """End a session (logout)."""
        if cookie:
            with self._lock:
                for pool in self._pools.values():
                    pool.pop(cookie, None)
