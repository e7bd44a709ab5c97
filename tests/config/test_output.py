"""``agents.<name>.output`` (#12 point 7): a JSON Schema for the final answer, checked at load
time — a schema that is not JSON Schema 2020-12 is a config error naming
``agents.<name>.output.schema`` — and carried into the agent's ``OutputSpec``."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agentloom.agent.output import OutputSpec
from agentloom.assembly import agent_specs
from agentloom.config import load_config, parse_config
from agentloom.errors import ConfigError

AGENT = "version: 1\nagents:\n  main:\n    model: {builtin: test}\n"
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def write(folder: Path, text: str) -> Path:
    path = folder / "agentloom.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_12_7_output_schema_loads_and_becomes_the_agents_output_spec(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, AGENT + "    output:\n      name: verdict\n      strict: true\n"
                               "      schema: {type: object, properties: {answer: {type: string}},"
                               " required: [answer]}\n"))

    output = config.agents["main"].output
    assert output is not None and (output.schema_, output.name, output.strict) == (
        SCHEMA, "verdict", True)
    (spec,) = agent_specs(config)
    assert spec.output == OutputSpec(schema=SCHEMA, name="verdict", strict=True)
    dumped = config.model_dump(mode="json")
    assert dumped["agents"]["main"]["output"] == {"schema": SCHEMA, "name": "verdict",
                                                  "strict": True}
    assert parse_config(dumped, base_dir=tmp_path).agents == config.agents
    assert load_config(write(tmp_path, AGENT)).agents["main"].output is None


@pytest.mark.parametrize(("output", "expected"), [
    ("{schema: {type: strin}}",
     "agents.main.output.schema: is not a valid JSON Schema 2020-12 at #/type: 'strin' is not "
     "valid under any of the given schemas; write a JSON Schema 2020-12"),
    ("{schema: {$ref: 'other.json'}}", "agents.main.output.schema: "),
    ("{schema: [1, 2]}", "agents.main.output.schema: must be a mapping"),
    ("{}", "agents.main.output.schema: is required; add it"),
    ("{schema: {}, shema: {}}",
     "agents.main.output.shema: unknown key 'shema'; did you mean 'schema'? allowed keys at "
     "agents.main.output: name, schema, strict"),
    ("{schema: {}, name: 'has spaces'}", "agents.main.output.name: "),
    ("{schema: {}, strict: 1}", "agents.main.output.strict: must be true or false (got 1)"),
])
def test_12_7_a_bad_output_key_fails_at_load_naming_it(tmp_path: Path, output: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, AGENT + f"    output: {output}\n"))
    assert caught.value.code == "CONFIG_INVALID"
    assert expected in str(caught.value)
