"""Server configuration for tests: one way to say "a server declaring these capabilities,
read-only", and that configuration written as the TOML file ``a2m-server --config`` reads,
so a stdio server in a subprocess runs on exactly the configuration an in-process one does."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from a2m_server.config import ServerConfig

__all__ = ["config_toml", "server_config"]


def server_config(
    config: ServerConfig | None = None,
    *,
    capabilities: Iterable[str] | None = None,
    read_only: bool | None = None,
) -> ServerConfig:
    """``config`` (the defaults when ``None``) with the capabilities and read-only flag
    replaced where given, so callers can say just what differs from a default server."""
    from a2m_server.config import ServerConfig

    resolved = config if config is not None else ServerConfig()
    if capabilities is not None:
        if isinstance(capabilities, str):
            raise TypeError("capabilities is a list of names, e.g. ['core', 'keys'], not a str")
        resolved = resolved.with_capabilities(capabilities)
    if read_only is not None:
        resolved = dataclasses.replace(resolved, read_only=read_only)
    return resolved


def config_toml(config: ServerConfig) -> str:
    """``config`` as TOML that :func:`a2m_server.config.load_config` reads back equal.

    ``None`` fields are left out: every optional field of the configuration defaults to
    ``None``, and TOML has no null."""
    scalars: list[str] = []
    tables: list[str] = []
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if value is None:
            continue
        if dataclasses.is_dataclass(value):
            tables.append(f"[{field.name}]\n{_pairs(value)}")
        elif isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
            tables.extend(f"[[{field.name}]]\n{_pairs(item)}" for item in value)
        else:
            scalars.append(f"{field.name} = {_value(value)}\n")
    # TOML needs a document's plain keys before its first table.
    return "".join(scalars) + "\n".join(tables)


def _pairs(record: Any) -> str:
    return "".join(
        f"{field.name} = {_value(getattr(record, field.name))}\n"
        for field in dataclasses.fields(record)
        if getattr(record, field.name) is not None
    )


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        # A JSON string is a TOML basic string, except that TOML also forbids a raw DEL.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, (frozenset, set)):
        return _value(sorted(value))
    if isinstance(value, Mapping):
        # An inline table, e.g. observations.stacks.
        return "{" + ", ".join(f"{_value(str(k))} = {_value(v)}" for k, v in value.items()) + "}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # A record inside a table (an observations grant), as an inline table.
        fields = dataclasses.fields(value)
        pairs = [(f.name, getattr(value, f.name)) for f in fields]
        return "{" + ", ".join(f"{k} = {_value(v)}" for k, v in pairs if v is not None) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as TOML")
