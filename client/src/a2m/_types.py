"""The sentinel that tells "not passed" apart from ``None`` (so a caller can still send null),
and the shapes of what the clients accept."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias

from typing_extensions import override

from a2m_types import RecordInput

__all__ = ["NOT_GIVEN", "NotGiven", "RecordLike", "Records"]


class NotGiven:
    """The type of :data:`NOT_GIVEN`: an argument the caller did not pass."""

    _instance: NotGiven | None = None

    def __new__(cls) -> NotGiven:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> Literal[False]:
        return False

    @override
    def __repr__(self) -> str:
        return "NOT_GIVEN"

    def __reduce__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN: Final = NotGiven()
"""Default of every optional argument: the parameter is left out of the request entirely."""

RecordLike: TypeAlias = str | RecordInput | Mapping[str, Any]
"""A record to write: a ``str`` (its content), a :class:`~a2m_types.RecordInput`, or a dict."""

Records: TypeAlias = RecordLike | Sequence[RecordLike]
"""One :data:`RecordLike`, or a list of them."""
