"""Issue 20, the definition side: the ``workflows:`` YAML section and the Python builder give
one ``WorkflowSpec``; every mistake fails at load naming its key path; templates render."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agentloom.config import Config, load_config
from agentloom.errors import ConfigError
from agentloom.squad import AgentNode, CapabilityNode, Edge, WaitNode, Workflow, from_config
from agentloom.squad.templates import TemplateError, references, render, render_args
from agentloom.squad.validate import problems, start_nodes, topological_order

HEAD = """\
version: 1
agents:
  planner: {model: {builtin: test}}
  reviewer: {model: {builtin: test}}
mcp_servers:
  registry: {transport: stdio, command: registry-server}
commands:
  notify.team: {handler: {ref: "my_commands:notify"}}
"""

RELEASE = HEAD + """\
workflows:
  release:
    description: plan, build, review, approve, publish
    nodes:
      plan:    {agent: planner, input: "{{ input.task }}"}
      build:   {capability: exec, args: {argv: [make, dist]}}
      review:  {agent: reviewer, input: "{{ nodes.plan.output }}", history: none}
      approve: {wait: approval, question: "Ship {{ nodes.build.output }}?"}
      publish: {capability: mcp.registry.publish, args: {version: "{{ nodes.build.output }}"}}
    edges:
      - {from: plan, to: [build, review]}
      - {from: [build, review], to: approve, join: all}
      - {from: approve, to: publish, when: "approved"}
      - {from: build, to: plan, on_error: retry_with_feedback, max: 2}
"""


def load(tmp_path: Path, text: str) -> Config:
    path = tmp_path / "agentloom.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_config(path)


def error_lines(tmp_path: Path, workflow: str) -> list[str]:
    """The problem lines of loading HEAD plus ``workflows: {w: <workflow>}``."""
    text = HEAD + "workflows:\n  w:\n" + textwrap.indent(textwrap.dedent(workflow), "    ")
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    assert caught.value.code == "CONFIG_INVALID"
    lines = str(caught.value).splitlines()
    if len(lines) == 1:  # one problem: "<file>: <problem>"
        return [lines[0].split(": ", 1)[1]]
    return lines[1:]


def has(lines: list[str], start: str) -> bool:
    return any(line.startswith(start) for line in lines)


def release_builder() -> Workflow:
    return (Workflow("release", description="plan, build, review, approve, publish")
            .agent("plan", "planner", input="{{ input.task }}")
            .capability("build", "exec", args={"argv": ["make", "dist"]})
            .agent("review", "reviewer", input="{{ nodes.plan.output }}", history="none")
            .wait("approve", question="Ship {{ nodes.build.output }}?")
            .capability("publish", "mcp.registry.publish", args={"version": "{{ nodes.build.output }}"})
            .edge("plan", ["build", "review"])
            .edge(["build", "review"], "approve", join="all")
            .edge("approve", "publish", when="approved")
            .edge("build", "plan", on_error="retry_with_feedback", max=2))


# -- the issue's example -------------------------------------------------------------------------


def test_i20_the_issues_example_loads_into_a_spec(tmp_path: Path) -> None:
    spec = from_config(load(tmp_path, RELEASE))["release"]

    assert list(spec.nodes) == ["plan", "build", "review", "approve", "publish"]
    assert spec.nodes["plan"] == AgentNode(name="plan", agent="planner", input="{{ input.task }}")
    assert spec.nodes["build"] == CapabilityNode(name="build", capability="exec",
                                                 args={"argv": ["make", "dist"]})
    assert spec.nodes["approve"] == WaitNode(name="approve", question="Ship {{ nodes.build.output }}?")
    assert spec.edges == (
        Edge(sources=("plan",), targets=("build", "review")),
        Edge(sources=("build", "review"), targets=("approve",), join="all"),
        Edge(sources=("approve",), targets=("publish",), when="approved"),
        Edge(sources=("build",), targets=("plan",), on_error="retry_with_feedback", max=2))
    assert spec.description == "plan, build, review, approve, publish"
    assert spec.agents() == ("planner", "reviewer")
    assert spec.capabilities() == ("exec", "mcp.registry.publish")
    assert start_nodes(spec) == ("plan",)
    assert topological_order(spec) == ("plan", "build", "review", "approve", "publish")
    assert problems(spec, agents=["planner", "reviewer"],
                    capabilities=["exec", "mcp.registry.publish"]) == []


def test_i20_the_builder_gives_the_yaml_spec_with_the_same_digest(tmp_path: Path) -> None:
    from_yaml = from_config(load(tmp_path, RELEASE))["release"]
    built = release_builder().build(agents=["planner", "reviewer"])

    assert built == from_yaml
    assert built.digest == from_yaml.digest
    changed = release_builder().edge("approve", "plan", when="rejected", max=1).build()
    assert changed.digest != from_yaml.digest


def test_i20_a_config_snapshot_keeps_the_edges_yaml_keys(tmp_path: Path) -> None:
    dumped = load(tmp_path, RELEASE).model_dump(mode="json")["workflows"]["release"]
    assert dumped["edges"][0] == {"from": ["plan"], "to": ["build", "review"], "join": "all",
                                  "when": None, "on_error": None, "max": None}


def test_i20_a_loop_back_with_max_is_fine_and_its_head_starts(tmp_path: Path) -> None:
    config = load(tmp_path, HEAD + """\
