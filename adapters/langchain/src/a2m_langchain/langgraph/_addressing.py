"""Where a LangGraph item lives in A2M: a namespace tuple and a key become one A2M key,
``{segment}/{segment}/…/{key}``, by an escaping that leaves ordinary names as they are and
gives every other tuple of strings an address of its own.

A2M namespaces are ``/``-separated segments of ``[a-z0-9_-]``, so a segment in that
alphabet is written as it is: ``("users", "alice-1")`` is the A2M namespace
``users/alice-1``, the one an agent of any other framework writing there uses. Anything
else — capitals, ``/``, unicode, the empty string, a REST route word — is written as
``--`` followed by the segment with each byte outside ``[a-z0-9_]`` spelled ``-xx``
(lower-case hex of its UTF-8): ``"Alice"`` is ``---41lice``, ``"a/b"`` is ``--a-2fb``,
``""`` is ``--``. No plain segment starts with ``--``, so the two forms never meet.

A key may hold any character but ``/`` and control characters, and may not be ``.`` or
``..``; a key outside that, or starting with ``%``, is written ``%`` followed by the key
with ``%``, ``/`` and control characters percent-escaped: ``"a/b"`` is ``%a%2fb``.

A label whose escape would pass 64 characters becomes ``--_`` and a hash of it (a key past
256, ``%_`` and a hash), forms no escape produces; the record then carries the real
names in ``metadata.langgraph_namespace`` / ``metadata.langgraph_key``, so every tuple of
strings is addressable and prefix searches still narrow on the hashed segment."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from a2m_types.rest import MAX_KEY_LENGTH, MAX_NAMESPACE_LENGTH, ROUTE_WORDS

__all__ = [
    "NAMES_KEY",
    "NAMES_NAMESPACE",
    "AddressError",
    "decode_key",
    "decode_segment",
    "encode_key",
    "encode_segment",
    "item_address",
    "names_needed",
    "namespace_path",
    "parse_address",
]

_PLAIN_SEGMENT = re.compile(r"[a-z0-9_-]+")
_KEPT_IN_SEGMENT = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")
_SEGMENT_MARK = "--"
_KEY_MARK = "%"
_ESCAPED_IN_KEY = re.compile(r"[%/\x00-\x1f\x7f]")
_KEY_ESCAPE = re.compile(r"%([0-9a-f]{2})")
_SEGMENT_ESCAPE = re.compile(r"-([0-9a-f]{2})")
_SEGMENT_BODY = re.compile(r"(?:[a-z0-9_]|-[0-9a-f]{2})*")
_SEGMENT_LIMIT = 64
_KEY_LIMIT = 256
NAMES_NAMESPACE = "langgraph_namespace"
NAMES_KEY = "langgraph_key"


class AddressError(ValueError):
    """A namespace or key whose A2M address would break A2M's limits (a namespace of at
    most 256 characters, a key of at most 512, once escaped)."""


def _check_text(text: str, what: str) -> None:
    """Refuse a label or key holding a lone surrogate: no UTF-8 text, so no A2M address,
    can carry it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise AddressError(
            f"{what} {text!r} holds a lone surrogate ({text[exc.start]!r}), which UTF-8 "
            "text, and so an A2M address, cannot carry"
        ) from None


@functools.lru_cache(maxsize=4096)
def encode_segment(segment: str) -> str:
    """The A2M namespace segment for one LangGraph namespace label (a store names a few
    namespaces over and over, so each label is escaped once)."""
    _check_text(segment, "namespace label")
    if (
        _PLAIN_SEGMENT.fullmatch(segment)
        and not segment.startswith(_SEGMENT_MARK)
        and segment not in ROUTE_WORDS
    ):
        return segment
    body = "".join(
        char if char in _KEPT_IN_SEGMENT else "".join(f"-{b:02x}" for b in char.encode())
        for char in segment
    )
    if len(body) + len(_SEGMENT_MARK) > _SEGMENT_LIMIT:
        return _SEGMENT_MARK + "_" + _digest(segment)
    return _SEGMENT_MARK + body


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _hashed_segment(segment: str) -> bool:
    return segment.startswith(_SEGMENT_MARK + "_")


def _hashed_key(key: str) -> bool:
    return key.startswith(_KEY_MARK + "_")


def decode_segment(segment: str) -> str:
    """The label an A2M namespace segment stands for (a segment that is no escape, such as
    one another framework chose, stands for itself)."""
    body = segment[len(_SEGMENT_MARK) :]
    if not segment.startswith(_SEGMENT_MARK) or not _SEGMENT_BODY.fullmatch(body):
        return segment
    raw = bytearray()
    for part in re.split(r"(-[0-9a-f]{2})", body):
        raw += bytes.fromhex(part[1:]) if _SEGMENT_ESCAPE.fullmatch(part) else part.encode()
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return segment


