"""The capability registry: publishes releases and resolves role / node catalogs (000 §2.1).

``publish`` compiles a release's specs once; every error a catalog can have is
found there, never mid-run. A release is identified by ``release_id`` and has a
content ``version``; republishing different content under the same id moves the
version on, and every catalog resolved from the old version then fails
explicitly with ``CATALOG_VERSION_MISMATCH`` instead of silently switching.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from agentloom.canonical import canonical_json
from agentloom.catalog.schema import ArgumentValidator, compile_schema
from agentloom.catalog.spec import (
    EXPOSED_NAME_PATTERN,
    CapabilitySpec,
    FrozenDict,
    SchemaOrigin,
    freeze_json,
    legal_exposed_name,
)
from agentloom.errors import CatalogError

ScopeKind = Literal["role", "node"]


@dataclass(frozen=True, slots=True)
class ResolvedCatalog:
    """The capabilities one role (``scope="role:<key>"``) or node binding (``"node:<key>"``) sees.

    ``specs`` is read-only and keyed by ``exposed_name`` in the order the scope
    lists them. ``version`` is the release's content digest at resolution time;
    two catalogs are equal when release, scope and version are.
    """

    release_id: str
    scope: str
    version: str
    specs: Mapping[str, CapabilitySpec] = field(compare=False, repr=False)
    # what a hook of each hook point may change (``hooks.fields.fields_document``), published
    # with the release: {"version": n, "points": [...]} (000 §2.2.4)
    hook_fields: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def by_key(self, capability_key: str) -> CapabilitySpec:
        """The spec with this ``capability_key``.

        Raises:
            CatalogError: ``CAPABILITY_NOT_IN_CATALOG`` when this scope does not hold it.
        """
        for spec in self.specs.values():
            if spec.capability_key == capability_key:
                return spec
        raise CatalogError(
            f"capability {capability_key!r} is not in the catalog of {self.scope!r} "
            f"(release {self.release_id!r})",
            code="CAPABILITY_NOT_IN_CATALOG",
            category="not_found",
        )


@dataclass(frozen=True, slots=True)
class _Release:
    version: str
    catalogs: Mapping[tuple[ScopeKind, str], ResolvedCatalog]


class CapabilityRegistry:
    """Publishes capability releases and resolves the catalogs runs use.

    Thread-safe: a publish replaces a release atomically, after it has fully
    compiled; a failed publish leaves the previous release untouched.
    """

    def __init__(self) -> None:
        self._releases: dict[str, _Release] = {}
        self._validators: dict[tuple[str, str], ArgumentValidator] = {}
        # one validator per distinct input schema: the model connections of many agents share
        # theirs (issue #34)
        self._by_schema: dict[str, ArgumentValidator] = {}
        self._lock = threading.Lock()

    def publish(
        self,
        release_id: str,
        specs: Sequence[CapabilitySpec],
        *,
        roles: Mapping[str, Sequence[str]],
        node_bindings: Mapping[str, Sequence[str]] | None = None,
        local_resources: Mapping[str, Mapping[str, Any]] | None = None,
        hook_fields: Mapping[str, Any] | None = None,
    ) -> str:
        """Compile and publish a release; return its content version (SHA-256 hex).

        Every spec's ``input_schema`` / ``output_schema`` is replaced by its
        ``compile_schema(origin=spec.schema_origin)`` result. ``roles`` and
        ``node_bindings`` map a key to the capability keys its catalog shows, in
        that order. The version digests the compiled specs and both maps, so
        publishing identical content again keeps the version. ``hook_fields`` (the versioned
        writable-field schema of the hook points) is published beside the catalogs: every
        resolved catalog carries it.

        Raises:
            CatalogError: ``DUPLICATE_CAPABILITY_KEY``, ``INVALID_EXPOSED_NAME``,
                ``DUPLICATE_EXPOSED_NAME`` (within one role or binding),
                ``UNKNOWN_CAPABILITY_KEY`` (a role or binding lists a key the
                release lacks), or any ``compile_schema`` code; each message names
                the capability and how to fix it.
        """
        if not isinstance(release_id, str) or not release_id:
            raise CatalogError(f"release_id must be a non-empty string, got {release_id!r}")
        compiled: dict[str, CapabilitySpec] = {}
        for spec in specs:
            if not isinstance(spec, CapabilitySpec):
                raise CatalogError(f"release {release_id!r}: {spec!r} is not a CapabilitySpec")
            if spec.capability_key in compiled:
                raise CatalogError(
                    f"release {release_id!r}: capability_key {spec.capability_key!r} is declared "
                    "twice; each capability needs its own key",
                    code="DUPLICATE_CAPABILITY_KEY",
                )
            _check_exposed_name(spec)
            compiled[spec.capability_key] = _compile(spec, local_resources)
        scopes: dict[tuple[ScopeKind, str], tuple[str, ...]] = {}
        kinds: tuple[tuple[ScopeKind, Mapping[str, Sequence[str]]], ...] = (
            ("role", roles),
            ("node", node_bindings or {}),
        )
        for kind, mapping in kinds:
            for scope_key, keys in mapping.items():
                scopes[(kind, scope_key)] = _scope_keys(release_id, kind, scope_key, keys)
        version = _digest(compiled, scopes)
        fields = MappingProxyType(dict(hook_fields or {}))
        catalogs = {
            scope: dataclasses.replace(_catalog(release_id, version, scope, keys, compiled),
                                       hook_fields=fields)
            for scope, keys in scopes.items()
        }
        with self._lock:
            self._releases[release_id] = _Release(version, MappingProxyType(catalogs))
            live = {release.version for release in self._releases.values()}
            self._validators = {k: v for k, v in self._validators.items() if k[0] in live}
            kept = {id(v) for v in self._validators.values()}
            self._by_schema = {k: v for k, v in self._by_schema.items() if id(v) in kept}
        return version

    def current_version(self, release_id: str) -> str:
        """The version ``release_id`` is published at.

        Raises:
            CatalogError: ``UNKNOWN_RELEASE``.
        """
        return self._release(release_id).version

    def for_role(self, release_id: str, role_key: str) -> ResolvedCatalog:
        """The catalog an agent role sees in the current version of a release.

        Raises:
            CatalogError: ``UNKNOWN_RELEASE`` or ``UNKNOWN_ROLE``.
        """
        return self._catalog(release_id, "role", role_key)

    def for_node_binding(self, release_id: str, node_binding_key: str) -> ResolvedCatalog:
        """The catalog an outer CapabilityNode binding sees in the current version of a release.

        Raises:
            CatalogError: ``UNKNOWN_RELEASE`` or ``UNKNOWN_NODE_BINDING``.
        """
        return self._catalog(release_id, "node", node_binding_key)

    def resolve(self, catalog: ResolvedCatalog, exposed_name: str) -> CapabilitySpec:
        """The spec behind a model-facing name, after checking the catalog is current.

        Raises:
            CatalogError: ``CATALOG_VERSION_MISMATCH`` (stale catalog, checked
                first) or ``UNKNOWN_CAPABILITY`` (the name is not in this catalog).
        """
        self.check_current(catalog)
        spec = catalog.specs.get(exposed_name)
        if spec is None:
            raise CatalogError(
                f"no capability named {exposed_name!r} in the catalog of {catalog.scope!r}; "
                f"available: {', '.join(sorted(catalog.specs)) or '(none)'}",
                code="UNKNOWN_CAPABILITY",
                category="not_found",
            )
        return spec

    def check_current(self, catalog: ResolvedCatalog) -> None:
        """Do nothing if ``catalog`` was resolved from its release's current version.

        Raises:
            CatalogError: ``CATALOG_VERSION_MISMATCH`` naming both versions, or
                ``UNKNOWN_RELEASE``.
        """
        current = self._release(catalog.release_id).version
        if catalog.version != current:
            raise CatalogError(
                f"catalog {catalog.scope!r} of release {catalog.release_id!r} was resolved at "
                f"version {catalog.version} but the release is now at version {current}; "
                "the published capabilities changed — resolve the catalog again for a new run",
                code="CATALOG_VERSION_MISMATCH",
                category="conflict",
            )

    def validator(self, catalog: ResolvedCatalog, capability_key: str) -> ArgumentValidator:
        """The input validator of one capability, looked up once per (version, capability_key)
        and built once per distinct input schema (capabilities with equal schemas share it).

        Raises:
            CatalogError: ``CATALOG_VERSION_MISMATCH`` or ``CAPABILITY_NOT_IN_CATALOG``.
        """
        self.check_current(catalog)
        spec = catalog.by_key(capability_key)  # scope check, even on a cache hit
        cache_key = (catalog.version, capability_key)
        found = self._validators.get(cache_key)
        if found is None:
            schema_key = _schema_key(spec.input_schema)
            shared = self._by_schema.get(schema_key)
            if shared is None:
                shared = ArgumentValidator(spec.input_schema)
            with self._lock:
                shared = self._by_schema.setdefault(schema_key, shared)
                found = self._validators.setdefault(cache_key, shared)
        return found

    def _release(self, release_id: str) -> _Release:
        release = self._releases.get(release_id)
        if release is None:
            raise CatalogError(
                f"release {release_id!r} is not published",
                code="UNKNOWN_RELEASE",
                category="not_found",
            )
        return release

    def _catalog(self, release_id: str, kind: ScopeKind, key: str) -> ResolvedCatalog:
        catalog = self._release(release_id).catalogs.get((kind, key))
        if catalog is None:
            what = "role" if kind == "role" else "node binding"
            raise CatalogError(
                f"release {release_id!r} has no {what} {key!r}",
                code="UNKNOWN_ROLE" if kind == "role" else "UNKNOWN_NODE_BINDING",
                category="not_found",
            )
        return catalog


def _check_exposed_name(spec: CapabilitySpec) -> None:
    name = spec.exposed_name
    if not isinstance(name, str) or not EXPOSED_NAME_PATTERN.match(name):
        raise CatalogError(
            f"capability {spec.capability_key!r}: exposed_name {name!r} is not a legal tool name "
            f"(^[A-Za-z0-9_-]{{1,64}}$); use e.g. "
            f"{legal_exposed_name(spec.capability_key)!r} (legal_exposed_name)",
            code="INVALID_EXPOSED_NAME",
        )


def _compile(
    spec: CapabilitySpec, local_resources: Mapping[str, Mapping[str, Any]] | None
) -> CapabilitySpec:
    compiled: dict[str, Any] = {}
    for which in ("input_schema", "output_schema"):
        schema = getattr(spec, which)
        if schema is None:
            continue
        try:
            compiled[which] = _compiled_schema(schema, spec.schema_origin, local_resources)
        except CatalogError as exc:
            raise CatalogError(
                f"capability {spec.capability_key!r} (exposed_name {spec.exposed_name!r}) "
                f"{which}: {exc.error.message}",
                code=exc.code,
            ) from exc
    return dataclasses.replace(spec, **compiled)


_COMPILED_SCHEMAS_KEPT = 512
"""How many compiled schemas the process keeps (the least recently used is dropped first)."""

_compiled_schemas: OrderedDict[str, FrozenDict] = OrderedDict()
_compiled_lock = threading.Lock()


def _schema_key(*parts: Any) -> str:
    return hashlib.sha256(canonical_json(parts).encode("utf-8")).hexdigest()


def _compiled_schema(
    schema: Mapping[str, Any], origin: SchemaOrigin,
    local_resources: Mapping[str, Mapping[str, Any]] | None,
) -> FrozenDict:
    """``compile_schema`` of ``schema``, frozen. Without ``local_resources`` (what a runtime
    publishes) it is compiled once per distinct schema and origin in the process, by their
    canonical JSON: compiling is a pure function of them and costs a metaschema check or two,
    while one schema is often published many times — every agent's model connection, a tool
    most agents list (issue #34). Failures are not kept: a bad schema raises again, with its
    message, each time."""
    if local_resources:
        bundled: FrozenDict = freeze_json(
            compile_schema(schema, origin=origin, local_resources=local_resources))
        return bundled
    key = _schema_key(schema, origin)  # a spec's schema: frozen JSON already (string keys)
    with _compiled_lock:
        found = _compiled_schemas.get(key)
        if found is not None:
            _compiled_schemas.move_to_end(key)
            return found
    compiled: FrozenDict = freeze_json(compile_schema(schema, origin=origin))
    with _compiled_lock:
        _compiled_schemas[key] = compiled
        while len(_compiled_schemas) > _COMPILED_SCHEMAS_KEPT:
            _compiled_schemas.popitem(last=False)
    return compiled


def _scope_keys(
    release_id: str, kind: ScopeKind, scope_key: str, keys: Sequence[str]
) -> tuple[str, ...]:
    if isinstance(keys, str):
        raise CatalogError(
            f"release {release_id!r}: {kind} {scope_key!r} must list capability keys, "
            f"got the string {keys!r}; write [{keys!r}]"
        )
    return tuple(dict.fromkeys(keys))


def _catalog(
    release_id: str,
    version: str,
    scope: tuple[ScopeKind, str],
    keys: tuple[str, ...],
    compiled: Mapping[str, CapabilitySpec],
) -> ResolvedCatalog:
    kind, scope_key = scope
    found = [compiled.get(key) for key in keys]  # keys: no key twice (``_scope_keys``)
    by_name = {spec.exposed_name: spec for spec in found if spec is not None}
    if len(by_name) == len(keys):  # every key declared, no name twice: the common case, fast
        return ResolvedCatalog(release_id, f"{kind}:{scope_key}", version, MappingProxyType(by_name))
    what = "role" if kind == "role" else "node binding"
    by_name = {}
    for key in keys:
        spec = compiled.get(key)
        if spec is None:
            raise CatalogError(
                f"release {release_id!r}: {what} {scope_key!r} lists capability {key!r}, which "
                "the release does not declare; add its CapabilitySpec or remove it from the list",
                code="UNKNOWN_CAPABILITY_KEY",
            )
        other = by_name.get(spec.exposed_name)
        if other is not None:
            raise CatalogError(
                f"release {release_id!r}: {what} {scope_key!r} shows capabilities "
                f"{other.capability_key!r} and {key!r} under one exposed_name "
                f"{spec.exposed_name!r}; exposed names must be unique in a catalog — rename one",
                code="DUPLICATE_EXPOSED_NAME",
            )
        by_name[spec.exposed_name] = spec
    return ResolvedCatalog(release_id, f"{kind}:{scope_key}", version, MappingProxyType(by_name))


def _digest(
    compiled: Mapping[str, CapabilitySpec], scopes: Mapping[tuple[ScopeKind, str], Sequence[str]]
) -> str:
    content = {
        "specs": [_digest_form(compiled[key]) for key in sorted(compiled)],
        "scopes": sorted([kind, key, list(keys)] for (kind, key), keys in scopes.items()),
    }
    # every value is a string, None or a freeze_json-checked schema: NaN cannot occur
    return hashlib.sha256(canonical_json(content).encode("utf-8")).hexdigest()


def _digest_form(spec: CapabilitySpec) -> dict[str, Any]:
    # The digest is the catalog version every run stores and a resume compares: it keeps the
    # key ``exposed_name`` had before issue #13 renamed it, so runs stored before still resume.
    return {("model_name" if key == "exposed_name" else key): value
            for key, value in spec.to_json().items()}
