"""A run that writes, reads, edits files and runs a command, then answers (000 §3.1 step 9, §4, §7.3):
every tool result goes back to the model paired with its call id, in request order, and the
workspace holds what the tools did."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agentloom.agent import AgentSpec, Runtime
from agentloom.testing.openai_server import ScriptedOpenAIServer

from .conftest import (
    answer,
    assistant_calls,
    calls,
    connection,
    run,
    sent_messages,
    tool_call,
    tool_results,
    workspace_folder,
)

TOOLS = ("fs.write", "fs.read", "fs.edit", "exec")


def check_pairing(messages: list[dict[str, Any]]) -> list[str]:
    """Every tool message answers a call of the assistant turn just before it, all of that
    turn's calls are answered, in the order they were made; returns the call ids in order."""
    order: list[str] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if message["role"] != "assistant" or not message.get("tool_calls"):
            continue
        ids = [c["id"] for c in message["tool_calls"]]
        answered = [m["tool_call_id"] for m in messages[i:i + len(ids)] if m["role"] == "tool"]
        assert answered == ids, (ids, answered)
        order += ids
        i += len(ids)
    return order


async def test_s3_1_a_run_writes_reads_edits_execs_and_answers_with_every_result_paired_to_its_call(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(
        calls(tool_call("w1", "fs_write", path="a.txt", content="hello world\n"),
              tool_call("w2", "fs_write", path="b.txt", content="second\n")),
        calls(tool_call("r1", "fs_read", path="a.txt")),
        calls(tool_call("e1", "fs_edit", path="a.txt", old_text="world", new_text="loom")),
        calls(tool_call("x1", "exec", argv=["cat", "a.txt", "b.txt"])),
        answer("all done: a.txt says hello loom"),
    )
    rt = runtime_factory([AgentSpec(name="main", model=connection(server), tools=TOOLS)],
                         store=store_url)

    result = await run(rt, "write, read, edit and cat the files", session="sess-tools")

    assert result.status == "succeeded", result.error
    assert result.output == "all done: a.txt says hello loom"
    assert result.steps == 5
    folder = workspace_folder(rt, result.run_id)
    assert (folder / "a.txt").read_text() == "hello loom\n"
    assert (folder / "b.txt").read_text() == "second\n"

    assert len(server.model_requests) == 5 and server.pending == 0
    expected = [[], ["w1", "w2"], ["w1", "w2", "r1"], ["w1", "w2", "r1", "e1"],
                ["w1", "w2", "r1", "e1", "x1"]]
    for n, ids in enumerate(expected):
        messages = sent_messages(server, n)
        assert messages[0] == {"role": "user", "content": "write, read, edit and cat the files"}
        assert check_pairing(messages) == ids
        assert list(tool_results(messages)) == ids
    last = sent_messages(server, 4)
    results = tool_results(last)
    assert json.loads(results["w1"])["path"] == "a.txt"
    assert json.loads(results["w2"])["path"] == "b.txt"
    assert json.loads(results["r1"])["content"] == "hello world\n"
    assert json.loads(results["e1"])["path"] == "a.txt"
    executed = json.loads(results["x1"])
    assert executed["exit_code"] == 0
    assert executed["stdout"] == "hello loom\nsecond\n"
    # the assistant turns are replayed with the arguments the model gave (no hook changed them)
    assert json.loads(assistant_calls(last)["e1"]["arguments"]) == {
        "path": "a.txt", "old_text": "world", "new_text": "loom"}
    assert assistant_calls(last)["x1"]["name"] == "exec"