def encode_key(key: str) -> str:
    """The A2M entry key for one LangGraph item key."""
    _check_text(key, "key")
    plain = (
        key not in ("", ".", "..")
        and not key.startswith(_KEY_MARK)
        and not _ESCAPED_IN_KEY.search(key)
    )
    encoded = (
        key if plain else _KEY_MARK + _ESCAPED_IN_KEY.sub(lambda m: f"%{ord(m.group()):02x}", key)
    )
    if len(encoded) > _KEY_LIMIT:
        return _KEY_MARK + "_" + _digest(key)
    return encoded


def names_needed(namespace: Sequence[str], key: str) -> dict[str, Any]:
    """The ``metadata`` a record needs to name its item, when a label or the key was too
    long to spell out in the address (else nothing)."""
    if any(_hashed_segment(encode_segment(label)) for label in namespace) or _hashed_key(
        encode_key(key)
    ):
        return {NAMES_NAMESPACE: list(namespace), NAMES_KEY: key}
    return {}


def decode_key(key: str) -> str:
    """The item key an A2M entry key stands for."""
    if not key.startswith(_KEY_MARK):
        return key
    return _KEY_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), key[len(_KEY_MARK) :])


def namespace_path(namespace: Sequence[str], root: Sequence[str] = ()) -> str:
    """The A2M namespace of a LangGraph namespace tuple beneath ``root`` (already plain
    segments); ``""`` for the empty tuple with no root."""
    path = "/".join([*root, *(encode_segment(label) for label in namespace)])
    if len(path) > MAX_NAMESPACE_LENGTH:
        raise AddressError(
            f"namespace {tuple(namespace)!r} is {len(path)} characters once escaped "
            f"({path[:40]}…); A2M namespaces hold at most {MAX_NAMESPACE_LENGTH}"
        )
    return path


def item_address(namespace: Sequence[str], key: str, root: Sequence[str] = ()) -> str:
    """The A2M key of item ``key`` in ``namespace``."""
    encoded = encode_key(key)
    if len(encoded) > MAX_KEY_LENGTH:
        raise AddressError(
            f"key {key[:40]!r}… is {len(encoded)} characters once escaped; A2M entry keys "
            f"hold at most {MAX_KEY_LENGTH}"
        )
    return f"{namespace_path(namespace, root)}/{encoded}"


def parse_address(
    a2m_key: str, metadata: Mapping[str, Any] | None, root: Sequence[str] = ()
) -> tuple[tuple[str, ...], str] | None:
    """The ``(namespace, key)`` of the record at ``a2m_key``, or ``None`` when it is no
    item: not beneath ``root``, or with no namespace left once ``root`` is taken off.

    ``metadata.namespace`` (what adapters write) says where the namespace ends when the
    key lies beneath it; otherwise the key's last segment is the item key."""
    named = _named(a2m_key, metadata, root)
    if named is not None:
        return named
    stated = metadata.get("namespace") if metadata else None
    if isinstance(stated, str) and stated and a2m_key.startswith(stated + "/"):
        space, key = stated, a2m_key[len(stated) + 1 :]
    else:
        space, _, key = a2m_key.rpartition("/")
    if not space or not key:
        return None
    namespace = _decoded_namespace(space, tuple(root))
    if namespace is None:
        return None
    return namespace, decode_key(key)


@functools.lru_cache(maxsize=4096)
def _decoded_namespace(space: str, root: tuple[str, ...]) -> tuple[str, ...] | None:
    """The namespace tuple of A2M namespace ``space`` beneath ``root`` (``None`` when it
    is not beneath it, or is ``root`` itself). Every record a search returns shares a
    few namespaces, so each is decoded once."""
    segments = space.split("/")
    if tuple(segments[: len(root)]) != root or len(segments) == len(root):
        return None
    return tuple(decode_segment(s) for s in segments[len(root) :])


def _named(
    a2m_key: str, metadata: Mapping[str, Any] | None, root: Sequence[str]
) -> tuple[tuple[str, ...], str] | None:
    names, key = (metadata or {}).get(NAMES_NAMESPACE), (metadata or {}).get(NAMES_KEY)
    if not (isinstance(names, list) and names and isinstance(key, str)):
        return None
    if not all(isinstance(label, str) for label in names):
        return None
    try:
        if item_address(names, key, root) != a2m_key:
            return None
    except AddressError:
        return None
    return tuple(names), key
