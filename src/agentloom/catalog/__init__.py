"""The capability catalog: what a release publishes and what each role or node may call.

Owns ``CapabilitySpec`` (the frozen description of one capability), schema
compilation (JSON Schema 2020-12 checks, local ``$ref`` bundling, no remote
references, closed SDK objects), argument validators, and the
``CapabilityRegistry`` that publishes releases and resolves role / node-binding
catalogs with a content version (000 §2.1).

Does not own handlers, invocation, hooks or persistence: the catalog says *what*
may be called and with which arguments; the pipeline and the domain managers
do the calling.
"""

from agentloom.catalog.registry import CapabilityRegistry, ResolvedCatalog
from agentloom.catalog.schema import DIALECT_2020_12, ArgumentValidator, compile_schema
from agentloom.catalog.spec import (
    CAPABILITY_KINDS,
    EXPOSED_NAME_PATTERN,
    SCHEMA_ORIGINS,
    CapabilityKind,
    CapabilitySpec,
    FrozenDict,
    FrozenList,
    SchemaOrigin,
    freeze_json,
    legal_exposed_name,
    thaw_json,
)

__all__ = [
    "CAPABILITY_KINDS",
    "DIALECT_2020_12",
    "EXPOSED_NAME_PATTERN",
    "SCHEMA_ORIGINS",
    "ArgumentValidator",
    "CapabilityKind",
    "CapabilityRegistry",
    "CapabilitySpec",
    "FrozenDict",
    "FrozenList",
    "ResolvedCatalog",
    "SchemaOrigin",
    "compile_schema",
    "freeze_json",
    "legal_exposed_name",
    "thaw_json",
]
