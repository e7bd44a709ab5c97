"""``example_arguments``: a deterministic value valid against a JSON Schema, which the
``test`` model sends as tool arguments and structured answers.

Owns: generating values from a schema (the keywords honoured are listed on
``example_arguments``). Does not own: validating values against a schema (``tools``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["example_arguments"]


def example_arguments(schema: Mapping[str, Any] | bool) -> Any:
    """A deterministic value valid against ``schema`` (JSON Schema 2020-12).

    Honoured: local ``$ref`` (``#/$defs/…``, ``#/definitions/…``), ``const``, ``enum``,
    ``allOf`` (merged), ``anyOf`` / ``oneOf`` (first non-null branch, with the rest of the
    schema), ``type`` (first non-null of a list), required properties (optional ones are left
    out), nested objects and arrays, ``minItems`` / ``maxItems`` / ``uniqueItems``,
    ``minLength`` / ``maxLength``, ``minimum`` / ``maximum`` / exclusive bounds /
    ``multipleOf``, and common string ``format``s. Not honoured: ``pattern`` and ``not``.
    """
    root = schema if isinstance(schema, Mapping) else {}
    return _generate(schema, root, "value", 0, 0)


_FORMATS = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00Z",
    "email": "test@example.com",
    "idn-email": "test@example.com",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uri": "https://example.com/",
    "uri-reference": "https://example.com/",
    "iri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "duration": "P1D",
}


def _generate(schema: Any, root: Mapping[str, Any], name: str, index: int, depth: int) -> Any:
    if depth > 32:
        raise ValueError("schema nests too deeply (or refers to itself without an exit)")
    if not isinstance(schema, Mapping):
        return name if schema is not False else None
    if "$ref" in schema:
        return _generate(_resolve(root, str(schema["$ref"])), root, name, index, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][index % len(schema["enum"])]
    if isinstance(schema.get("allOf"), list):
        return _generate(_merge_all(schema, root), root, name, index, depth + 1)
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            usable = [b for b in branches if not (isinstance(b, Mapping) and b.get("type") == "null")]
            branch = (usable or branches)[0]
            rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
            if rest:  # the branch applies beside the rest (``oneOf: [{required: [argv]}, …]``)
                branch = _merge_all({**rest, "allOf": [branch]}, root)
            return _generate(branch, root, name, index, depth + 1)
    kind = _kind(schema)
    if kind == "object":
        props = schema.get("properties") or {}
        required = [r for r in schema.get("required") or () if isinstance(r, str)]
        return {key: _generate(props.get(key, {}), root, key, 0, depth + 1) for key in required}
    if kind == "array":
        return _array(schema, root, name, depth)
    if kind in ("integer", "number"):
        return _number(schema, kind, index)
    if kind == "boolean":
        return index % 2 == 0
    if kind == "null":
        return None
    return _string(schema, name, index)


def _kind(schema: Mapping[str, Any]) -> str:
    declared = schema.get("type")
    if isinstance(declared, list):
        concrete = [t for t in declared if t != "null"]
        declared = concrete[0] if concrete else "null"
    if isinstance(declared, str):
        return declared
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")):
        return "number"
    return "string"


def _resolve(root: Mapping[str, Any], ref: str) -> Any:
    if not ref.startswith("#"):
        raise ValueError(f"only local $ref is supported, not {ref!r}")
    node: Any = root
    for part in filter(None, ref[1:].split("/")):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            raise ValueError(f"$ref {ref!r} does not resolve")
        node = node[part]
    return node


def _merge_all(schema: Mapping[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in schema["allOf"]:
        part = _resolve(root, part["$ref"]) if isinstance(part, Mapping) and "$ref" in part else part
        if not isinstance(part, Mapping):
            continue
        for key, value in part.items():
            if key == "properties":
                merged["properties"] = {**(merged.get("properties") or {}), **value}
            elif key == "required":
                merged["required"] = list(dict.fromkeys([*(merged.get("required") or []), *value]))
            else:
                merged.setdefault(key, value)
    return merged


def _array(schema: Mapping[str, Any], root: Mapping[str, Any], name: str, depth: int) -> list[Any]:
    prefix = schema.get("prefixItems") or []
    low = int(schema.get("minItems", 0))
    high = schema.get("maxItems")
    count = max(low, len(prefix), 1)
    if high is not None:
        count = min(count, int(high))
    items = schema.get("items", {})
    out = []
    for i in range(count):
        sub = prefix[i] if i < len(prefix) else items
        out.append(_generate(sub, root, name, i, depth + 1))
    return out


def _number(schema: Mapping[str, Any], kind: str, index: int) -> int | float:
    integer = kind == "integer"
    lo, strict_lo = _bound(schema, "minimum", "exclusiveMinimum", max)
    hi, strict_hi = _bound(schema, "maximum", "exclusiveMaximum", min)
    if integer:
        lo = None if lo is None else (math.floor(lo) + 1 if strict_lo else math.ceil(lo))
        hi = None if hi is None else (math.ceil(hi) - 1 if strict_hi else math.floor(hi))
        strict_lo = strict_hi = False
    if lo is None:
        base = 0.0 if hi is None else min(0.0, hi - 1 if strict_hi else hi)
    elif hi is None:
        base = lo + 1 if strict_lo else lo
    else:
        base = (lo + hi) / 2 if strict_lo or strict_hi else lo
    value = base + index
    if hi is not None and (value > hi or (strict_hi and value >= hi)):
        value = base
    step = schema.get("multipleOf")
    if isinstance(step, int | float) and step > 0:
        value = math.ceil(value / step) * step
        if hi is not None and (value > hi or (strict_hi and value >= hi)):
            value = math.floor(hi / step) * step
    return int(value) if integer else float(value)


def _bound(schema: Mapping[str, Any], inclusive: str, exclusive: str, pick: Any) -> tuple[Any, bool]:
    """The binding bound on one side and whether it is exclusive."""
    candidates = [
        (schema[k], k == exclusive) for k in (inclusive, exclusive) if isinstance(schema.get(k), int | float)
    ]
    if not candidates:
        return None, False
    value = pick(v for v, _ in candidates)
    return value, any(strict for v, strict in candidates if v == value)


def _string(schema: Mapping[str, Any], name: str, index: int) -> str:
    fmt = schema.get("format")
    value = _FORMATS.get(fmt, name) if isinstance(fmt, str) else name
    if index and not isinstance(fmt, str):
        value = f"{value}-{index}"
    low = int(schema.get("minLength", 0))
    high = schema.get("maxLength")
    if len(value) < low:
        value = value + "x" * (low - len(value))
    if high is not None and len(value) > int(high):
        value = value[: int(high)] if index == 0 else (str(index) * int(high))[: int(high)]
    return value

