"""REST errors: one exception carrying the draft's error body, built from bad input or from
an A2M :class:`~a2m_server.errors.ProtocolError` by the table in ``docs/rest-binding.md``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from starlette.responses import Response

from a2m_server._web import utf8
from a2m_server.dispatch import encode
from a2m_server.errors import ProtocolError
from a2m_types import REST_ERROR_STATUS, ErrorCode, rest_error_for

__all__ = ["RestError", "json_response"]


def json_response(
    payload: Any, status: int = 200, *, headers: Mapping[str, str] | None = None
) -> Response:
    """``payload`` as an ``application/json`` response (a lone surrogate stays valid UTF-8)."""
    return Response(
        utf8(encode(payload)), status_code=status, media_type="application/json", headers=headers
    )


class RestError(Exception):
    """A refusal with the draft's body: ``{"code", "message"}``, plus ``a2m_code`` and
    ``data`` when there is more to say."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        a2m_code: int | None = None,
        data: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.status = REST_ERROR_STATUS[code]
        self.message = message
        self.a2m_code = a2m_code
        self.data = data
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.a2m_code is not None:
            body["a2m_code"] = self.a2m_code
        if self.data is not None:
            body["data"] = self.data
        return body

    def response(self) -> Response:
        return json_response(self.body(), self.status, headers=self.headers)

    @classmethod
    def from_protocol(cls, exc: ProtocolError) -> RestError:
        """The REST form of an A2M error: its status and name by the mapping table.

        One ``INVALID_PARAMS`` is about the store, not the request: a record joining a
        group that lives in another tier (§3.4). Over HTTP that is ``409 CONFLICT``."""
        _, name = rest_error_for(exc.code)
        data = exc.data
        if exc.code == ErrorCode.INVALID_PARAMS and isinstance(data, dict) and "group" in data:
            name = "CONFLICT"
        return cls(name, exc.message, a2m_code=exc.code, data=data)

    @classmethod
    def invalid_body(cls, message: str, **data: Any) -> RestError:
        return cls("INVALID_BODY", message, data=data or None)

    @classmethod
    def from_validation(cls, exc: ValidationError, what: str) -> RestError:
        """A body or parameter that failed its model: ``INVALID_TYPE`` when ``type`` alone is
        at fault (the draft's own code for it), else ``INVALID_BODY`` naming each field."""
        found = exc.errors(include_url=False)
        errors = [
            {
                "field": ".".join(str(part) for part in error["loc"]) or what,
                "message": str(error["msg"]),
            }
            for error in found
        ]
        if found and all(e["loc"] == ("type",) and e["type"] != "missing" for e in found):
            return cls(
                "INVALID_TYPE",
                "type must be one of working, episodic, semantic, procedural, external",
                data={"errors": errors},
            )
        summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors[:5])
        return cls("INVALID_BODY", f"invalid {what}: {summary}", data={"errors": errors})

    @classmethod
    def capability(cls, capability: str, what: str) -> RestError:
        return cls.from_protocol(ProtocolError.capability(capability, what))