workflows:
  w:
    nodes:
      write:  {agent: planner, input: "{{ input.task }}"}
      review: {agent: reviewer, input: "{{ nodes.write.output }}"}
      ship:   {capability: exec, args: {argv: [echo, "{{ nodes.write.output }}"]}}
    edges:
      - {from: write, to: review}
      - {from: review, to: write, when: revise, max: 3}
      - {from: review, to: ship, when: ok}
""")
    spec = from_config(config)["w"]
    assert start_nodes(spec) == ("write",)
    assert topological_order(spec) == ("write", "review", "ship")


def test_i20_a_node_reached_only_by_an_error_edge_does_not_start(tmp_path: Path) -> None:
    config = load(tmp_path, (HEAD + """\
workflows:
  w:
    nodes:
      build:  {capability: exec, args: {argv: [make]}}
      notify: {capability: command.notify.team}
    edges:
      - {from: build, to: notify, on_error: route}
""").replace("notify.team: {handler", "notify.team: {expose_as_tool: true, handler"))
    assert start_nodes(from_config(config)["w"]) == ("build",)


# -- every mistake names its key path ------------------------------------------------------------


def test_i20_an_edge_naming_an_unknown_node_is_refused(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  build: {capability: exec}
  ship:  {capability: exec}
edges:
  - {from: build, to: [ship, shipp]}
  - {from: buidl, to: ship}
""")
    assert "workflows.w.edges[0].to: no node named 'shipp'; did you mean 'ship'? nodes: build, ship" in lines
    assert has(lines, "workflows.w.edges[1].from: no node named 'buidl'; did you mean 'build'?")


def test_i20_a_cycle_without_max_is_refused(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  a: {capability: exec}
  b: {capability: exec}
  c: {capability: exec}
edges:
  - {from: a, to: b}
  - {from: b, to: c}
  - {from: c, to: b}
""")
    assert lines == ["workflows.w.edges[2]: edges form a cycle with no bound (c → b → c); give "
                         "one of its edges `max: N` (how often it may fire in one run)"]


def test_i20_a_self_loop_or_error_loop_without_max_is_refused(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  plan:  {agent: planner}
  build: {capability: exec}
edges:
  - {from: plan, to: build}
  - {from: build, to: plan, on_error: retry_with_feedback}
  - {from: build, to: build, on_error: route}
""")
    assert has(lines, "workflows.w.edges[1]: edges form a cycle with no bound (build → plan → build)")
    assert has(lines, "workflows.w.edges: no start node")
    assert has(lines, "workflows.w.edges[2]: edges form a cycle with no bound (build → build)")


