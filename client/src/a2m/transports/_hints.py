"""What an HTTP failure most likely means, so its message and hint name the cause rather
than "check that the server is running" for everything: a URL without a scheme, nothing
listening (connection refused), a host name that does not resolve, a server that is not an
A2M endpoint (404, 501), or a proxy or gateway answering for a server behind it (an HTML
502/503/504)."""

from __future__ import annotations

import errno
import socket
from collections.abc import Mapping
from urllib.parse import urlsplit

from a2m.errors import A2MConnectError

__all__ = ["check_url", "connect_cause", "connect_error", "is_html", "status_cause"]


def check_url(url: str, what: str = "A2M server URL") -> str:
    """``url`` when it has an ``http``/``https`` scheme and a host; otherwise a
    ``ValueError`` saying what is missing and what was probably meant, raised where the
    client is made rather than as a connection failure at the first call."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise ValueError(f"the {what} {url!r} is not a URL ({exc})") from None
    scheme = parts.scheme.lower()
    if "://" not in url or scheme not in ("http", "https"):
        if "://" in url:
            raise ValueError(
                f"the {what} {url!r} has the scheme {parts.scheme!r}; A2M speaks http:// or "
                "https:// (for a server process use A2MClient.stdio(...))"
            )
        guess = "http://" + url.lstrip("/")
        if "/" not in guess[len("http://") :]:
            guess += "/"
        raise ValueError(
            f"the {what} {url!r} has no scheme: did you mean {guess!r} (https:// for TLS)?"
        )
    if not parts.hostname:
        raise ValueError(f"the {what} {url!r} names no host")
    return url


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < 10:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


_REFUSED_TEXT = ("connection refused", "actively refused", "errno 111", "errno 61")
_NAME_TEXT = (
    "name or service not known",
    "nodename nor servname",
    "getaddrinfo failed",
    "temporary failure in name resolution",
    "no address associated",
    "name resolution",
)


def connect_cause(exc: BaseException) -> tuple[str, str] | None:
    """(what happened, what to do) for a failed connect whose cause is recognisable:
    refused, or a host name that does not resolve; ``None`` otherwise."""
    for cause in _causes(exc):
        text = str(cause).lower()
        if isinstance(cause, ConnectionRefusedError) or (
            isinstance(cause, OSError) and cause.errno == errno.ECONNREFUSED
        ):
            return _REFUSED
        if isinstance(cause, socket.gaierror):
            return _UNRESOLVED
        if any(marker in text for marker in _REFUSED_TEXT):
            return _REFUSED
        if any(marker in text for marker in _NAME_TEXT):
            return _UNRESOLVED
    return None


def connect_error(url: str, exc: BaseException, method: str | None) -> A2MConnectError:
    """The :class:`A2MConnectError` for a connect to ``url`` that failed with ``exc``,
    saying why where the cause is recognisable."""
    cause = connect_cause(exc)
    if cause is None:
        return A2MConnectError(f"could not connect to {url}: {exc}", method=method)
    error = A2MConnectError(f"could not connect to {url}: {cause[0]} ({exc})", method=method)
    error.hint = cause[1]
    return error


_REFUSED = (
    "nothing is listening at that address (connection refused)",
    "Start the A2M server, or check the host and port in the URL.",
)
_UNRESOLVED = (
    "the host name does not resolve",
    "Check the host name in the URL (and, for a remote server, the network's DNS).",
)


def _looks_like_html(body: bytes, content_type: str) -> bool:
    if "html" in content_type.lower():
        return True
    start = body[:200].lstrip().lower()
    return start.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<center"))


def is_html(body: bytes, headers: Mapping[str, str]) -> bool:
    """Whether a reply is an HTML page (headers looked up by lower-case name): what a web
    server or proxy that is not A2M answers, where an A2M server answers JSON or text."""
    return _looks_like_html(body, headers.get("content-type") or "")


def status_cause(
    status: int, body: bytes, content_type: str, is_json_error: bool
) -> tuple[str, str] | None:
    """(what the status most likely means, what to do) where that is more than the status
    class says: a non-A2M server (404, 501), or a proxy answering for an unreachable one
    (502, 503, 504 with a body that is not a JSON error); ``None`` otherwise."""
    if is_json_error:
        return None  # the server explained itself; its message says what is wrong
    if status == 404:
        return (
            "nothing answers A2M at this URL: it is not an A2M endpoint",
            "Check the URL: the bundled server takes JSON-RPC at its root "
            "('http://host:port/') and REST under /a2m/v1.",
        )
    if status == 501:
        return (
            "the server does not implement this request: it is not an A2M server",
            "Check the URL and port: something other than an A2M server answered.",
        )
    if status in (502, 503, 504) and _looks_like_html(body, content_type):
        return (
            "a proxy or gateway answered for the server behind it, with an HTML page",
            "The A2M server behind the proxy is down or unreachable from it; check it and "
            "the proxy's upstream settings (502, 503 and 504 are retried).",
        )
    return None
