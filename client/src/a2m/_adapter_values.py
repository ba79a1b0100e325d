"""The one check every adapter runs on what a framework hands it, before anything is
sent: a value A2M cannot carry exactly (NaN, a set, bytes, a tuple, a key that is not
text, a lone surrogate, nesting past 64 levels) is refused with :class:`UnstorableValue`,
naming where it is, rather than a bare ``TypeError``/``RecursionError`` or a silent
change (:func:`a2m_types.json_values.check_json_value` decides, as the server does)."""

from __future__ import annotations

from typing import Any

from a2m_types.json_values import JSONValueError, check_json_value

from .errors import InvalidParams

__all__ = ["UnstorableValue", "check_storable"]


class UnstorableValue(InvalidParams, ValueError):
    """A value the framework accepts but A2M cannot carry exactly; nothing was sent. An
    :class:`~a2m.InvalidParams` and a ``ValueError``, so either ``except`` catches it."""


def check_storable(value: Any, path: str) -> None:
    """Raise :class:`UnstorableValue` naming the first place in ``value`` (called
    ``path``) that A2M cannot store exactly."""
    try:
        check_json_value(value, path)
    except JSONValueError as exc:
        raise UnstorableValue(
            f"{exc}; A2M stores JSON exactly, so nothing was sent",
            data={"path": exc.path, "reason": exc.reason},
        ) from None
