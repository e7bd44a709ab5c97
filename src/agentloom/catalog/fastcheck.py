"""A compiled fast path for the common, simple argument schema.

Most tool schemas use only ``type``, ``properties``, ``required`` and a boolean
``additionalProperties`` (plus annotations). For those, ``compile_fast`` builds a
plain-Python checker with exactly the JSON Schema 2020-12 meaning of those
keywords; any other keyword makes it return ``None`` and the full validator is
used. The checker only ever answers "valid"; on "invalid" the caller asks the full
validator for the messages, so the fast path can never change an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
     "$comment", "$schema", "format"}
)
_KEYWORDS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties"}


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and value.is_integer()


_TYPES: dict[str, Check] = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


def compile_fast(schema: Any) -> Check | None:
    """A checker for ``schema`` when it only uses the simple keywords, else ``None``."""
    if schema is True:
        return lambda v: True
    if not isinstance(schema, Mapping) or not set(schema) <= _KEYWORDS:
        return None
    checks: list[Check] = []
    kind = schema.get("type")
    if kind is not None:
        kinds = [kind] if isinstance(kind, str) else list(kind)
        if not all(isinstance(k, str) and k in _TYPES for k in kinds):
            return None
        tests = [_TYPES[k] for k in kinds]
        checks.append(tests[0] if len(tests) == 1 else (lambda v: any(t(v) for t in tests)))
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
    return lambda v: all(check(v) for check in checks)


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
