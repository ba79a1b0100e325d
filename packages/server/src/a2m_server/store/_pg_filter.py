"""A :class:`RecordFilter` as a PostgreSQL WHERE clause, with the same meaning as the
SQLite store's (``where`` equality on fields and metadata, scopes, groups, tags, keys)."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

from a2m_types import parse_timestamp, to_epoch_ms
from a2m_types.filters import Condition

from ._json_text import dump_json
from ._where import Conditions, Dialect
from .base import RecordFilter, Scope

__all__ = ["Sql", "add_scope", "build_filter", "dump_json", "jsonb_text"]

_TEXT_COLUMNS = {
    "id": "id",
    "content": "content",
    "role": "role",
    "group": "grp",
    "tier": "tier",
    "owner": "owner",
    "session": "session",
    "key": "key",
    "uri": "uri",
    "media_type": "media_type",
}
_NUMBER_COLUMNS = {
    # revision is carried only by a record with a key (§3.6): NULL on the others.
    "revision": "(CASE WHEN r.key IS NULL THEN NULL ELSE r.revision END)",
    "salience": "r.salience",
    "access_count": "r.access_count",
}
"""SQL for the number fields. Salience is a double, compared as one (a cast to numeric
would keep 15 digits of it); the integers compare as numeric, exactly."""
_TIME_COLUMNS = {
    "created_at": "created_at",
    "accessed_at": "accessed_at",
    "updated_at": "updated_at",
}


# A JSON escape of NUL: ``\u0000`` after an even run of backslashes (an odd run would
# make its first backslash part of an escaped backslash).
_NUL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")

# SQL: text as :mod:`._pg_adapt` escapes it (NUL as U+E000 U+E002, U+E000 as U+E000
# U+E001) turned into a form that orders (and equals) as the text itself does: NUL as
# U+0001 U+0001 and U+0001 as U+0001 U+0002, a prefix code keeping code-point order.
_ORDERED = (
    "replace(replace(replace({}, chr(1), chr(1) || chr(2)), chr(57344) || chr(57346), "
    "chr(1) || chr(1)), chr(57344) || chr(57345), chr(57344))"
)


def jsonb_text(value: Any) -> str:
    """``value`` as text for a ``jsonb`` parameter. jsonb cannot hold U+0000: each NUL is
    left unescaped here, so that the connection's string escaping (:mod:`._pg_adapt`)
    writes it, in keys and values alike, as it writes NUL in any text column. Stored
    metadata's jsonb copy and every value compared with it so hold the same injective
    form, and compare equal exactly when the values do."""
    text = dump_json(value)
    if "\\u0000" not in text:
        return text
    return _NUL_ESCAPE.sub(lambda found: found.group(1) + "\x00", text)


def _escapes(text: str) -> bool:
    """Whether the connection's escaping changes ``text`` (it holds NUL or U+E000)."""
    return "\x00" in text or "\ue000" in text


def _text_order(
    column: str, lead: list[Any], symbol: str, operand: str, *, nullable: bool = True
) -> tuple[str, list[Any]]:
    """SQL: the text ``column`` (as stored, escaped; ``lead`` its parameters; never NULL
    unless ``nullable``) compares with ``operand`` (escaped as it is sent) as the
    unescaped texts do, by code point. Text that escaping left alone compares as it is;
    only where either side holds an escape is each turned into the order-keeping form."""
    ordered = f'{_ORDERED.format(column)} COLLATE "C" {symbol} {_ORDERED.format("%s")}'
    if _escapes(operand):
        return f"coalesce({ordered}, FALSE)", [*lead, operand]
    # Escaping only ever puts U+E000 where a character at or below it was, so text at or
    # above an operand it left alone stays so once escaped: the escaped comparison runs
    # first, the exact one only on the rows it lets through that hold an escape. Below the
    # operand is the rest of the text: not at or above it.
    above = {">": ">", ">=": ">=", "<": ">=", "<=": ">"}[symbol]
    ordered = f'{_ORDERED.format(column)} COLLATE "C" {above} {_ORDERED.format("%s")}'
    clause = (
        f'coalesce({column} COLLATE "C" {above} %s AND '
        f"(strpos({column}, chr(57344)) = 0 OR {ordered}), FALSE)"
    )
    params = [*lead, operand, *lead, *lead, operand]
    if above == symbol:
        return clause, params
    if not nullable:
        return f"(NOT {clause})", params
    return f"({column} IS NOT NULL AND NOT {clause})", [*lead, *params]


