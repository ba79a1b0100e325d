"""The one exception the protocol layer raises: a JSON-RPC error with an A2M code (§7)."""

from __future__ import annotations

from typing import Any

from a2m_types import ErrorCode

__all__ = ["ProtocolError"]


class ProtocolError(Exception):
    """Raised anywhere below dispatch; dispatch turns it into a JSON-RPC error object."""

    def __init__(self, code: ErrorCode | int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC error object."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def invalid_params(cls, message: str, **data: Any) -> ProtocolError:
        return cls(ErrorCode.INVALID_PARAMS, message, data or None)

    @classmethod
    def capability(cls, capability: str, what: str) -> ProtocolError:
        return cls(
            ErrorCode.CAPABILITY_NOT_SUPPORTED,
            f"{what} needs the '{capability}' capability, which this server does not declare",
            {"capability": capability},
        )

    @classmethod
    def read_only(cls, method: str) -> ProtocolError:
        return cls(
            ErrorCode.READ_ONLY,
            f"{method} refused: this store is read-only and accepts no writes",
            {"method": method},
        )

    @classmethod
    def unknown_tier(cls, tier: str, known: list[str]) -> ProtocolError:
        return cls(
            ErrorCode.UNKNOWN_TIER,
            f"unknown tier {tier!r}; this server has {', '.join(known) or 'no tiers'}",
            {"tier": tier, "tiers": known},
        )

    @classmethod
    def quota(cls, limit: str, maximum: int, got: int) -> ProtocolError:
        return cls(
            ErrorCode.QUOTA_EXCEEDED,
            f"{limit} is {maximum}, got {got}",
            {"limit": limit, "max": maximum, "got": got},
        )
