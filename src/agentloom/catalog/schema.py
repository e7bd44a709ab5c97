"""Schema compilation: JSON Schema 2020-12 checks, local ``$ref`` bundling, closed objects.

``compile_schema`` turns a declared schema into the self-contained schema a
catalog stores (000 §2.1): it checks the 2020-12 metaschema, refuses every
reference it cannot resolve from the schema itself or from the caller's
``local_resources`` (nothing is ever fetched), copies permitted local references
into ``$defs``, and closes SDK / config object schemas. ``ArgumentValidator`` is
the compiled validator the pipeline runs on final arguments.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from agentloom.catalog.fastcheck import compile_fast
from agentloom.catalog.spec import SCHEMA_ORIGINS, SchemaOrigin, freeze_json, thaw_json
from agentloom.errors import CatalogError

DIALECT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_DIALECTS = frozenset({DIALECT_2020_12, DIALECT_2020_12 + "#"})

# Where subschemas live in 2020-12 (the same tables `referencing` uses).
_PREDICATES = frozenset({"if", "not", "contains", "propertyNames"})
_SINGLE = _PREDICATES | {
    "additionalProperties", "items", "unevaluatedItems", "unevaluatedProperties",
    "contentSchema", "then", "else",
}  # fmt: skip
_ARRAYS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_MAPS = frozenset({"$defs", "definitions", "properties", "patternProperties", "dependentSchemas"})
# Evaluated at the parent's instance location: a parent object schema that has
# any of these is closed with unevaluatedProperties, which sees into them.
_IN_PLACE = frozenset({"allOf", "anyOf", "oneOf", "then", "else", "dependentSchemas"})
_REF_KEYWORDS = ("$ref", "$dynamicRef")


def compile_schema(
    schema: Mapping[str, Any],
    *,
    origin: SchemaOrigin,
    local_resources: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Compile a declared schema into a self-contained, checked JSON Schema 2020-12.

    Never mutates ``schema`` or ``local_resources``; never touches the network.

    Args:
        schema: the declared schema (a JSON object).
        origin: ``"sdk"`` and ``"config"`` close every object schema (``type``
            ``"object"`` or ``properties``) that states neither
            ``additionalProperties`` nor ``unevaluatedProperties``: with
            ``additionalProperties: false``, or ``unevaluatedProperties: false``
            when it also combines subschemas in place (``allOf`` / ``anyOf`` /
            ``oneOf`` / ``$ref`` / ``then`` / ``else`` / ``dependentSchemas``),
            whose branches it then covers. Predicates (``if``, ``not``,
            ``contains``, ``propertyNames``) are left as declared. ``"sdk"``
            refuses an explicit ``true`` for either keyword. ``"mcp"`` schemas
            are never changed beyond reference bundling.
        local_resources: documents a ``$ref`` may point into, keyed by URI
            (``"common.json"``, optionally with a ``#/json/pointer`` or
            ``#anchor`` fragment in the reference). Each referenced subschema is
            copied into ``$defs`` under a generated name and the ``$ref``
            rewritten to ``#/$defs/<name>``.

    Returns:
        A new plain ``dict`` whose every ``$ref`` resolves inside itself.

    Raises:
        CatalogError: ``SCHEMA_INVALID`` (not valid 2020-12, with its path),
            ``SCHEMA_DIALECT`` (another ``$schema``), ``SCHEMA_REMOTE_REF`` (a
            reference outside the schema and ``local_resources``),
            ``SCHEMA_UNRESOLVED_REF`` (a reference to nowhere),
            ``SCHEMA_UNSUPPORTED_REF`` (a local reference that cannot be bundled
            safely), ``SCHEMA_OPEN_OBJECT`` (an SDK object stating ``true``).
    """
    if origin not in SCHEMA_ORIGINS:
        raise CatalogError(f"schema origin {origin!r} is not one of {SCHEMA_ORIGINS}")
    root = _plain_object(schema, "schema")
    _check_schema(root, "schema")
    local: dict[str, dict[str, Any]] = {}
    for uri, document in (local_resources or {}).items():
        local[uri] = _plain_object(document, f"local resource {uri!r}")
        _check_schema(local[uri], f"local resource {uri!r}")
    _Bundler(root, local).run()
    _check_refs_resolve(root)
    if origin != "mcp":
        _close_objects(root, "#", origin=origin, covered=False)
    _check_schema(root, "compiled schema")
    return root


class ArgumentValidator:
    """A compiled 2020-12 validator for one compiled schema, built once and reused.

    The schema is copied on construction and must be self-contained (the output
    of ``compile_schema``): references resolve only inside it, nothing is
    retrieved. ``format`` is an annotation, as 2020-12 specifies by default.
    """

    __slots__ = ("_fast", "_validator")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        plain = thaw_json(schema)
        self._validator = Draft202012Validator(plain, registry=Registry())
        self._fast = compile_fast(plain)

    def is_valid(self, instance: Any) -> bool:
        """Whether ``instance`` satisfies the schema."""
        if self._fast is not None and self._fast(instance):
            return True
        return bool(self._validator.is_valid(instance))

    def errors(self, instance: Any) -> list[str]:
        """Problems with ``instance`` as ``"<json path>: <message>"``, sorted; ``[]`` if valid.

        The valid case costs one ``is_valid`` pass and collects nothing.
        """
        if self.is_valid(instance):
            return []
        found = self._validator.iter_errors(instance)
        return sorted(f"{error.json_path}: {error.message}" for error in found)


