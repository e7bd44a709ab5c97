"""Issue #36 (2): the offline ``TestModel`` never calls a capability it cannot call
meaningfully — ``result_read`` only with a result ref a result of its turn handed out.

The runs are real: a Runtime on a SQLite file, read back with ``agentloom runs show --json``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import agentloom
from agentloom.context.results import RESULT_READ_SCHEMA
from agentloom.models.offline import TestModel
from agentloom.models.types import Message, ModelRequest, ToolCall, ToolDef
from agentloom.results import result_ref

READ = ToolDef(name="result_read", description="Read more of a large earlier result.",
               parameters=RESULT_READ_SCHEMA)
LIST = ToolDef(name="fs_list", description="List a folder.",
               parameters={"type": "object", "properties": {"path": {"type": "string"}}})


@agentloom.tool
def count_words(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


@agentloom.tool
def long_report(topic: str) -> str:
    """Write a long report (longer than a tool message's preview)."""
    return f"{topic}: " + "word " * 5000


def _run(tmp_path: Path, tools: tuple[Any, ...]) -> dict[str, Any]:
    store = f"sqlite:///{tmp_path / 'runs.db'}"

    async def go() -> str:
        runtime = agentloom.Runtime(
            [agentloom.AgentSpec(name="main", model=TestModel(), tools=tools)], store=store)
        try:
            result = await runtime.run("List the files")
            assert result.status == "succeeded", result
            return result.run_id
        finally:
            await runtime.aclose()

    run_id = asyncio.run(go())
    done = subprocess.run([sys.executable, "-m", "agentloom", "runs", "show", run_id, "--json",
                           "--store", store], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    shown: dict[str, Any] = json.loads(done.stdout)
    return shown


def test_i36_2_a_run_with_the_default_tools_shows_no_failed_call(tmp_path: Path) -> None:
    shown = _run(tmp_path, ("fs.list", count_words))  # result.read is offered as well

    calls = [op for op in shown["operations"] if op["kind"] != "model"]
    assert sorted(op["capability"] for op in calls) == ["count_words", "fs.list"]
    assert [op["status"] for op in shown["operations"]] == ["succeeded"] * len(shown["operations"])
    assert "result_read" not in (shown["output"] or "")


def test_i36_2_result_read_is_called_with_the_ref_a_long_result_handed_out(tmp_path: Path) -> None:
    shown = _run(tmp_path, (long_report,))

    calls = [op for op in shown["operations"] if op["kind"] != "model"]
    assert [op["capability"] for op in calls] == ["long_report", "result.read"]
    report, read = calls
    assert read["proposed_arguments"] == {"result_ref": result_ref(report["operation_id"])}
    assert [op["status"] for op in shown["operations"]] == ["succeeded"] * len(shown["operations"])
    assert json.loads(read["effective_result"])["text"].startswith("topic: word word")
    assert "- result_read [call_1_ref_0]: succeeded:" in shown["output"]


def test_i36_2_without_a_ref_in_its_turn_the_test_model_calls_no_reference_tool() -> None:
    model = TestModel()
    task = Message(role="user", content="go")
    first = model.respond(ModelRequest(messages=(task,), tools=(LIST, READ)))
    assert [c.name for c in first.tool_calls] == ["fs_list"]

    alone = model.respond(ModelRequest(messages=(task,), tools=(READ,)))
    assert alone.tool_calls == () and alone.text.startswith("test model: no tools to call")

    # a ref of an earlier turn (before the last user message) belongs to another run's
    # results, as far as this turn knows: it is not read
    earlier = (Message(role="user", content="before"),
               Message(role="assistant", tool_calls=(ToolCall(id="c0", name="fs_list",
                                                              arguments="{}"),)),
               Message(role="tool", tool_call_id="c0", name="fs_list",
                       content=f"[truncated … result_ref {result_ref('op-1')!r} …]"),
               Message(role="assistant", content="done"))
    later = model.respond(ModelRequest(messages=(*earlier, task), tools=(READ,)))
    assert later.tool_calls == ()


def test_i36_2_each_ref_is_read_once_and_the_read_itself_is_never_read() -> None:
    model = TestModel()
    ref = result_ref("op-1", "stdout")
    turn = [Message(role="user", content="go"),
            Message(role="assistant", tool_calls=(ToolCall(id="call_1_0", name="fs_list",
                                                           arguments="{}"),)),
            Message(role="tool", tool_call_id="call_1_0", name="fs_list",
                    content=f"big… read the rest with result_read(result_ref='{ref}')")]
    read = model.respond(ModelRequest(messages=tuple(turn), tools=(LIST, READ)))
    assert [(c.name, json.loads(c.arguments)) for c in read.tool_calls] == [
        ("result_read", {"result_ref": ref})]

    turn += [Message(role="assistant", tool_calls=read.tool_calls),
             Message(role="tool", tool_call_id=read.tool_calls[0].id, name="result_read",
                     content=f"more… and result_ref {result_ref('op-2')!r}")]
    summary = model.respond(ModelRequest(messages=tuple(turn), tools=(LIST, READ)))
    assert summary.tool_calls == ()
    assert summary.text.startswith("test model saw 2 tool result(s):")


def test_i36_2_a_one_of_branch_applies_beside_the_rest_of_its_schema() -> None:
    # exec's shape: the properties at the top, which of them is required in ``oneOf`` — the
    # test model used to send ``argv`` as a string (not schema-valid, so a failed call)
    from jsonschema import Draft202012Validator

    from agentloom.models.offline import example_arguments

    schema = {"type": "object", "additionalProperties": False,
              "properties": {"argv": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                             "shell_script": {"type": "string"}},
              "oneOf": [{"required": ["argv"]}, {"required": ["shell_script"]}]}
    value = example_arguments(schema)
    Draft202012Validator(schema).validate(value)
    assert value == {"argv": ["argv"]}
