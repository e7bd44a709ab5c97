"""A compiled fast path for the common argument schemas.

Most argument schemas — tool schemas and the model payload schema alike — use only
``type``, ``properties``, ``required``, a boolean ``additionalProperties``, ``items``,
``enum`` / ``const`` of scalars, ``anyOf``, the length, size and numeric bounds (plus
annotations). For those, ``compile_fast`` builds a plain-Python checker with exactly the
JSON Schema 2020-12 meaning of those keywords, as ``jsonschema`` implements it (``bool`` is
never a number, ``1 == 1.0``, lengths count code points); any other keyword, or an ``enum``
/ ``const`` holding an array or an object, makes it return ``None`` and the full validator
is used. The checker only ever answers "valid"; on "invalid" the caller asks the full
validator for the messages, so the fast path can never change an error.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sized
from typing import Any

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
     "$comment", "$schema", "format"}
)
_NUMBER_BOUNDS: dict[str, Callable[[Any, Any], bool]] = {  # keyword → "fails when"
    "minimum": operator.lt, "maximum": operator.gt,
    "exclusiveMinimum": operator.le, "exclusiveMaximum": operator.ge,
}
_SIZE_BOUNDS: dict[str, tuple[type[Sized], Callable[[Any, Any], bool]]] = {
    "minLength": (str, operator.lt), "maxLength": (str, operator.gt),
    "minItems": (list, operator.lt), "maxItems": (list, operator.gt),
}
_KEYWORDS = _ANNOTATIONS | set(_NUMBER_BOUNDS) | set(_SIZE_BOUNDS) | {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
}


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and value.is_integer()


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_TYPES: dict[str, Check] = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


def compile_fast(schema: Any) -> Check | None:
    """A checker for ``schema`` when it only uses the keywords above, else ``None``."""
    if schema is True:
        return _always
    if schema is False:
        return _never
    if not isinstance(schema, Mapping) or not set(schema) <= _KEYWORDS:
        return None
    checks: list[Check] = []
    kind = schema.get("type")
    if kind is not None:
        kinds = [kind] if isinstance(kind, str) else list(kind)
        if not all(isinstance(k, str) and k in _TYPES for k in kinds):
            return None
        checks.append(_any_of([_TYPES[k] for k in kinds]))
    for keyword in ("enum", "const"):
        if keyword in schema:
            members = schema[keyword] if keyword == "enum" else [schema[keyword]]
            equals = _equals_one_of(members)
            if equals is None:
                return None
            checks.append(equals)
    for keyword, fails in _NUMBER_BOUNDS.items():
        if keyword in schema:
            bound = schema[keyword]
            if not _is_number(bound):
                return None
            checks.append(_number_bound(fails, bound))
    for keyword, (kind_of, fails) in _SIZE_BOUNDS.items():
        if keyword in schema:
            bound = schema[keyword]
            if not _is_number(bound):
                return None
            checks.append(_size_bound(kind_of, fails, bound))
    if "items" in schema:
        item = compile_fast(schema["items"])
        if item is None:
            return None
        checks.append(_items_check(item))
    if "anyOf" in schema:
        branches = schema["anyOf"]
        if not isinstance(branches, list) or not branches:
            return None
        subs = [compile_fast(branch) for branch in branches]
        if any(sub is None for sub in subs):
            return None
        checks.append(_any_of([sub for sub in subs if sub is not None]))
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    additional = schema.get("additionalProperties", True)
    if not isinstance(properties, Mapping) or not isinstance(additional, bool):
        return None
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return None
    subchecks: dict[str, Check] = {}
    for name, subschema in properties.items():
        sub = compile_fast(subschema)
        if sub is None:
            return None
        subchecks[name] = sub
    if subchecks or required or not additional:
        checks.append(_object_check(subchecks, tuple(required), additional))
    return _all_of(checks)


def _all_of(checks: list[Check]) -> Check:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) and second(v)
    return lambda v: all(check(v) for check in checks)


def _any_of(subs: list[Check]) -> Check:
    if len(subs) == 1:
        return subs[0]
    if len(subs) == 2:
        first, second = subs
        return lambda v: first(v) or second(v)
    return lambda v: any(sub(v) for sub in subs)


def _equals_one_of(members: Any) -> Check | None:
    """``enum`` / ``const`` over scalars, with ``jsonschema``'s equality: a ``bool`` equals
    only a ``bool``, numbers compare by value, strings by text."""
    if not isinstance(members, list):
        return None
    strings: set[str] = set()
    numbers: set[int | float] = set()
    flags: set[bool] = set()
    null = False
    for member in members:
        if isinstance(member, str):
            strings.add(member)
        elif member is None:
            null = True
        elif isinstance(member, bool):
            flags.add(member)
        elif isinstance(member, int | float):
            numbers.add(member)
        else:  # arrays and objects: deep equality is the full validator's job
            return None

    def check(value: Any) -> bool:
        if isinstance(value, str):
            return value in strings
        if value is None:
            return null
        if isinstance(value, bool):
            return value in flags
        if isinstance(value, int | float):
            return value in numbers
        return False

    return check


def _number_bound(fails: Callable[[Any, Any], bool], bound: Any) -> Check:
    def check(value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return True  # numeric keywords do not apply to other types
        return not fails(value, bound)

    return check


def _size_bound(kind_of: type[Sized], fails: Callable[[Any, Any], bool], bound: Any) -> Check:
    def check(value: Any) -> bool:
        return not isinstance(value, kind_of) or not fails(len(value), bound)

    return check


def _items_check(item: Check) -> Check:
    def check(value: Any) -> bool:
        if not isinstance(value, list):
            return True  # array keywords do not apply to other types
        return all(map(item, value))

    return check


def _object_check(props: dict[str, Check], required: tuple[str, ...], additional: bool) -> Check:
    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True  # object keywords do not apply to other types
        for name in required:
            if name not in value:
                return False
        for name, item in value.items():
            sub = props.get(name)
            if sub is None:
                if not additional:
                    return False
            elif not sub(item):
                return False
        return True

    return check