def pointer(parts: Iterable[Any]) -> str:
    """A JSON pointer fragment (``#/a/0/b~1c``) for a path of keys and indices."""
    escaped = (str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    return "#" + "".join("/" + part for part in escaped)


def _plain_object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise CatalogError(f"{where} must be a JSON object, got {type(value).__name__}")
    plain: dict[str, Any] = thaw_json(freeze_json(value, where=where))
    return plain


def _check_schema(schema: dict[str, Any], where: str) -> None:
    dialect = schema.get("$schema")
    if dialect is not None and dialect not in _DIALECTS:
        raise CatalogError(
            f"{where}: $schema {dialect!r} is not JSON Schema 2020-12; "
            f"declare {DIALECT_2020_12!r} or omit $schema",
            code="SCHEMA_DIALECT",
        )
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise CatalogError(
            f"{where} is not a valid JSON Schema 2020-12 at {pointer(exc.path)}: {exc.message}",
            code="SCHEMA_INVALID",
        ) from None


# -- references ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _RefSite:
    node: dict[str, Any]
    keyword: str
    ref: str
    base: str  # base URI in effect at the node
    path: str  # "#/json/pointer" of the node, for messages
    embedded: bool  # inside a subschema with its own $id

    @property
    def target(self) -> str:
        return urljoin(self.base, self.ref)


def _walk(
    node: Any, path: str, base: str, *, embedded: bool = False, top: bool = True
) -> Iterator[tuple[dict[str, Any], str, str, bool]]:
    """Every object subschema with its path, base URI and whether it is in an embedded $id."""
    if not isinstance(node, dict):
        return
    if isinstance(node.get("$id"), str):
        base = urljoin(base, node["$id"])
        embedded = embedded or not top
    yield node, path, base, embedded
    for keyword, value in node.items():
        children: Iterable[tuple[str, Any]] = ()
        if keyword in _SINGLE:
            children = [(keyword, value)]
        elif keyword in _ARRAYS and isinstance(value, list):
            children = ((f"{keyword}/{i}", item) for i, item in enumerate(value))
        elif keyword in _MAPS and isinstance(value, dict):
            children = ((f"{keyword}/{_esc(k)}", item) for k, item in value.items())
        for sub, child in children:
            yield from _walk(child, f"{path}/{sub}", base, embedded=embedded, top=False)


def _ref_sites(node: Any, path: str, base: str) -> list[_RefSite]:
    return [
        _RefSite(sub, kw, sub[kw], sub_base, sub_path, embedded)
        for sub, sub_path, sub_base, embedded in _walk(node, path, base)
        for kw in _REF_KEYWORDS
        if isinstance(sub.get(kw), str)
    ]


def _esc(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _remote(site: _RefSite, where: str) -> CatalogError:
    return CatalogError(
        f"{where}: {site.keyword} {site.ref!r} at {site.path} points outside the schema; "
        "remote references are never fetched — inline the referenced schema or pass its "
        "document in local_resources",
        code="SCHEMA_REMOTE_REF",
    )


def _unsupported(site: _RefSite, where: str, why: str) -> CatalogError:
    return CatalogError(
        f"{where}: {site.keyword} {site.ref!r} at {site.path} cannot be bundled: {why}",
        code="SCHEMA_UNSUPPORTED_REF",
    )


class _Bundler:
    """Copies subschemas referenced from ``local`` documents into the root's ``$defs``."""

    def __init__(self, root: dict[str, Any], local: dict[str, dict[str, Any]]) -> None:
        self.root = root
        self.local = local
        self.base = root["$id"] if isinstance(root.get("$id"), str) else ""
        self.aliases: dict[str, str] = {}
        for uri, document in local.items():
            self.aliases[uri] = uri
            if isinstance(document.get("$id"), str):
                self.aliases.setdefault(document["$id"], uri)
        self.names: dict[tuple[str, int], str] = {}

    def run(self) -> None:
        sites = _ref_sites(self.root, "#", "")
        internal = {base for _, _, base, _ in _walk(self.root, "#", "")}
        for site in sites:
            uri, fragment = urldefrag(site.target)
            if uri in internal:
                continue  # resolvability is checked on the finished schema
            key = self._local_key(site, uri)
            if key is None:
                raise _remote(site, "schema")
            if site.keyword == "$dynamicRef" or site.embedded:
                why = "a $dynamicRef" if site.keyword == "$dynamicRef" else "inside an $id resource"
                raise _unsupported(site, "schema", f"it is {why}; use a plain $ref outside it")
            site.node[site.keyword] = f"#/$defs/{self._bundle(key, fragment, site)}"

    def _local_key(self, site: _RefSite, resolved_uri: str) -> str | None:
        return self.aliases.get(resolved_uri) or self.aliases.get(urldefrag(site.ref)[0])

    def _bundle(self, key: str, fragment: str, site: _RefSite) -> str:
        target = self._lookup(key, fragment, site)
        identity = (key, id(target))  # "#/$defs/a" and "#a" may name one subschema
        if identity in self.names:
            return self.names[identity]
        where = f"local resource {key!r}"
        copy = thaw_json(target)
        name = self._fresh_name(key, fragment)
        self.names[identity] = name  # before recursing: cycles end here
        self.root.setdefault("$defs", {})[name] = copy
        if not isinstance(copy, dict):
            return name
        if fragment and "$id" in copy:
            raise _unsupported(site, where, f"#{fragment} is a resource with its own $id")
        copy.pop("$id", None)
        copy.pop("$schema", None)
        for node, path, _, embedded in _walk(copy, f"#{fragment}", key):
            if embedded or "$dynamicRef" in node or "$dynamicAnchor" in node:
                bad = _RefSite(node, "$ref", site.ref, key, path, embedded)
                raise _unsupported(bad, where, "it holds an embedded $id or dynamic references")
            node.pop("$anchor", None)  # anchors of the copy are reached via rewritten pointers
        for inner in _ref_sites(copy, f"#{fragment}", key):
            uri, inner_fragment = urldefrag(inner.target)
            inner_key = self._local_key(inner, uri)
            if inner_key is None:
                raise _remote(inner, where)
            inner.node[inner.keyword] = f"#/$defs/{self._bundle(inner_key, inner_fragment, inner)}"
        return name

    def _lookup(self, key: str, fragment: str, site: _RefSite) -> Any:
        document = self.local[key]
        if fragment.startswith("/"):
            current: Any = document
            for token in fragment[1:].split("/"):
                token = unquote(token).replace("~1", "/").replace("~0", "~")
                if isinstance(current, dict) and token in current:
                    current = current[token]
                elif isinstance(current, list) and token.isdigit() and int(token) < len(current):
                    current = current[int(token)]
                else:
                    break
            else:
                return current
        elif not fragment:
            return document
        else:
            for node, _, _, _ in _walk(document, "#", key):
                if node.get("$anchor") == fragment:
                    return node
        raise CatalogError(
            f"schema: {site.keyword} {site.ref!r} at {site.path}: #{fragment} does not exist "
            f"in local resource {key!r}",
            code="SCHEMA_UNRESOLVED_REF",
        )

    def _fresh_name(self, key: str, fragment: str) -> str:
        stem = re.sub(r"\.(json|ya?ml)$", "", key.rstrip("/").rsplit("/", 1)[-1]) or "resource"
        tail = unquote(fragment.rsplit("/", 1)[-1]) if fragment else ""
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{stem}.{tail}" if tail else stem)
        taken = set(self.root.get("$defs", {})) | set(self.names.values())
        candidate, n = name, 1
        while candidate in taken:
            n += 1
            candidate = f"{name}_{n}"
        return candidate


def _check_refs_resolve(root: dict[str, Any]) -> None:
    resolver = Registry().resolver_with_root(DRAFT202012.create_resource(root))
    for site in _ref_sites(root, "#", ""):
        try:
            resolver.lookup(site.target)
        except Unresolvable:
            raise CatalogError(
                f"schema: {site.keyword} {site.ref!r} at {site.path} does not resolve inside "
                "the schema; point it at an existing location (e.g. '#/$defs/<name>')",
                code="SCHEMA_UNRESOLVED_REF",
            ) from None


# -- closed objects -------------------------------------------------------------


def _close_objects(node: Any, path: str, *, origin: SchemaOrigin, covered: bool) -> None:
    """Close object schemas in place; ``covered``: an in-place parent already closes this level."""
    if not isinstance(node, dict):
        return
    stated = [k for k in ("additionalProperties", "unevaluatedProperties") if k in node]
    closes_here = "unevaluatedProperties" in stated
    if _is_object_schema(node):
        for keyword in stated:
            if node[keyword] is True and origin == "sdk":
                raise CatalogError(
                    f"object schema at {path} states {keyword}: true; SDK schemas are closed — "
                    f"list the properties, or give {keyword} a schema for the extra values",
                    code="SCHEMA_OPEN_OBJECT",
                )
        if not stated and not covered:
            in_place = any(k in node for k in (*_IN_PLACE, *_REF_KEYWORDS))
            node["unevaluatedProperties" if in_place else "additionalProperties"] = False
            closes_here = in_place
    for keyword, value in node.items():
        if keyword in _PREDICATES:
            continue
        child_covered = (closes_here or covered) and keyword in _IN_PLACE
        children: Iterable[tuple[str, Any]] = ()
        if keyword in _SINGLE:
            children = [(keyword, value)]
        elif keyword in _ARRAYS and isinstance(value, list):
            children = ((f"{keyword}/{i}", item) for i, item in enumerate(value))
        elif keyword in _MAPS and isinstance(value, dict):
            children = ((f"{keyword}/{_esc(k)}", item) for k, item in value.items())
        for sub, child in children:
            _close_objects(child, f"{path}/{sub}", origin=origin, covered=child_covered)


def _is_object_schema(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node
