"""Issue 20 / 000 §7.1: an AgentNode runs input_only — no session, no history — unless it is
granted one explicitly (``history: {session: NAME}``). The grant puts the agent's earlier
turns in that session of its own before the node's input (pinned when the node is called),
read only: the node still works in its own invocation folder and the session's folder is
never its workspace; a session the agent may not read fails the node with a clear error. On
the real OpenAI wire (a scripted server), on memory, SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.agent.conftest import answer, connection, run, sent_messages

from agentloom.agent import AgentSpec, Runtime
from agentloom.squad import Workflow, from_config
from agentloom.squad.driver import WorkflowProgram, node_rows
from agentloom.testing.openai_server import ScriptedOpenAIServer

from .test_i20_definition import error_lines, has, load

HEAD = "version: 1\nagents:\n  reviewer: {model: {builtin: test}}\n"


def _review(history: object) -> Workflow:
    return (Workflow("review")
            .agent("granted", "reviewer", input="What is the code word?", history=history)
            .agent("plain", "reviewer", input="What is the code word, again?")
            .edge("granted", "plain"))


async def test_i20_a_history_grant_gives_an_agent_node_its_sessions_turns_and_nothing_else(
        store_url: str, servers: Callable[[], ScriptedOpenAIServer],
        runtime_factory: Callable[..., Runtime]) -> None:
    srv = servers()
    srv.script(answer("noted"), answer("kiwi"), answer("I was not told"))
    rt = runtime_factory([AgentSpec(name="reviewer", model=connection(srv))], store=store_url,
                         programs=[WorkflowProgram(_review({"session": "s1"}).build())])
    told = await run(rt, "Remember: the code word is kiwi.", agent="reviewer", session="s1")
    assert told.status == "succeeded"

    result = await run(rt, "go", agent="workflow:review")

    assert result.status == "succeeded", result.error
    granted, plain = sent_messages(srv, 1), sent_messages(srv, 2)
    assert [(m["role"], m["content"]) for m in granted if m["role"] != "system"] == [
        ("user", "Remember: the code word is kiwi."), ("assistant", "noted"),
        ("user", "What is the code word?")]
    assert [(m["role"], m["content"]) for m in plain if m["role"] != "system"] == [
        ("user", "What is the code word, again?")]
    assert [r["data"]["output"] for r in node_rows(rt.store, result.run_id)] == [
        "kiwi", "I was not told"]
    # read only: the node worked in its own invocation folder, never the session's
    scopes = rt.kernel.environment.scopes.scopes_for_run(result.run_id)
    assert sorted(s.partition_kind for s in scopes) == [
        "invocation", "invocation", "workflow_session"]
    assert all(s.partition_id != "s1" for s in scopes)


async def test_i20_a_grant_of_a_session_the_agent_may_not_read_fails_the_node_clearly(
        servers: Callable[[], ScriptedOpenAIServer],
        runtime_factory: Callable[..., Runtime]) -> None:
    srv = servers()
    srv.script(answer("mine"))
    rt = runtime_factory([AgentSpec(name="reviewer", model=connection(srv)),
                          AgentSpec(name="other", model=connection(srv))],
                         store="memory://",
                         programs=[WorkflowProgram(_review({"session": "theirs"}).build())])
    assert (await run(rt, "a secret", agent="other", session="theirs")).status == "succeeded"

    result = await run(rt, "go", agent="workflow:review")

    assert result.status == "failed" and result.error is not None
    assert "its history grant cannot be read" in result.error.message
    assert "belongs to another scope" in result.error.message
    assert len(srv.model_requests) == 1  # the reviewer never ran: nothing of theirs was sent


def test_i20_history_is_none_or_a_session_grant_in_the_yaml_and_the_builder_alike(
        tmp_path: Path) -> None:
    spec = from_config(load(tmp_path, HEAD + """\
workflows:
  review:
    nodes:
      granted: {agent: reviewer, input: "What is the code word?", history: {session: s1}}
      plain:   {agent: reviewer, input: "What is the code word, again?"}
    edges:
      - {from: granted, to: plain}
"""))["review"]
    assert spec.digest == _review({"session": "s1"}).build().digest
    assert spec.nodes["granted"].to_dict()["history"] == {"session": "s1"}

    lines = error_lines(tmp_path, """\
nodes:
  a: {agent: reviewer, history: all}
  b: {agent: reviewer, history: {session: ""}}
  c: {agent: reviewer, history: {session: s1, turns: 3}}
""")
    assert has(lines, "workflows.w.nodes.a.history: must be 'none' or {session: NAME} "
                      "(got 'all')"), lines
    assert has(lines, "workflows.w.nodes.b.history: a history grant's 'session' must name"), lines
    assert has(lines, "workflows.w.nodes.c.history: unknown key 'turns' in a history grant"), lines