def test_i20_an_unreachable_node_is_refused(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  start: {capability: exec}
  a: {capability: exec}
  b: {capability: exec}
edges:
  - {from: a, to: b}
  - {from: b, to: a}
""")
    assert has(lines, "workflows.w.nodes.a: unreachable: no path of edges leads to it from a start "
                      "node (start)")
    assert has(lines, "workflows.w.nodes.b: unreachable")


def test_i20_a_workflow_without_a_start_node_is_refused(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  a: {capability: exec}
  b: {capability: exec}
edges:
  - {from: a, to: b}
  - {from: b, to: a}
""")
    assert has(lines, "workflows.w.edges: no start node")


def test_i20_a_template_naming_no_node_is_refused(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  plan:  {agent: planner}
  build: {capability: exec, args: {argv: [make, "{{ nodes.plna.output }}"]}}
edges:
  - {from: plan, to: build}
""")
    assert ("workflows.w.nodes.build.args.argv[1]: {{ nodes.plna.output }} names no node; "
            "did you mean 'plan'? nodes: plan, build") in lines


def test_i20_a_template_naming_a_node_that_cannot_have_run_before_is_refused(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  plan:   {agent: planner}
  build:  {capability: exec}
  review: {agent: reviewer, input: "{{nodes.build.output}}"}
  fix:    {agent: planner, input: "again: {{ nodes.fix.output }}"}
edges:
  - {from: plan, to: [build, review]}
  - {from: build, to: fix, on_error: route}
  - {from: fix, to: plan, max: 1}
""")
    assert ("workflows.w.nodes.review.input: {{ nodes.build.output }}: node 'build' cannot have run "
            "before 'review' (no path of edges leads from it to 'review'); name a node before it "
            "(plan) or add an edge") in lines
    assert has(lines, "workflows.w.nodes.fix.input: {{ nodes.fix.output }}: a node cannot use its own output")


def test_i20_a_template_expression_other_than_task_or_output_is_refused(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  plan: {agent: planner, input: "{{ input.tsk }}"}
  ask:  {wait: approval, question: "ok {{ nodes.plan.output }"}
edges:
  - {from: plan, to: ask}
""")
    assert ("workflows.w.nodes.plan.input: unknown template expression '{{ input.tsk }}'; a template "
            "may use only {{ input.task }}, {{ nodes.NAME.output }} or {{ nodes.NAME.artifacts }}"
            ) in lines
    assert has(lines, "workflows.w.nodes.ask.question: a '{{' is never closed")


def test_i20_an_unknown_key_is_refused_listing_the_allowed_keys(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  plan: {agent: planner, inptu: "x"}
edges:
  - {from: plan, to: plan, max: 1, wehn: x}
descripton: x
""")
    assert ("workflows.w.nodes.plan.inptu: unknown key 'inptu'; did you mean 'input'? allowed keys "
            "at workflows.w.nodes.plan: agent, history, input, inputs, outputs") in lines
    assert has(lines, "workflows.w.edges[0].wehn: unknown key 'wehn'; did you mean 'when'? allowed "
                      "keys at workflows.w.edges[0]: from, join, max, on_error, to, when")
    assert has(lines, "workflows.w.descripton: unknown key 'descripton'; did you mean 'description'?")


def test_i20_a_node_with_two_kinds_or_none_is_refused(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  plan: {agent: planner, capability: exec}
  other: {input: "x"}
""")
    assert ("workflows.w.nodes.plan: a node is one of an agent, a capability or a wait: give "
            "exactly one of `agent`, `capability` or `wait` (got agent and capability)") in lines
    assert has(lines, "workflows.w.nodes.other: a node needs exactly one of `agent: NAME`")


def test_i20_an_unknown_agent_is_refused_listing_the_defined_ones(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  plan: {agent: planer}
""")
    assert lines == ["workflows.w.nodes.plan.agent: no agent named 'planer'; did you mean "
                         "'planner'? defined: planner, reviewer"]


