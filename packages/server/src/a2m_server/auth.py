"""Bearer-token authentication for the HTTP binding: a token file maps each token to the
principal it authenticates, from which the protocol derives ``owner`` (§6, §6.1).

A token file is a JSON object, ``{"<token>": "<principal>", ...}``. A key written as
``sha256:<64 hex digits>`` is the SHA-256 of the token instead of the token itself, so a
deployment need not keep plaintext tokens on disk::

    {
      "s3cr3t-token": "alice",
      "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08": "bob"
    }
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from pathlib import Path

__all__ = ["TokenFileError", "TokenMap", "hash_token", "load_tokens"]

_HASHED_KEY = re.compile(r"^sha256:([0-9a-fA-F]{64})$")


class TokenFileError(ValueError):
    """A token file that cannot be read or does not have the documented shape."""


def hash_token(token: str) -> str:
    """The ``sha256:<hex>`` key under which ``token`` may be stored in a token file."""
    return "sha256:" + _digest(token).hex()


def _digest(token: str) -> bytes:
    # Header values arrive latin-1 decoded; surrogatepass keeps any str encodable.
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class TokenMap:
    """Which principal each bearer token authenticates.

    Only SHA-256 digests are kept in memory, and :meth:`principal_for` compares digests
    with :func:`hmac.compare_digest` against every entry, so neither the lookup's timing
    nor a memory dump gives a token away."""

    def __init__(self, tokens: Mapping[str, str], *, source: str = "token map") -> None:
        """``tokens`` maps a token, or ``sha256:<hex>`` of one, to a principal; ``source``
        names where it came from in error messages. Raises :class:`TokenFileError`."""
        entries: dict[bytes, str] = {}
        for key, principal in tokens.items():
            if not isinstance(key, str) or not key.strip():
                raise TokenFileError(f"{source}: every token must be a non-empty string")
            if key != key.strip() or any(ch.isspace() for ch in key):
                raise TokenFileError(
                    f"{source}: a token must not contain whitespace (a Bearer header cannot carry it)"
                )
            if not isinstance(principal, str) or not principal.strip():
                raise TokenFileError(
                    f"{source}: the principal for each token must be a non-empty string"
                )
            hashed = _HASHED_KEY.match(key)
            if key.startswith("sha256:") and hashed is None:
                raise TokenFileError(
                    f"{source}: a key starting with 'sha256:' must be followed by 64 hex digits"
                )
            digest = bytes.fromhex(hashed.group(1)) if hashed else _digest(key)
            if entries.get(digest, principal) != principal:
                raise TokenFileError(
                    f"{source}: one token is listed twice with different principals"
                )
            entries[digest] = principal
        self._entries: tuple[tuple[bytes, str], ...] = tuple(entries.items())

    def principal_for(self, token: str) -> str | None:
        """The principal ``token`` authenticates, or ``None`` if it authenticates nobody."""
        if not token:
            return None
        digest = _digest(token)
        found: str | None = None
        # Every entry is compared, whatever matches, so timing does not depend on position.
        for candidate, principal in self._entries:
            if hmac.compare_digest(candidate, digest):
                found = principal
        return found

    @property
    def principals(self) -> frozenset[str]:
        """Every principal some token authenticates."""
        return frozenset(principal for _, principal in self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"TokenMap({len(self)} tokens)"


def load_tokens(path: str | Path) -> TokenMap:
    """Read a token file (see the module docstring); raises :class:`TokenFileError` with a
    message naming the file."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TokenFileError(f"{source}: token file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenFileError(f"{source}: cannot read token file: {exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise TokenFileError(f"{source}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise TokenFileError(
            f'{source}: expected a JSON object mapping token to principal, e.g. {{"token": "alice"}}'
        )
    if not data:
        raise TokenFileError(f"{source}: no tokens; every request would be refused")
    return TokenMap(data, source=source)
