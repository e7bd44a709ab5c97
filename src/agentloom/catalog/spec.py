"""Capability specs: the frozen description of one capability in a published catalog.

A ``CapabilitySpec`` is fixed at publication (000 §2.1). Its schemas are stored as
deep, read-only JSON values (``FrozenDict`` / ``FrozenList``): a caller that
mutates the dict it passed in, or tries to mutate the one it reads back, can
never change a validated definition (003 F07). ``thaw_json`` hands out a fresh,
mutable deep copy when one is needed.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, NoReturn, get_args

from agentloom.canonical import canonical_json
from agentloom.errors import CatalogError

CapabilityKind = Literal["builtin", "hosted", "mcp", "script"]
SchemaOrigin = Literal["sdk", "mcp", "config"]
CAPABILITY_KINDS: tuple[str, ...] = get_args(CapabilityKind)
SCHEMA_ORIGINS: tuple[str, ...] = get_args(SchemaOrigin)

EXPOSED_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_ILLEGAL_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_MAX_EXPOSED_NAME = 64


def _read_only(self: object, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is read-only; use thaw_json() for a mutable copy")


class FrozenDict(dict[str, Any]):
    """A read-only JSON object. Equal to a plain ``dict`` with the same content.

    It stays a ``dict`` so ``json.dumps`` and ``jsonschema`` accept it as is;
    every mutating method raises ``TypeError``. ``copy.deepcopy`` returns a
    plain, mutable copy.
    """

    __slots__ = ()

    __setitem__ = _read_only
    __delitem__ = _read_only
    __ior__ = _read_only
    clear = _read_only
    pop = _read_only
    popitem = _read_only
    setdefault = _read_only
    update = _read_only

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(canonical_json(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        thawed: dict[str, Any] = thaw_json(self)
        return thawed


class FrozenList(list[Any]):
    """A read-only JSON array. Equal to a plain ``list`` with the same content."""

    __slots__ = ()

    __setitem__ = _read_only
    __delitem__ = _read_only
    __iadd__ = _read_only
    __imul__ = _read_only
    append = _read_only
    extend = _read_only
    insert = _read_only
    pop = _read_only
    remove = _read_only
    clear = _read_only
    sort = _read_only
    reverse = _read_only

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(canonical_json(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        thawed: list[Any] = thaw_json(self)
        return thawed


def freeze_json(value: Any, *, where: str = "value") -> Any:
    """Return a deep, read-only copy of a JSON value.

    Mappings become ``FrozenDict``, lists and tuples ``FrozenList``; strings,
    finite numbers, booleans and ``None`` are kept. The one JSON freeze of the package
    (``hooks.event.freeze`` is a view of any value, for hooks: see there why).

    Raises:
        CatalogError: ``value`` is not plain JSON (a non-string key, a NaN, a set,
            an arbitrary object); the message names the path under ``where``.
    """
    if isinstance(value, FrozenDict | FrozenList):
        return value
    if isinstance(value, Mapping):
        items: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise CatalogError(f"{where}: object key {key!r} is not a string")
            items[key] = freeze_json(item, where=f"{where}/{key}")
        return FrozenDict(items)
    if isinstance(value, list | tuple):
        return FrozenList(freeze_json(item, where=f"{where}/{i}") for i, item in enumerate(value))
    if isinstance(value, float) and not math.isfinite(value):
        raise CatalogError(f"{where}: {value!r} is not a JSON number")
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise CatalogError(f"{where}: a {type(value).__name__} is not a JSON value")


def thaw_json(value: Any) -> Any:
    """Return a fresh, mutable deep copy (plain ``dict`` / ``list``) of a JSON value."""
    if isinstance(value, Mapping):
        return {key: thaw_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw_json(item) for item in value]
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class CapabilitySpec:
    """One capability as published in a release (000 §2.1).

    ``resource_version_id`` + ``capability_key`` identify the capability;
    ``exposed_name`` is only the name shown to the model and must be unique within
    one resolved catalog. ``handler_ref`` is a trusted registry key, never model
    input. ``input_schema`` / ``output_schema`` are JSON Schema 2020-12, stored as
    deep read-only copies (``FrozenDict``); ``schema_origin`` decides how
    publication compiles them (see ``compile_schema``).

    Raises:
        CatalogError: an empty ``capability_key``, an unknown ``kind`` or
            ``schema_origin``, or a schema that is not a plain JSON object.
    """

    resource_version_id: str
    capability_key: str
    kind: CapabilityKind
    exposed_name: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None = None
    handler_ref: str
    credential_binding_ref: str | None = None
    schema_origin: SchemaOrigin = "sdk"

    def __post_init__(self) -> None:
        key = self.capability_key
        if not isinstance(key, str) or not key:
            raise CatalogError(f"capability_key must be a non-empty string, got {key!r}")
        if self.kind not in CAPABILITY_KINDS:
            raise CatalogError(
                f"capability {key!r}: kind {self.kind!r} is not one of {CAPABILITY_KINDS}"
            )
        if self.schema_origin not in SCHEMA_ORIGINS:
            raise CatalogError(
                f"capability {key!r}: schema_origin {self.schema_origin!r} "
                f"is not one of {SCHEMA_ORIGINS}"
            )
        object.__setattr__(self, "input_schema", _frozen_schema(self.input_schema, key, "input"))
        if self.output_schema is not None:
            frozen = _frozen_schema(self.output_schema, key, "output")
            object.__setattr__(self, "output_schema", frozen)

    def to_json(self) -> dict[str, Any]:
        """Every field as plain JSON (schemas thawed), e.g. for a content digest."""
        return {
            "resource_version_id": self.resource_version_id,
            "capability_key": self.capability_key,
            "kind": self.kind,
            "exposed_name": self.exposed_name,
            "description": self.description,
            "input_schema": thaw_json(self.input_schema),
            "output_schema": thaw_json(self.output_schema),
            "handler_ref": self.handler_ref,
            "credential_binding_ref": self.credential_binding_ref,
            "schema_origin": self.schema_origin,
        }


def _frozen_schema(schema: Any, key: str, which: str) -> FrozenDict:
    if not isinstance(schema, Mapping):
        raise CatalogError(
            f"capability {key!r}: {which}_schema must be a JSON object, got {type(schema).__name__}"
        )
    frozen: FrozenDict = freeze_json(schema, where=f"capability {key!r} {which}_schema")
    return frozen


def legal_exposed_name(capability_key: str) -> str:
    """Derive a legal model-facing tool name from a capability key.

    Deterministic: every character outside ``[A-Za-z0-9_-]`` becomes ``_``
    (``"fs.read"`` -> ``"fs_read"``); a result longer than 64 characters is cut
    to 55 and suffixed with ``_`` and 8 hex digits of the key's SHA-256, so long
    keys stay distinct. The result always matches ``^[A-Za-z0-9_-]{1,64}$``.
    Two keys may still map to one name (``"a.b"``, ``"a_b"``); publication
    reports that as ``DUPLICATE_EXPOSED_NAME``.

    Raises:
        CatalogError: ``capability_key`` is empty.
    """
    if not capability_key:
        raise CatalogError("capability_key must be a non-empty string")
    name = _ILLEGAL_NAME_CHARS.sub("_", capability_key)
    if len(name) > _MAX_EXPOSED_NAME:
        digest = hashlib.sha256(capability_key.encode("utf-8")).hexdigest()[:8]
        name = f"{name[: _MAX_EXPOSED_NAME - 9]}_{digest}"
    return name