def test_i20_a_capability_that_names_nothing_configured_is_refused(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  a: {capability: fs.raed}
  b: {capability: mcp.registy.publish}
  c: {capability: command.notify.team}
  d: {capability: a2a.helper}
  e: {capability: "my_tools:search"}
  f: {capability: mcp.registry.publish}
""")
    assert has(lines, "workflows.w.nodes.a.capability: unknown capability 'fs.raed'; did you mean 'fs.read'?")
    assert has(lines, "workflows.w.nodes.b.capability: no MCP server named 'registy'; did you mean "
                      "'registry'?")
    assert ("workflows.w.nodes.c.capability: command 'notify.team' is not exposed as a tool; set "
            "commands.notify.team.expose_as_tool: true") in lines
    assert has(lines, "workflows.w.nodes.d.capability: no A2A agent named 'helper'")
    assert not has(lines, "workflows.w.nodes.e") and not has(lines, "workflows.w.nodes.f")


def test_i20_the_edge_rules_are_checked(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  a: {capability: exec}
  b: {capability: exec}
  c: {wait: approval}
edges:
  - {from: [a, b], to: c, on_error: route}
  - {from: a, to: c, on_error: route, when: x}
  - {from: [a, b], to: c, join: any, when: approved}
  - {from: a, to: [b, b]}
""")
    assert has(lines, "workflows.w.edges[0].from: an error edge (on_error) routes the failure of one node")
    assert has(lines, "workflows.w.edges[1].when: an error edge fires when its source failed")
    assert has(lines, "workflows.w.edges[2].when: `when` compares the output of one node")
    assert "workflows.w.edges[3].to: 'b' is listed twice; remove one" in lines