class Sql(Conditions):
    """Conditions for PostgreSQL (``%s`` placeholders), whose literals are words."""

    TRUE = "TRUE"
    FALSE = "FALSE"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_SYMBOLS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}

# A path segment PostgreSQL's ``#>`` would read as an array index (strtol: blanks, a
# sign, digits); this errs wide, which only costs a type test.
_INDEX_LIKE = re.compile(r"\s*[+-]?\d")


def _meta(path: list[str], *, text: bool = False) -> tuple[str, list[Any]]:
    """SQL for the metadata value at ``path``, NULL where there is none. A path names keys
    only (``a.0`` is ``metadata["a"]["0"]``), but ``#>`` steps into an array at a segment
    that reads as an index ("0", "-1"): such a step is taken only inside an object."""
    operator = "#>>" if text else "#>"
    guarded = [i for i in range(1, len(path)) if _INDEX_LIKE.match(path[i])]
    if not guarded:
        return f"(r.meta {operator} %s)", [path]
    tests = " AND ".join("jsonb_typeof(r.meta #> %s) = 'object'" for _ in guarded)
    return (
        f"(CASE WHEN {tests} THEN r.meta {operator} %s END)",
        [*(path[:i] for i in guarded), path],
    )


def _exact_decimal(value: int | float) -> str:
    """``value`` as numeric text holding exactly its value (a float's binary value, not
    its shortest spelling), for comparison with an integer column."""
    return str(value) if isinstance(value, int) else str(Decimal(value))


def _double_equal(value: int | float) -> float | None:
    """The double equal to ``value``, or ``None`` when no double is."""
    try:
        double = float(value)
    except OverflowError:
        return None
    return double if double == value else None


def _double_ordering(symbol: str, operand: int | float) -> tuple[str, float] | bool:
    """The comparison of a double with ``operand`` as a comparison of doubles, exact for
    an integer no double holds (between the two doubles around it); ``True``/``False``
    for an integer beyond every double."""
    try:
        double = float(operand)
    except OverflowError:
        return (operand < 0) == (symbol in (">", ">="))
    if double == operand:
        return symbol, double
    below = double if double < operand else math.nextafter(double, -math.inf)
    above = double if double > operand else math.nextafter(double, math.inf)
    return (">=", above) if symbol in (">", ">=") else ("<=", below)


def _moment(value: Any) -> int | None:
    try:
        return to_epoch_ms(parse_timestamp(value)) if isinstance(value, str) else None
    except ValueError:
        return None


