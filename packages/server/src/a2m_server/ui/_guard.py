"""The guard every page of the memory page passes: the session cookie (``HttpOnly``,
``SameSite=Strict``) and sign-in, the form reader (bounded, UTF-8, each field once), CSRF
and origin checks on every POST, the Host check of a server without tokens, and the
security headers (a strict Content-Security-Policy) on every answer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import parse_qs, quote, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from a2m_server._web import addressed_directly
from a2m_server.auth import TokenMap
from a2m_server.protocol import CallContext
from a2m_server.server import A2MServer

from . import _render as render
from ._listing import BadRequest
from ._sessions import COOKIE_NAME, Session, Sessions

__all__ = [
    "MAX_FORM_BYTES",
    "SECURITY_HEADERS",
    "Refusal",
    "State",
    "back_to",
    "call_context",
    "guarded",
    "html_response",
    "page_context",
]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
MAX_FORM_BYTES = 256 * 1024


@dataclass
class State:
    server: A2MServer
    tokens: TokenMap | None
    sessions: Sessions


# --- the guard every page passes -------------------------------------------------------


class Refusal(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


async def guarded(
    request: Request,
    state: State,
    handler: Callable[[Request, State, Session], Awaitable[Response]],
    limit: int,
) -> Response:
    if state.tokens is None and not addressed_directly(request.headers.get("host", "")):
        # Without tokens anyone who reaches the page may read it; a page of another site
        # whose name was rebound to this address must not be able to.
        message = (
            "without --tokens this page answers only at an IP address or localhost; "
            "serve with --tokens to reach it under another name"
        )
        return html_response(render.error_page(None, 403, message), 403)
    cookie = request.cookies.get(COOKIE_NAME)
    session = state.sessions.find(cookie)
    fresh = session is None
    if session is None:
        session = state.sessions.open(None, authenticated=state.tokens is None)
    try:
        if request.method == "POST":
            request.state.form = await _form(request, limit)
            _check_csrf(request, session)
        login = request.url.path == "/ui/login"
        if state.tokens is not None and not session.authenticated and not login:
            if request.method == "POST":
                raise Refusal(401, "sign in first")
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            response: Response = RedirectResponse(
                f"/ui/login?next={quote(target, safe='')}", status_code=303
            )
        else:
            response = await handler(request, state, session)
    except Refusal as exc:
        response = html_response(
            render.error_page(page_context(state, session), exc.status, exc.message), exc.status
        )
    except BadRequest as exc:
        response = html_response(
            render.error_page(page_context(state, session), 400, str(exc)), 400
        )
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    chosen = getattr(request.state, "session", session)
    if fresh or chosen is not session:
        _set_cookie(request, response, chosen)
    if getattr(request.state, "logged_out", False):
        response.delete_cookie(COOKIE_NAME, path="/ui", httponly=True, samesite="strict")
    return response


def _set_cookie(request: Request, response: Response, session: Session) -> None:
    response.set_cookie(
        COOKIE_NAME,
        session.id,
        path="/ui",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


async def _form(request: Request, limit: int) -> dict[str, str]:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise Refusal(400, "forms are sent as application/x-www-form-urlencoded")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise Refusal(400, f"the form is larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Refusal(400, f"the form is larger than {limit} bytes")
        chunks.append(chunk)
    try:
        text = b"".join(chunks).decode("utf-8")
        parsed = parse_qs(text, keep_blank_values=True, strict_parsing=False, max_num_fields=50)
    except (UnicodeDecodeError, ValueError):
        raise Refusal(400, "the form is not UTF-8 form data") from None
    form: dict[str, str] = {}
    for name, values in parsed.items():
        if len(values) != 1 and name != "direction":
            raise Refusal(400, f"the form field {name!r} is given {len(values)} times")
        form[name] = values[-1]
    return form


def _check_csrf(request: Request, session: Session) -> None:
    """A state-changing request must come from this page: the session's CSRF token in the
    form, and the page's own origin when the browser says where it comes from."""
    origin = request.headers.get("origin")
    if origin is not None and origin != "null":
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        if origin.rstrip("/").lower() != own.lower():
            raise Refusal(403, "this form was not sent from this server's page (origin differs)")
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        raise Refusal(403, "this form was not sent from this server's page")
    if not session.csrf_matches(request.state.form.get("csrf")):
        raise Refusal(403, "the form's CSRF token is missing or stale; reload the page and retry")


def page_context(state: State, session: Session) -> render.PageContext:
    return render.PageContext(
        principal=session.principal,
        csrf=session.csrf,
        auth=state.tokens is not None,
        read_only=state.server.config.read_only,
    )


def html_response(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=dict(SECURITY_HEADERS))


def back_to(value: str | None, default: str = "/ui/") -> str:
    """Where to go after an action: a path of this page, never another site."""
    if not value:
        return default
    parts = urlsplit(value)
    if (
        parts.scheme
        or parts.netloc
        or not parts.path.startswith("/ui/")
        or "\\" in value
        or value.startswith("//")
        or any(ord(ch) < 32 for ch in value)
    ):
        return default
    return value


def call_context(state: State, session: Session) -> CallContext:
    connection = state.server.connect(transport="http", principal=session.principal)
    return connection.context