def test_i20_the_edge_keys_have_their_shapes(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  a: {capability: exec}
  b: {capability: exec}
  c: {wait: approval, history: none}
edges:
  - {from: a, to: b, max: 0, join: some}
  - {from: [], on_error: skip}
""")
    assert "workflows.w.edges[0].max: must be at least 1 (got 0)" in lines
    assert "workflows.w.edges[0].join: must be 'all' or 'any' (got 'some')" in lines
    assert has(lines, "workflows.w.nodes.c.history: unknown key 'history'")
    assert has(lines, "workflows.w.edges[1].from: must have at least 1 entry")
    assert "workflows.w.edges[1].to: is required; add it" in lines
    assert "workflows.w.edges[1].on_error: must be 'route' or 'retry_with_feedback' (got 'skip')" in lines


def test_i20_history_and_wait_refuse_any_other_value(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, """\
nodes:
  a: {agent: planner, history: full}
  b: {wait: vote}
""")
    assert "workflows.w.nodes.a.history: must be 'none' or {session: NAME} (got 'full')" in lines
    assert "workflows.w.nodes.b.wait: must be 'approval' or 'message' (got 'vote')" in lines


# -- the builder ---------------------------------------------------------------------------------


def test_i20_the_builder_refuses_what_the_yaml_refuses_at_the_same_key_paths() -> None:
    builder = (Workflow("w").agent("plan", "planer").capability("plan", "exec")
               .capability("build", "exec", args={"when": "{{ nodes.ship.output }}"})
               .edge("plan", "biuld").edge("build", "build"))
    with pytest.raises(ConfigError) as caught:
        builder.build(agents=["planner"])
    lines = str(caught.value).splitlines()
    assert lines[0] == "workflow 'w': 5 problems:"
    assert has(lines, "workflows.w.nodes.build: unreachable")
    assert "workflows.w.nodes.plan: is defined twice; give each node its own name" in lines
    assert has(lines, "workflows.w.edges[0].to: no node named 'biuld'; did you mean 'build'?")
    assert has(lines, "workflows.w.edges[1]: edges form a cycle with no bound (build → build)")
    assert has(lines, "workflows.w.nodes.build.args.when: {{ nodes.ship.output }} names no node")

    with pytest.raises(ConfigError, match=r"workflows\.w\.nodes\.a\.agent: no agent named 'x'"):
        Workflow("w").agent("a", "x").build(agents=["planner"])
    with pytest.raises(ConfigError, match=r"workflows\.w\.nodes\.a\.capability: no capability 'fs\.raed'; "
                       r"did you mean 'fs\.read'\?"):
        Workflow("w").capability("a", "fs.raed").build(capabilities=["fs.read", "exec"])
    with pytest.raises(ConfigError, match=r"workflows\.w\.edges\[0\]\.on_error: must be 'route' or "
                       r"'retry_with_feedback' \(got 'retry'\)"):
        Workflow("w").agent("a", "x").edge("a", "a", on_error="retry", max=1).build()  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"workflows\.w\.nodes: must have at least 1 entry"):
        Workflow("w").build()


def test_i20_unchecked_agents_and_capabilities_pass_the_builder() -> None:
    spec = Workflow("w").agent("a", "anyone").capability("b", "whatever.tool").edge("a", "b").build()
    assert spec.agents() == ("anyone",) and spec.capabilities() == ("whatever.tool",)


# -- templates -----------------------------------------------------------------------------------


def test_i20_templates_render_the_task_and_node_outputs() -> None:
    outputs = {"plan": "the plan", "build": "dist/app-1.2.tar.gz", "evil": "{{ input.task }}"}
    assert render("Do: {{ input.task }} / {{nodes.plan.output}} / {{  nodes.build.output  }}",
                  task="ship it", outputs=outputs) == "Do: ship it / the plan / dist/app-1.2.tar.gz"
    assert render("no templates here", task="t", outputs={}) == "no templates here"
    assert render("{{ nodes.evil.output }}", task="t", outputs=outputs) == "{{ input.task }}"
    assert render_args({"argv": ["tar", "{{ nodes.build.output }}", 3, {"k": "{{ input.task }}"}],
                        "n": None, "{{ input.task }}": True}, task="t", outputs=outputs) == {
        "argv": ["tar", "dist/app-1.2.tar.gz", 3, {"k": "t"}], "n": None, "{{ input.task }}": True}
    assert references("{{ nodes.plan.output }} and {{nodes.build.output}} {{ input.task }}") == {
        "plan", "build"}


def test_i20_templates_refuse_other_expressions_and_missing_outputs() -> None:
    with pytest.raises(TemplateError, match=r"unknown template expression '\{\{ env\.HOME \}\}'") as bad:
        references("{{ env.HOME }}")
    assert bad.value.code == "TEMPLATE_INVALID" and isinstance(bad.value, ConfigError)
    with pytest.raises(TemplateError, match="never closed"):
        render("{{ input.task", task="t", outputs={})
    with pytest.raises(TemplateError, match="unknown template expression"):
        render_args({"a": ["{{ nodes.plan.result }}"]}, task="t", outputs={"plan": "x"})
    with pytest.raises(TemplateError,
                       match=r"node 'plan', which has none \(outputs so far: build\)") as missing:
        render("{{ nodes.plan.output }}", task="t", outputs={"build": "b"})
    assert missing.value.code == "TEMPLATE_OUTPUT_MISSING"


def test_i20_node_and_workflow_names_that_cannot_name_a_call_or_a_folder_are_refused() -> None:
    bad_node = Workflow("ok").capability("a b", "exec")
    with pytest.raises(ConfigError) as raised:
        bad_node.build()
    assert "workflows.ok.nodes" in str(raised.value) and "node name 'a b'" in str(raised.value)
    with pytest.raises(ConfigError) as raised:
        Workflow("re/lease").capability("a", "exec").build()
    assert "workflow name 're/lease'" in str(raised.value)
