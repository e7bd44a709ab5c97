"""Issue 37 point 1: an artifact definition that cannot work is a load error naming its key —
globs that are empty, absolute or hold ``..``; a grant from a node that is not upstream or
hands on nothing; ``{{ nodes.NAME.artifacts }}`` of such a node — from YAML and from the
Python builder alike; and a workflow without artifacts keeps its digest."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from tests.squad.test_i20_definition import RELEASE, error_lines, load, release_builder

from agentloom.errors import ConfigError
from agentloom.squad import Workflow, from_config
from agentloom.squad.spec import ArtifactGrant

HEAD_TOOLS = """\
version: 1
agents:
  coder: {model: {builtin: test}, tools: [fs.write, artifact.publish]}
  planner: {model: {builtin: test}}
workflows:
  w:
"""


def test_i37_1_outputs_and_inputs_load_into_the_spec(tmp_path: Path) -> None:
    config = load(tmp_path, HEAD_TOOLS + textwrap.indent(textwrap.dedent("""\
        nodes:
          code: {agent: planner, outputs: {files: ["src/**", "tests/*.py"]}}
          test: {capability: exec, args: {argv: [ls]}, inputs: {from: code, files: ["src/**"]}}
          read: {agent: planner, input: "{{ nodes.code.artifacts }}", inputs: [{from: code}]}
        edges:
          - {from: code, to: [test, read]}
        """), "    "))
    spec = from_config(config)["w"]
    assert spec.nodes["code"].outputs == ("src/**", "tests/*.py")  # type: ignore[union-attr]
    assert spec.nodes["test"].inputs == (  # type: ignore[union-attr]
        ArtifactGrant(source="code", files=("src/**",)),)
    assert spec.nodes["read"].inputs == (ArtifactGrant(source="code"),)  # type: ignore[union-attr]
    assert spec.nodes["read"].to_dict()["inputs"] == [{"from": "code", "files": ["**"]}]


def test_i37_1_a_workflow_without_artifacts_keeps_its_digest(tmp_path: Path) -> None:
    spec = from_config(load(tmp_path, RELEASE))["release"]
    assert "outputs" not in str(spec.to_dict()) and "inputs" not in str(spec.to_dict())
    assert spec.digest == release_builder().build().digest


def test_i37_1_bad_globs_are_refused_at_their_key(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  plan: {agent: planner, outputs: {files: ["/etc/**", "../up", "a\\\\b", "  "]}}
  build: {capability: exec, inputs: {from: plan, files: ["src/../../x"]}}
edges:
  - {from: plan, to: build}
""")
    assert ("workflows.w.nodes.plan.outputs.files[0]: '/etc/**' must be relative to the node's "
            "folder (no leading '/' or '~', no backslash); e.g. 'src/**'") in lines
    assert ("workflows.w.nodes.plan.outputs.files[1]: '../up' must not hold '..': an artifact is "
            "a file below the node's folder") in lines
    assert any(line.startswith("workflows.w.nodes.plan.outputs.files[2]: ") for line in lines)
    assert any(line.startswith("workflows.w.nodes.plan.outputs.files[3]: a glob must not be "
                               "empty") for line in lines)
    assert any(line.startswith("workflows.w.nodes.build.inputs[0].files[0]: ") for line in lines)


def test_i37_1_empty_outputs_are_refused(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  plan: {agent: planner, outputs: {files: []}}
""")
    assert any(line.startswith("workflows.w.nodes.plan.outputs.files: ") for line in lines)


def test_i37_1_a_grant_from_a_node_not_upstream_or_without_artifacts_is_refused(
    tmp_path: Path,
) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  plan: {agent: planner}
  build: {capability: exec, outputs: {files: ["dist/**"]}, inputs: {from: plan}}
  late: {capability: exec, outputs: {files: ["x"]}}
  use: {capability: exec, inputs: [{from: late}, {from: nope}, {from: use}]}
edges:
  - {from: plan, to: build}
  - {from: build, to: [use, late]}
""")
    assert ("workflows.w.nodes.build.inputs[0].from: node 'plan' hands on no artifacts; give it "
            "`outputs: {files: [GLOB]}` or list 'artifact.publish' in agent 'planner''s tools"
            ) in lines
    assert ("workflows.w.nodes.use.inputs[0].from: node 'late' is not upstream of 'use' (no path "
            "of edges leads from it to 'use'); add an edge or name a node before it") in lines
    assert any(line.startswith("workflows.w.nodes.use.inputs[1].from: no node named 'nope'")
               for line in lines)
    assert ("workflows.w.nodes.use.inputs[2].from: a node cannot be granted its own artifacts; "
            "name a node before it") in lines


def test_i37_1_an_agent_listing_artifact_publish_may_be_granted_from(tmp_path: Path) -> None:
    config = load(tmp_path, HEAD_TOOLS + textwrap.indent(textwrap.dedent("""\
        nodes:
          code: {agent: coder}
          test: {capability: exec, inputs: {from: code}, args: {x: "{{ nodes.code.artifacts }}"}}
        edges:
          - {from: code, to: test}
        """), "    "))
    assert from_config(config)["w"].nodes["test"].inputs[0].source == "code"  # type: ignore[union-attr]


def test_i37_1_a_template_naming_artifacts_of_a_node_without_any_is_refused(
    tmp_path: Path,
) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  plan: {agent: planner}
  ask: {wait: approval, question: "ship {{ nodes.plan.artifacts }}?"}
edges:
  - {from: plan, to: ask}
""")
    assert lines == ["workflows.w.nodes.ask.question: {{ nodes.plan.artifacts }}: node 'plan' "
                     "hands on no artifacts; give it `outputs: {files: [GLOB]}` or list "
                     "'artifact.publish' in agent 'planner''s tools"]


def test_i37_1_the_builder_refuses_what_the_yaml_refuses() -> None:
    with pytest.raises(ConfigError) as caught:
        (Workflow("w").capability("a", "exec", outputs=["../x"])
         .capability("b", "exec", inputs={"from": "a"}).edge("b", "a").build())
    text = str(caught.value)
    assert "workflows.w.nodes.a.outputs.files[0]: '../x' must not hold '..'" in text
    assert "workflows.w.nodes.b.inputs[0].from: node 'a' is not upstream of 'b'" in text
