"""Protocol identity and version compatibility (§9)."""

from __future__ import annotations

import re

__all__ = [
    "EVENT_NOTIFICATION",
    "PROTOCOL_HEADER",
    "PROTOCOL_VERSION",
    "is_compatible",
    "parse_version",
]

PROTOCOL_VERSION = "a2m/0.1"
"""The protocol this package describes."""

PROTOCOL_HEADER = "A2M-Protocol-Version"
"""The HTTP header a client sends on every POST (§8.3.2)."""

EVENT_NOTIFICATION = "memory/event"
"""The method name of a pushed event notification (§4.13)."""

_VERSION = re.compile(r"^a2m/(\d+)\.(\d+)$")


def parse_version(version: str) -> tuple[int, int]:
    """``"a2m/0.1"`` → ``(0, 1)``; raises ``ValueError`` for anything else."""
    match = _VERSION.match(version.strip())
    if match is None:
        raise ValueError(f"not an A2M protocol version: {version!r} (expected e.g. 'a2m/0.1')")
    return int(match.group(1)), int(match.group(2))


def is_compatible(ours: str, theirs: str) -> bool:
    """Whether two versions interoperate: exact minor match below 1.0, same major after."""
    try:
        our_major, our_minor = parse_version(ours)
        their_major, their_minor = parse_version(theirs)
    except ValueError:
        return False
    if our_major != their_major:
        return False
    return our_major >= 1 or our_minor == their_minor
