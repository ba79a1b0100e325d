"""Keyset page cursors for ``memory/timeline`` (the ``cursor`` extension, declared in
describe as ``timeline.cursor``) and the REST listing.

A cursor names a position in creation order — ``(created_at, rowid)`` of the last record
a page returned — and is bound to the store that issued it and to the listing it pages
(its ``tier``, ``where``, ``key_prefix`` and owner). It is signed with a key derived from
the store's identity, so a cursor that was altered, or issued by another store or for
another listing, is refused with INVALID_PARAMS naming ``cursor`` rather than silently
positioning a read somewhere else. Positions never move (a replacement keeps its
``created_at`` and row), so paging is stable while others write."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from typing import Any

from a2m_server.errors import ProtocolError

__all__ = ["decode_page_cursor", "encode_page_cursor", "listing_digest"]

_PREFIX = "p1."
_MAC_BYTES = 12


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _key(store_id: str) -> bytes:
    return hashlib.sha256(b"a2m-page-cursor\x00" + store_id.encode()).digest()


def listing_digest(**listing: Any) -> str:
    """A short digest of what a listing selects, so its cursors fit no other listing."""
    canonical = json.dumps(listing, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def encode_page_cursor(store_id: str, digest: str, created_at: int, rowid: int) -> str:
    """The cursor continuing after the record at ``(created_at, rowid)``."""
    body = _b64(json.dumps([digest, created_at, rowid], separators=(",", ":")).encode())
    mac = hmac.new(_key(store_id), body.encode(), hashlib.sha256).digest()[:_MAC_BYTES]
    return f"{_PREFIX}{body}.{_b64(mac)}"


def _refuse(why: str) -> ProtocolError:
    return ProtocolError.invalid_params(
        f"cursor {why}; start again with an empty cursor", field="cursor"
    )


def decode_page_cursor(store_id: str, digest: str, cursor: str) -> tuple[int, int]:
    """The ``(created_at, rowid)`` position ``cursor`` names; INVALID_PARAMS for a cursor
    this store did not issue for this listing."""
    try:
        if not cursor.startswith(_PREFIX):
            raise ValueError(cursor)
        body, _, mac = cursor[len(_PREFIX) :].partition(".")
        expected = hmac.new(_key(store_id), body.encode(), hashlib.sha256).digest()[:_MAC_BYTES]
        signed = hmac.compare_digest(_unb64(mac), expected)
        fields = json.loads(_unb64(body)) if signed else None
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise _refuse("is not a page cursor of this server") from None
    if fields is None:
        raise _refuse("was altered, or issued by another server")
    if (
        not isinstance(fields, list)
        or len(fields) != 3
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in fields[1:])
    ):
        raise _refuse("is not a page cursor of this server")
    if fields[0] != digest:
        raise _refuse("was issued for another listing (other tier, where, key_prefix or owner)")
    return fields[1], fields[2]
