"""Base classes and field helpers shared by every wire model."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

__all__ = ["Count", "Params", "WireModel", "capability_field", "field_capabilities"]


def _whole(value: Any) -> Any:
    # JSON Schema counts 2.0 as an integer; strict params would refuse it, 2.5 stays refused.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Count = Annotated[int, Field(ge=0), BeforeValidator(_whole)]
"""A non-negative integer param; also accepts a float with no fractional part (``2.0``)."""


class WireModel(BaseModel):
    """A value the server sends: unknown fields are kept, never rejected (§2)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict, leaving out fields that are unset or null."""
        return self.model_dump(mode="json", exclude_none=True, by_alias=True)


class Params(BaseModel):
    """A method's parameters: strict types, unknown names ignored (§2)."""

    model_config = ConfigDict(extra="ignore", strict=True, populate_by_name=True)

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict of the parameters the caller actually set (``None`` kept as null)."""
        return self.model_dump(mode="json", exclude_unset=True, by_alias=True)


def capability_field(capability: str, default: Any = None, **kwargs: Any) -> Any:
    """A field that belongs to ``capability``: using it against a server that did not
    declare the capability is an error a client can raise before sending anything."""
    extra = dict(kwargs.pop("json_schema_extra", None) or {})
    extra["x-a2m-capability"] = capability
    return Field(default, json_schema_extra=extra, **kwargs)


def field_capabilities(model: type[BaseModel]) -> dict[str, str]:
    """Map each field of ``model`` that belongs to a capability to that capability's name."""
    found: dict[str, str] = {}
    for name, info in model.model_fields.items():
        extra = info.json_schema_extra
        if isinstance(extra, dict) and isinstance(extra.get("x-a2m-capability"), str):
            found[info.alias or name] = str(extra["x-a2m-capability"])
    return found
