"""Composite A2E keys and the A2M entry keys they become: canonical (item order does not
matter), injective (escaping keeps any two different dicts apart) and readable
(``{"agent": "a1", "topic": "prefs"}`` is ``agent=a1,topic=prefs``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

from a2m_types.rest import MAX_KEY_LENGTH

__all__ = ["decode_key", "encode_key"]

# Everything outside these is percent-escaped, so ',', '=', ':', '/' and '%' in a name or
# value never read as structure, and no control character reaches an A2M key.
_SAFE = "-_.~!*'()@+ "


def _escape(text: str) -> str:
    return quote(text, safe=_SAFE)


def encode_key(key: Mapping[str, Any]) -> str:
    """The entry key of the composite ``key``: its items sorted by name, each ``name=text``
    for a string value and ``name:json`` for any other JSON value (so ``"1"`` and ``1``
    differ), joined by ``,``. Raises ``ValueError`` for an empty key, a value that is not
    JSON, or a key longer than an entry key may be (512 characters) once encoded."""
    if not key:
        raise ValueError("a key needs at least one item")
    items = []
    for name in sorted(key):
        if not isinstance(name, str) or not name:
            raise ValueError("key item names must be non-empty strings")
        value = key[name]
        if isinstance(value, str):
            items.append(f"{_escape(name)}={_escape(value)}")
        else:
            try:
                text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
            except (TypeError, ValueError, RecursionError):
                raise ValueError(f"key item {name!r} is not a JSON value") from None
            items.append(f"{_escape(name)}:{_escape(text)}")
    text = ",".join(items)
    if len(text) > MAX_KEY_LENGTH:
        raise ValueError(f"the key is {len(text)} characters encoded; at most {MAX_KEY_LENGTH}")
    return text


def decode_key(text: str) -> dict[str, Any] | None:
    """The composite key ``text`` encodes, or ``None`` when it is not one this module wrote
    (an entry another adapter keyed)."""
    key: dict[str, Any] = {}
    for item in text.split(","):
        cut = min((i for i in (item.find("="), item.find(":")) if i >= 0), default=-1)
        if cut <= 0:
            return None
        name, value = unquote(item[:cut]), unquote(item[cut + 1 :])
        if name in key:
            return None
        if item[cut] == "=":
            key[name] = value
            continue
        try:
            key[name] = json.loads(value)
        except (ValueError, RecursionError):
            return None
    return key if encode_key(key) == text else None
