"""The capability catalog (spec 000 §2.1; 003 F07 for isolation of published definitions)."""

from __future__ import annotations

import copy
import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.catalog import (
    ArgumentValidator,
    CapabilityRegistry,
    CapabilitySpec,
    SchemaOrigin,
    compile_schema,
    legal_exposed_name,
    thaw_json,
)
from agentloom.errors import CatalogError

OBJECT_WITH_PATH: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
}


def make_spec(
    key: str,
    *,
    exposed_name: str | None = None,
    schema: dict[str, Any] | None = None,
    origin: SchemaOrigin = "sdk",
) -> CapabilitySpec:
    return CapabilitySpec(
        resource_version_id="rv-1",
        capability_key=key,
        kind="mcp" if origin == "mcp" else "builtin",
        exposed_name=exposed_name if exposed_name is not None else legal_exposed_name(key),
        description=f"the {key} capability",
        input_schema=schema if schema is not None else copy.deepcopy(OBJECT_WITH_PATH),
        handler_ref=f"handlers.{key}",
        schema_origin=origin,
    )


def all_refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in all_refs(value)]
    if isinstance(node, list):
        return [ref for item in node for ref in all_refs(item)]
    return []


@pytest.fixture
def network_attempts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every attempt to open a connection or resolve a host, refused and recorded."""
    attempts: list[str] = []

    def refuse(name: str) -> Any:
        def refused(*args: Any, **kwargs: Any) -> Any:
            attempts.append(f"{name}{args[1:] if name == 'connect' else args}")
            raise OSError("network is blocked in this test")

        return refused

    monkeypatch.setattr(socket.socket, "connect", refuse("connect"))
    monkeypatch.setattr(socket, "create_connection", refuse("create_connection"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    yield attempts


# -- model names -------------------------------------------------------------------


def test_s2_1_legal_exposed_name_turns_capability_keys_into_legal_deterministic_names() -> None:
    legal = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
    assert legal_exposed_name("fs.read") == "fs_read"
    assert legal_exposed_name("mcp/github:search-issues") == "mcp_github_search-issues"
    assert legal_exposed_name("读取.file") == "___file"
    long_a, long_b = "x" * 70 + ".a", "x" * 70 + ".b"
    assert legal.match(legal_exposed_name(long_a))
    assert legal_exposed_name(long_a) == legal_exposed_name(long_a)
    assert legal_exposed_name(long_a) != legal_exposed_name(long_b)
    with pytest.raises(CatalogError):
        legal_exposed_name("")


def test_s2_1_illegal_exposed_name_fails_to_publish_with_a_suggested_name() -> None:
    registry = CapabilityRegistry()
    with pytest.raises(CatalogError) as caught:
        registry.publish("rel", [make_spec("fs.read", exposed_name="fs.read")], roles={})
    assert caught.value.code == "INVALID_EXPOSED_NAME"
    assert "'fs_read'" in str(caught.value)


def test_s9_duplicate_exposed_name_fails_to_compile() -> None:
    registry = CapabilityRegistry()
    specs = [make_spec("fs.read"), make_spec("fs_read")]  # both legalise to "fs_read"
    with pytest.raises(CatalogError) as caught:
        registry.publish("rel", specs, roles={"writer": ["fs.read", "fs_read"]})
    assert caught.value.code == "DUPLICATE_EXPOSED_NAME"
    assert "'fs.read'" in str(caught.value) and "'fs_read'" in str(caught.value)
    assert "'writer'" in str(caught.value)


def test_s2_1_one_exposed_name_in_two_separate_roles_is_allowed() -> None:
    registry = CapabilityRegistry()
    specs = [make_spec("fs.read"), make_spec("fs_read")]
    registry.publish("rel", specs, roles={"a": ["fs.read"], "b": ["fs_read"]})
    assert registry.for_role("rel", "b").by_key("fs_read").exposed_name == "fs_read"


def test_s2_1_duplicate_capability_key_fails_to_publish() -> None:
    with pytest.raises(CatalogError) as caught:
        CapabilityRegistry().publish(
            "rel", [make_spec("fs.read"), make_spec("fs.read", exposed_name="read2")], roles={}
        )
    assert caught.value.code == "DUPLICATE_CAPABILITY_KEY"


def test_s2_1_role_naming_an_unknown_capability_fails_to_publish() -> None:
    with pytest.raises(CatalogError) as caught:
        CapabilityRegistry().publish("rel", [make_spec("fs.read")], roles={"r": ["fs.write"]})
    assert caught.value.code == "UNKNOWN_CAPABILITY_KEY"
    assert "'fs.write'" in str(caught.value) and "'r'" in str(caught.value)


# -- schemas -----------------------------------------------------------------------


def test_s2_1_invalid_2020_12_schema_fails_to_compile_naming_the_place() -> None:
    with pytest.raises(CatalogError) as caught:
        compile_schema({"type": "object", "properties": {"n": {"type": 5}}}, origin="sdk")
    assert caught.value.code == "SCHEMA_INVALID"
    assert "#/properties/n/type" in str(caught.value)

    with pytest.raises(CatalogError) as published:
        CapabilityRegistry().publish("rel", [make_spec("calc", schema={"type": 5})], roles={})
    assert published.value.code == "SCHEMA_INVALID"
    assert "'calc'" in str(published.value)


@pytest.mark.parametrize(
    "ref",
    [
        "http://schemas.example.com/address.json",
        "https://json-schema.org/draft/2020-12/schema",
        "file:///etc/passwd",
        "address.json#/$defs/street",  # relative, and not among local_resources
    ],
)
def test_s2_1_remote_ref_is_refused_without_network_access(
    ref: str, network_attempts: list[str]
) -> None:
    schema = {"type": "object", "properties": {"where": {"$ref": ref}}}
    with pytest.raises(CatalogError) as caught:
        compile_schema(schema, origin="mcp", local_resources={"common.json": {"type": "string"}})
    assert caught.value.code == "SCHEMA_REMOTE_REF"
    assert ref in str(caught.value) and "#/properties/where" in str(caught.value)
    assert network_attempts == []


def test_s2_1_file_ref_is_refused_even_when_the_file_exists(tmp_path: Path) -> None:
    target = tmp_path / "address.json"
    target.write_text(json.dumps({"type": "string"}))
    with pytest.raises(CatalogError) as caught:
        compile_schema({"$ref": target.as_uri()}, origin="sdk")
    assert caught.value.code == "SCHEMA_REMOTE_REF"


def test_s2_1_remote_ref_inside_a_local_resource_is_refused(network_attempts: list[str]) -> None:
    local = {"common.json": {"$defs": {"a": {"$ref": "https://evil.example/x.json"}}}}
    with pytest.raises(CatalogError) as caught:
        compile_schema({"$ref": "common.json#/$defs/a"}, origin="sdk", local_resources=local)
    assert caught.value.code == "SCHEMA_REMOTE_REF"
    assert "'common.json'" in str(caught.value)
    assert network_attempts == []


def test_s2_1_local_ref_is_bundled_into_a_self_contained_schema(
    network_attempts: list[str],
) -> None:
    common = {
        "$defs": {
            "zip": {"$anchor": "zip", "type": "string", "pattern": "^[0-9]{5}$"},
            "address": {
                "type": "object",
                "properties": {"zip": {"$ref": "#/$defs/zip"}, "next": {"$ref": "#/$defs/address"}},
                "required": ["zip"],
            },
        }
    }
    declared = {
        "type": "object",
        "properties": {
            "home": {"$ref": "common.json#/$defs/address"},
            "zip": {"$ref": "common.json#zip"},
        },
        "required": ["home"],
    }
    snapshot = (copy.deepcopy(declared), copy.deepcopy(common))

    compiled = compile_schema(declared, origin="mcp", local_resources={"common.json": common})

    assert (declared, common) == snapshot
    refs = all_refs(compiled)
    assert refs and all(ref.startswith("#/$defs/") for ref in refs)
    assert len(compiled["$defs"]) == 2  # "#zip" and "#/$defs/zip" are one subschema
    validator = ArgumentValidator(compiled)  # resolves nothing outside itself
    valid = {"home": {"zip": "12345", "next": {"zip": "54321"}}, "zip": "11111"}
    assert validator.errors(valid) == []
    assert validator.errors({"home": {"zip": "12345", "next": {"zip": "5"}}}) == [
        "$.home.next.zip: '5' does not match '^[0-9]{5}$'"
    ]
    assert validator.errors({"home": {}}) == ["$.home: 'zip' is a required property"]
    assert network_attempts == []


def test_s2_1_internal_ref_that_resolves_nowhere_fails_to_compile() -> None:
    with pytest.raises(CatalogError) as caught:
        compile_schema({"$defs": {"a": {}}, "$ref": "#/$defs/b"}, origin="mcp")
    assert caught.value.code == "SCHEMA_UNRESOLVED_REF"
    internal = compile_schema({"$defs": {"a": {}}, "$ref": "#/$defs/a"}, origin="mcp")
    assert internal["$ref"] == "#/$defs/a"


@pytest.mark.parametrize("origin", ["sdk", "config"])
def test_s2_1_sdk_object_schemas_default_to_additional_properties_false(
    origin: SchemaOrigin,
) -> None:
    declared = {
        "type": "object",
        "properties": {
            "options": {"type": "object", "properties": {"depth": {"type": "integer"}}},
            "rows": {"type": "array", "items": {"properties": {"id": {"type": "string"}}}},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    compiled = compile_schema(declared, origin=origin)

    assert compiled["additionalProperties"] is False
    assert compiled["properties"]["options"]["additionalProperties"] is False
    assert compiled["properties"]["rows"]["items"]["additionalProperties"] is False
    assert compiled["properties"]["tags"]["additionalProperties"] == {"type": "string"}
    assert "additionalProperties" not in declared
    validator = ArgumentValidator(compiled)
    valid = {"options": {"depth": 1}, "rows": [{"id": "a"}], "tags": {"k": "v"}}
    assert validator.errors(valid) == []
    assert validator.errors({"options": {"depth": 1, "mode": "x"}}) == [
        "$.options: Additional properties are not allowed ('mode' was unexpected)"
    ]
    assert validator.errors({"rows": [{"id": "a", "extra": 1}], "surprise": True}) != []


def test_s2_1_sdk_schema_stating_additional_properties_true_is_refused() -> None:
    open_object = {"type": "object", "properties": {"a": {}}, "additionalProperties": True}
    with pytest.raises(CatalogError) as caught:
        compile_schema(open_object, origin="sdk")
    assert caught.value.code == "SCHEMA_OPEN_OBJECT"
    assert compile_schema(open_object, origin="config")["additionalProperties"] is True


def test_s2_1_composed_sdk_object_is_closed_over_its_branches() -> None:
    declared = {
        "type": "object",
        "properties": {"kind": {"type": "string"}},
        "allOf": [{"properties": {"size": {"type": "integer"}}}],
        "if": {"properties": {"kind": {"const": "big"}}},
        "then": {"required": ["size"]},
    }
    compiled = compile_schema(declared, origin="sdk")

    assert compiled["unevaluatedProperties"] is False
    assert compiled["allOf"] == declared["allOf"] and compiled["if"] == declared["if"]
    validator = ArgumentValidator(compiled)
    assert validator.errors({"kind": "big", "size": 3}) == []
    assert validator.errors({"kind": "small", "colour": "red"}) != []


def test_s2_1_mcp_schema_is_validated_exactly_as_declared() -> None:
    declared = {
        "type": "object",
        "properties": {"query": {"type": "string"}, "filters": {"type": "object"}},
        "required": ["query"],
    }
    compiled = compile_schema(declared, origin="mcp")

    assert compiled == declared
    validator = ArgumentValidator(compiled)
    assert validator.errors({"query": "q", "filters": {"any": 1}, "x-vendor-extension": True}) == []
    assert validator.errors({"filters": {}}) == ["$: 'query' is a required property"]


def test_s2_1_other_schema_dialects_are_refused() -> None:
    with pytest.raises(CatalogError) as caught:
        compile_schema({"$schema": "http://json-schema.org/draft-07/schema#"}, origin="mcp")
    assert caught.value.code == "SCHEMA_DIALECT"


# -- immutability (003 F07) --------------------------------------------------------


def test_f07_mutating_the_schema_dict_passed_in_does_not_change_the_spec() -> None:
    schema = copy.deepcopy(OBJECT_WITH_PATH)
    spec = make_spec("fs.read", schema=schema)
    registry = CapabilityRegistry()
    registry.publish("rel", [spec], roles={"r": ["fs.read"]})

    schema["properties"]["path"]["type"] = "integer"
    schema["required"].append("mode")
    schema["additionalProperties"] = True

    assert spec.input_schema == OBJECT_WITH_PATH
    published = registry.for_role("rel", "r").by_key("fs.read").input_schema
    assert published["properties"]["path"] == {"type": "string"}
    assert published["required"] == ["path"]
    assert published["additionalProperties"] is False


def test_f07_the_schema_read_back_from_a_spec_cannot_be_mutated() -> None:
    spec = make_spec("fs.read")
    with pytest.raises(TypeError):
        spec.input_schema["properties"]["path"]["type"] = "integer"
    with pytest.raises(TypeError):
        spec.input_schema["required"].append("mode")
    with pytest.raises(TypeError):
        spec.input_schema.update({"type": "array"})  # type: ignore[attr-defined]

    editable = thaw_json(spec.input_schema)
    editable["properties"]["path"]["type"] = "integer"
    deep = copy.deepcopy(spec.input_schema)
    deep["required"].append("mode")

    assert spec.input_schema == OBJECT_WITH_PATH
    assert json.loads(json.dumps(spec.input_schema)) == OBJECT_WITH_PATH


def test_f07_published_catalog_mappings_are_read_only() -> None:
    registry = CapabilityRegistry()
    registry.publish("rel", [make_spec("fs.read")], roles={"r": ["fs.read"]})
    catalog = registry.for_role("rel", "r")
    with pytest.raises(TypeError):
        catalog.specs["other"] = make_spec("other")  # type: ignore[index]


# -- registry ----------------------------------------------------------------------


def publish_three(registry: CapabilityRegistry, release_id: str = "rel") -> str:
    specs = [make_spec("fs.read"), make_spec("fs.write"), make_spec("report.render")]
    return registry.publish(
        release_id,
        specs,
        roles={"reader": ["fs.read"], "writer": ["fs.read", "fs.write"]},
        node_bindings={"render-step": ["report.render"]},
    )


def test_s2_1_for_role_shows_only_that_roles_capabilities() -> None:
    registry = CapabilityRegistry()
    version = publish_three(registry)

    reader = registry.for_role("rel", "reader")
    writer = registry.for_role("rel", "writer")

    assert list(reader.specs) == ["fs_read"]
    assert list(writer.specs) == ["fs_read", "fs_write"]
    assert (reader.scope, reader.version, reader.release_id) == ("role:reader", version, "rel")
    assert registry.resolve(writer, "fs_write").capability_key == "fs.write"
    with pytest.raises(CatalogError) as caught:
        registry.resolve(reader, "fs_write")
    assert caught.value.code == "UNKNOWN_CAPABILITY"
    with pytest.raises(CatalogError) as not_in:
        reader.by_key("fs.write")
    assert not_in.value.code == "CAPABILITY_NOT_IN_CATALOG"
    with pytest.raises(CatalogError) as no_role:
        registry.for_role("rel", "render-step")
    assert no_role.value.code == "UNKNOWN_ROLE"


def test_s2_1_for_node_binding_resolves_the_bindings_catalog() -> None:
    registry = CapabilityRegistry()
    publish_three(registry)

    node = registry.for_node_binding("rel", "render-step")

    assert node.scope == "node:render-step"
    assert list(node.specs) == ["report_render"]
    assert registry.resolve(node, "report_render").handler_ref == "handlers.report.render"
    with pytest.raises(CatalogError) as caught:
        registry.for_node_binding("rel", "reader")
    assert caught.value.code == "UNKNOWN_NODE_BINDING"


def test_s2_1_resolving_an_unknown_exposed_name_is_an_explicit_error() -> None:
    registry = CapabilityRegistry()
    publish_three(registry)
    with pytest.raises(CatalogError) as caught:
        registry.resolve(registry.for_role("rel", "writer"), "shell_exec")
    assert caught.value.code == "UNKNOWN_CAPABILITY"
    assert caught.value.error.category == "not_found"
    assert "'shell_exec'" in str(caught.value)


def test_s2_1_stale_catalog_after_republish_fails_with_catalog_version_mismatch() -> None:
    registry = CapabilityRegistry()
    old_version = publish_three(registry)
    catalog = registry.for_role("rel", "writer")
    assert publish_three(registry) == old_version  # same content: same version, still current
    registry.check_current(catalog)

    changed = make_spec("fs.write", schema={"type": "object", "properties": {"p": {}}})
    new_version = registry.publish(
        "rel", [make_spec("fs.read"), changed], roles={"writer": ["fs.read", "fs.write"]}
    )

    assert new_version != old_version
    for attempt in (
        lambda: registry.resolve(catalog, "fs_write"),
        lambda: registry.check_current(catalog),
        lambda: registry.validator(catalog, "fs.write"),
    ):
        with pytest.raises(CatalogError) as caught:
            attempt()
        assert caught.value.code == "CATALOG_VERSION_MISMATCH"
        assert old_version in str(caught.value) and new_version in str(caught.value)
    fresh = registry.for_role("rel", "writer")
    assert registry.resolve(fresh, "fs_write").input_schema["properties"] == {"p": {}}


def test_s2_1_failed_publish_leaves_the_current_release_untouched() -> None:
    registry = CapabilityRegistry()
    version = publish_three(registry)
    catalog = registry.for_role("rel", "reader")
    with pytest.raises(CatalogError):
        registry.publish("rel", [make_spec("fs.read", schema={"type": 5})], roles={})
    registry.check_current(catalog)
    assert registry.current_version("rel") == version


def test_s2_1_validator_is_cached_per_version_and_names_json_paths() -> None:
    registry = CapabilityRegistry()
    publish_three(registry)
    catalog = registry.for_role("rel", "writer")

    validator = registry.validator(catalog, "fs.write")

    assert registry.validator(registry.for_role("rel", "reader"), "fs.read") is registry.validator(
        catalog, "fs.read"
    )
    assert registry.validator(catalog, "fs.write") is validator
    assert validator.errors({"path": "a.txt"}) == []
    assert validator.errors({"path": 3, "mode": "w"}) == [
        "$.path: 3 is not of type 'string'",
        "$: Additional properties are not allowed ('mode' was unexpected)",
    ]
    with pytest.raises(CatalogError) as caught:
        registry.validator(registry.for_role("rel", "reader"), "fs.write")
    assert caught.value.code == "CAPABILITY_NOT_IN_CATALOG"
