"""The compiled fast path of argument validation never accepts what the full 2020-12
validator rejects (it may only say "ask the full validator")."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from agentloom.catalog.fastcheck import compile_fast
from agentloom.catalog.schema import compile_schema
from agentloom.models.manager import MODEL_PAYLOAD_SCHEMA

TYPES = ["string", "integer", "number", "boolean", "null", "object", "array"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-3, 3),
                    st.sampled_from([0, 1, 0.0, 1.0, 2.0, -0.0]), st.text(max_size=3),
                    st.sampled_from(["", "a", "ab", "é"]))
instances = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), inner,
                                            max_size=4)),
    max_leaves=8,
)
bounds = st.one_of(st.integers(-2, 3), st.sampled_from([0.5, 1.0, -1.5]))
sizes = st.integers(0, 3)


def schemas() -> Any:
    leaf = st.fixed_dictionaries({}, optional={
        "type": st.one_of(st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1,
                                                            max_size=3, unique=True)),
        "description": st.text(max_size=5),
        "enum": st.lists(scalars, min_size=1, max_size=4),
        "const": scalars,
        "minimum": bounds, "maximum": bounds, "exclusiveMinimum": bounds, "exclusiveMaximum": bounds,
        "minLength": sizes, "maxLength": sizes, "minItems": sizes, "maxItems": sizes,
    })

    def composite(inner: Any) -> Any:
        objects = st.fixed_dictionaries(
            {"type": st.just("object")},
            optional={
                "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
                "required": st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=3, unique=True),
                "additionalProperties": st.booleans(),
            },
        )
        arrays = st.fixed_dictionaries(
            {"items": st.one_of(inner, st.booleans())},
            optional={"type": st.just("array"), "minItems": sizes, "maxItems": sizes},
        )
        unions = st.fixed_dictionaries({"anyOf": st.lists(inner, min_size=1, max_size=3)})
        return st.one_of(objects, arrays, unions)

    return st.recursive(leaf, composite, max_leaves=6)


@settings(max_examples=1500, deadline=None)
@given(schema=schemas(), instance=instances)
def test_fast_path_accepts_only_what_the_full_validator_accepts(schema: Any, instance: Any) -> None:
    fast = compile_fast(schema)
    assert fast is not None
    full = Draft202012Validator(schema).is_valid(instance)
    if fast(instance):
        assert full, (schema, instance)
    else:
        assert not full, (schema, instance)


def test_enum_and_const_keep_json_equality_bool_is_not_a_number() -> None:
    for schema in ({"enum": [1, "a", None]}, {"const": 1}, {"enum": [True]}, {"const": False}):
        fast = compile_fast(schema)
        assert fast is not None
        for instance in (1, 1.0, True, False, 0, "a", "1", None, [1], {"a": 1}):
            assert fast(instance) == Draft202012Validator(schema).is_valid(instance), (schema, instance)


def test_the_model_payload_schema_takes_the_fast_path() -> None:
    # It is validated on every model call: it must stay on the cheap path.
    assert compile_fast(compile_schema(MODEL_PAYLOAD_SCHEMA, origin="config")) is not None


def test_schemas_with_other_keywords_use_the_full_validator() -> None:
    assert compile_fast({"type": "string", "pattern": "^a"}) is None
    assert compile_fast({"type": "object", "properties": {"a": {"enum": [[1]]}}}) is None
    assert compile_fast({"const": {"a": 1}}) is None
    assert compile_fast({"prefixItems": [{"type": "string"}], "items": False}) is None
    assert compile_fast({"anyOf": [{"type": "string"}, {"not": {}}]}) is None
    assert compile_fast({"$ref": "#/$defs/x"}) is None
    assert compile_fast({"type": "object", "additionalProperties": {"type": "string"}}) is None