def _equality(condition: Condition, values: list[Any]) -> tuple[str, list[Any]]:
    """Any of ``values`` (§5.2): SQL that is true or false, never NULL; a list of
    scalars is one ``= ANY(array)``."""
    alternatives: list[str] = []
    params: list[Any] = []
    scalars: list[Any] = []
    name = condition.target[0]
    if condition.kind == "time":
        column = f"r.{_TIME_COLUMNS[name]}"
        for value in values:
            moment = _moment(value)
            if value is None:
                alternatives.append(f"{column} IS NULL")
            elif moment is not None:
                scalars.append(moment)
        if scalars:
            alternatives.append(f"({column} IS NOT NULL AND {column} = ANY(%s::bigint[]))")
            params.append(scalars)
    elif condition.kind == "field" and name in _TEXT_COLUMNS:
        column = f"r.{_TEXT_COLUMNS[name]}"
        for value in values:
            if value is None:
                alternatives.append(f"{column} IS NULL")
            elif isinstance(value, str):
                scalars.append(value)  # a number or a boolean never equals a text field
        if scalars:
            alternatives.append(f"({column} IS NOT NULL AND {column} = ANY(%s::text[]))")
            params.append(scalars)
    elif condition.kind == "field":
        column = _NUMBER_COLUMNS[name]
        doubles = name == "salience"
        for value in values:
            if value is None:
                alternatives.append(f"{column} IS NULL")
            elif not _is_number(value):
                continue  # a string or a boolean never equals a number field
            elif not doubles:
                scalars.append(_exact_decimal(value))
            elif (double := _double_equal(value)) is not None:
                scalars.append(double)
        if scalars:
            kind = "float8" if doubles else "numeric"
            cast = "" if doubles else "::numeric"
            alternatives.append(f"coalesce({column}{cast} = ANY(%s::{kind}[]), FALSE)")
            params.append(scalars)
    else:
        value_sql, value_params = _meta(list(condition.target))
        for value in values:
            if value is None:
                alternatives.append(f"coalesce(jsonb_typeof({value_sql}), 'null') = 'null'")
                params += value_params
            elif isinstance(value, bool):
                alternatives.append(f"coalesce({value_sql} = %s::jsonb, FALSE)")
                params += [*value_params, "true" if value else "false"]
            elif _is_number(value) or isinstance(value, str):
                scalars.append(jsonb_text(value))
        if scalars:
            # Containers and booleans never equal a scalar; numbers compare as numbers.
            alternatives.append(
                f"coalesce(jsonb_typeof({value_sql}) IN ('number', 'string') "
                f"AND {value_sql} = ANY(%s::jsonb[]), FALSE)"
            )
            params += [*value_params, *value_params, scalars]
    return "(" + (" OR ".join(alternatives) or "FALSE") + ")", params


def _ordering(condition: Condition) -> tuple[str, list[Any]]:
    symbol = _SYMBOLS[condition.op]
    operand = condition.operand
    name = condition.target[0]
    if condition.kind == "time":
        moment = _moment(operand)
        if moment is None:
            return "FALSE", []
        return f"(r.{_TIME_COLUMNS[name]} IS NOT NULL AND r.{_TIME_COLUMNS[name]} {symbol} %s)", [
            moment
        ]
    numeric = not isinstance(operand, str)
    if condition.kind == "field":
        if name in _NUMBER_COLUMNS:
            if not numeric:
                return "FALSE", []
            column = _NUMBER_COLUMNS[name]
            if name != "salience":
                compare = f"{column}::numeric {symbol} %s::numeric"
                return f"coalesce({compare}, FALSE)", [_exact_decimal(operand)]
            as_doubles = _double_ordering(symbol, operand)
            if isinstance(as_doubles, bool):
                return ("TRUE" if as_doubles else "FALSE"), []
            return f"coalesce({column} {as_doubles[0]} %s::float8, FALSE)", [as_doubles[1]]
        if numeric:
            return "FALSE", []
        # Text compares as SQLite compares it: by code point (bytewise in UTF-8).
        return _text_order(f"r.{_TEXT_COLUMNS[name]}", [], symbol, operand)
    value_sql, value_params = _meta(list(condition.target))
    text_sql, text_params = _meta(list(condition.target), text=True)
    if numeric:
        return (
            f"coalesce(jsonb_typeof({value_sql}) = 'number' AND "
            f"{text_sql}::numeric {symbol} %s::numeric, FALSE)",
            [*value_params, *text_params, str(operand)],
        )
    compare, params = _text_order(text_sql, text_params, symbol, operand, nullable=False)
    return f"coalesce(jsonb_typeof({value_sql}) = 'string' AND {compare}, FALSE)", [
        *value_params,
        *params,
    ]


def _presence(condition: Condition) -> tuple[str, list[Any]]:
    if condition.kind == "metadata":
        test = "<>" if condition.operand else "="
        value_sql, value_params = _meta(list(condition.target))
        return f"(coalesce(jsonb_typeof({value_sql}), 'null') {test} 'null')", value_params
    name = condition.target[0]
    if name in _NUMBER_COLUMNS:
        column = _NUMBER_COLUMNS[name]
    else:
        column = f"r.{_TIME_COLUMNS.get(name) or _TEXT_COLUMNS[name]}"
    return f"({column} {'IS NOT NULL' if condition.operand else 'IS NULL'})", []


