"""The compiled fast path of argument validation never accepts what the full 2020-12
validator rejects (it may only say "ask the full validator")."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from agentloom.catalog.fastcheck import compile_fast

TYPES = ["string", "integer", "number", "boolean", "null", "object", "array"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-3, 3),
                    st.sampled_from([1.0, 2.0, -0.0]), st.text(max_size=3))
instances = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), inner,
                                            max_size=4)),
    max_leaves=8,
)


def schemas() -> Any:
    leaf = st.fixed_dictionaries({}, optional={
        "type": st.one_of(st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1,
                                                            max_size=3, unique=True)),
        "description": st.text(max_size=5)})

    def objects(inner: Any) -> Any:
        return st.fixed_dictionaries(
            {"type": st.just("object")},
            optional={
                "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
                "required": st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=3, unique=True),
                "additionalProperties": st.booleans(),
            },
        )

    return st.recursive(leaf, objects, max_leaves=6)


@settings(max_examples=600, deadline=None)
@given(schema=schemas(), instance=instances)
def test_fast_path_accepts_only_what_the_full_validator_accepts(schema: Any, instance: Any) -> None:
    fast = compile_fast(schema)
    assert fast is not None
    full = Draft202012Validator(schema).is_valid(instance)
    if fast(instance):
        assert full, (schema, instance)
    else:
        assert not full, (schema, instance)


def test_schemas_with_other_keywords_use_the_full_validator() -> None:
    assert compile_fast({"type": "string", "minLength": 2}) is None
    assert compile_fast({"type": "object", "properties": {"a": {"enum": [1]}}}) is None
    assert compile_fast({"$ref": "#/$defs/x"}) is None
    assert compile_fast({"type": "object", "additionalProperties": {"type": "string"}}) is None