_POSTGRES = Dialect(equality=_equality, ordering=_ordering, presence=_presence)


def _key_bounds(prefix: str) -> tuple[str, str]:
    # Segment-wise ranges: '0' is the character after '/'; keys compare bytewise (COLLATE C).
    return prefix + "/", prefix + "0"


def build_filter(where: RecordFilter, now: int) -> Sql:
    sql = Sql()
    sql.add("(r.expires_at IS NULL OR r.expires_at > %s)", now)
    if where.ids is not None:
        sql.add("r.id = ANY(%s::text[])", list(where.ids))
    if where.tier is not None:
        sql.add("r.tier = %s", where.tier)
    if where.tiers is not None:
        sql.add("r.tier = ANY(%s::text[])", list(where.tiers))
    if where.has_session:
        if where.session is None:
            sql.add("r.session IS NULL")
        else:
            sql.add("r.session = %s", where.session)
    if where.key_prefix is not None:
        prefix = where.key_prefix.rstrip("/")
        if prefix:
            low, high = _key_bounds(prefix)
            sql.add(
                '(r.key = %s OR (r.key COLLATE "C" >= %s AND r.key COLLATE "C" < %s))',
                prefix,
                low,
                high,
            )
        else:
            sql.add("r.key IS NOT NULL")
    if where.scope is not None:
        add_scope(sql, where.scope, owner_column="r.owner", tier_column="r.tier")
    if where.groups is not None:
        owners = [owner or "" for owner, _ in where.groups]
        groups = [group for _, group in where.groups]
        sql.add(
            "(coalesce(r.owner, ''), r.grp) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
            owners,
            groups,
        )
    for tag in where.tags_all or ():
        # As SQLite's json_each: the elements of an array, or a lone scalar itself.
        sql.add(
            "(CASE jsonb_typeof(r.meta -> 'tags') WHEN 'array' THEN r.meta -> 'tags' @> %s::jsonb "
            "ELSE r.meta -> 'tags' = %s::jsonb END)",
            jsonb_text([tag]),
            jsonb_text(tag),
        )
    if where.with_embedding:
        sql.add("r.dims IS NOT NULL")
    if where.earned_at_least is not None:
        sql.add("r.access_count + r.salience >= %s", where.earned_at_least)
    for name, expected in (where.where or {}).items():
        clause, params = _POSTGRES.clause(name, expected)
        sql.add(clause, *params)
    for beneath in (where.key_under, where.key_child_of):
        if beneath is not None:
            low, high = _key_bounds(beneath.rstrip("/"))
            sql.add('(r.key COLLATE "C" > %s AND r.key COLLATE "C" < %s)', low, high)
    if where.key_child_of is not None:
        depth = len(where.key_child_of.rstrip("/")) + 2
        sql.add("strpos(substr(r.key, %s), '/') = 0", depth)
    if where.after is not None:
        sql.add("(r.created_at, r.rowid) > (%s, %s)", *where.after)
    if where.has_uri is not None:
        sql.add("r.uri IS NOT NULL" if where.has_uri else "r.uri IS NULL")
    if where.any_of is not None:
        branches = [build_filter(branch, now) for branch in where.any_of]
        clause = " OR ".join(f"({branch.text()})" for branch in branches)
        sql.add(f"({clause or 'FALSE'})", *[p for branch in branches for p in branch.params])
    return sql


def add_scope(sql: Sql, scope: Scope, *, owner_column: str, tier_column: str) -> None:
    if scope.include_shared:
        clause = f"({owner_column} = %s OR {owner_column} IS NULL"
        params: list[Any] = [scope.owner]
        if scope.shared_tiers:
            clause += f" OR {tier_column} = ANY(%s::text[])"
            params.append(list(scope.shared_tiers))
        sql.add(clause + ")", *params)
    else:
        sql.add(f"{owner_column} = %s", scope.owner)
