"""Issue #12, point 4: a model corrects its own malformed tool calls.

A call of a tool the model was not offered, or with arguments that are not a JSON object,
becomes a ``failed`` operation with no Attempt whose tool message tells the model what went
wrong (the offered tools / the JSON error and the schema); the loop goes on and the batch's
other calls run. ``limits.max_tool_errors`` turns in a row of only such calls end the run
``TOOL_ERRORS_EXCEEDED`` — counted from the recorded calls, so a resumed run counts the same.

Over the real OpenAI SDK and the scripted server, on memory, SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agentloom import StrictInput, Tool, ToolContext
from agentloom.agent import AgentSpec, Runtime
from agentloom.agent.spec import Limits
from agentloom.testing.openai_server import ScriptedOpenAIServer

from .conftest import (
    WAIT_S,
    answer,
    assistant_calls,
    calls,
    connection,
    run,
    sent_messages,
    tool_call,
    tool_results,
)
from .test_recovery import RUN_ID, Config, build, crash_child, operation


class EchoInput(StrictInput):
    text: str


class Echo(Tool[EchoInput]):
    name = "echo"
    description = "Echo the text back."

    def __init__(self) -> None:
        self.ran: list[str] = []

    async def execute(self, args: EchoInput, ctx: ToolContext) -> str:
        self.ran.append(args.text)
        return f"echo: {args.text}"


def agent(server: ScriptedOpenAIServer, tool: Echo, **limits: Any) -> AgentSpec:
    return AgentSpec(name="main", model=connection(server), tools=(tool, "fs.read"),
                     limits=Limits(**limits))


def tool_ops(rt: Runtime, run_id: str) -> list[dict[str, Any]]:
    return [o for o in rt.kernel.operations(run_id) if o["event_type"] == "tool"]


async def test_12_4_a_tool_not_offered_is_told_to_the_model_which_then_calls_the_right_one(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(calls(tool_call("s1", "web_search", query="weather")),
                  calls(tool_call("e1", "echo", text="sunny")),
                  answer("it is sunny"))
    echo = Echo()
    rt = runtime_factory([agent(server, echo)], store=store_url)

    result = await run(rt, "find the weather")

    assert result.status == "succeeded", result.error
    assert result.output == "it is sunny" and echo.ran == ["sunny"]
    second = sent_messages(server, 1)
    assert assistant_calls(second) == {"s1": {"name": "web_search",
                                              "arguments": '{"query": "weather"}'}}
    assert tool_results(second) == {"s1": (
        "failed: tool 'web_search' is not offered\nThe tools you can call: echo, fs_read, result_read. "
        "Call one of them by its exact name, or answer without a tool.")}
    assert tool_results(sent_messages(server, 2)) == {"s1": tool_results(second)["s1"],
                                                      "e1": "echo: sunny"}
    refused, ran = tool_ops(rt, result.run_id)
    assert (refused["capability_key"], refused["outcome"], refused["phase"]) == (
        "web_search", "failed", "delivered")
    assert refused["data"]["attempts"] == 0
    assert rt.store.query("attempts", {"operation_id": refused["operation_id"]}) == []
    assert refused["data"]["envelope"]["error"]["code"] == "TOOL_NOT_OFFERED"
    assert refused["data"]["request"]["call_id"] == "s1"
    assert refused["data"]["request"]["proposed_arguments"] == {"query": "weather"}
    assert (ran["capability_key"], ran["outcome"]) == ("echo", "succeeded")
    completed = [e.data for e in rt.events(result.run_id) if e.type == "tool.call.completed"]
    assert [(e["call_id"], e["status"]) for e in completed] == [("s1", "failed"),
                                                               ("e1", "succeeded")]


@pytest.mark.parametrize(("arguments", "problem"), [
    ('{"text": "sun', "not valid JSON: Unterminated string starting at: line 1 column 10 (char 9)"),
    ('["sunny"]', "not a JSON object but an array"),
])
async def test_12_4_arguments_that_are_not_a_json_object_are_told_with_the_error_and_the_schema(
    arguments: str, problem: str, store_url: str, server: ScriptedOpenAIServer,
    runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(calls(("j1", "echo", arguments)), calls(tool_call("j2", "echo", text="sunny")),
                  answer("done"))
    echo = Echo()
    rt = runtime_factory([agent(server, echo)], store=store_url)

    result = await run(rt, "echo sunny")

    assert result.status == "succeeded", result.error
    assert echo.ran == ["sunny"]
    second = sent_messages(server, 1)
    assert assistant_calls(second)["j1"]["arguments"] == arguments  # as the model sent them
    (offered,) = [t["function"] for t in server.model_requests[0].json["tools"]
                  if t["function"]["name"] == "echo"]
    schema = json.dumps(offered["parameters"], sort_keys=True, ensure_ascii=False)
    assert tool_results(second)["j1"] == (
        f"failed: the arguments of echo are {problem}\nCall echo again with arguments that are "
        f"one JSON object matching its parameters schema: {schema}")
    refused = tool_ops(rt, result.run_id)[0]
    assert (refused["capability_key"], refused["outcome"], refused["data"]["attempts"]) == (
        "echo", "failed", 0)
    assert refused["data"]["envelope"]["error"]["code"] == "INVALID_ARGUMENTS"


async def test_12_4_a_batch_with_a_bad_call_and_a_good_call_runs_the_good_one(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(calls(tool_call("b1", "web_search", query="x"),
                        tool_call("g1", "echo", text="hi"),
                        ("b2", "echo", "{not json")),
                  answer("half of it worked"))
    echo = Echo()
    rt = runtime_factory([agent(server, echo)], store=store_url)

    result = await run(rt, "do three things")

    assert result.status == "succeeded", result.error
    assert echo.ran == ["hi"]
    told = tool_results(sent_messages(server, 1))
    assert list(told) == ["b1", "g1", "b2"]  # in request order
    assert told["g1"] == "echo: hi"
    assert told["b1"].startswith("failed: tool 'web_search' is not offered")
    assert told["b2"].startswith("failed: the arguments of echo are not valid JSON")
    assert [(o["data"]["request"]["call_id"], o["outcome"], o["data"]["attempts"])
            for o in tool_ops(rt, result.run_id)] == [
        ("b1", "failed", 0), ("g1", "succeeded", 1), ("b2", "failed", 0)]


@pytest.mark.parametrize("limit", [None, 1, 5], ids=["default", "one", "five"])
async def test_12_4_a_model_that_keeps_calling_a_tool_not_offered_ends_tool_errors_exceeded(
    limit: int | None, store_url: str, server: ScriptedOpenAIServer,
    runtime_factory: Callable[..., Runtime],
) -> None:
    expected = 3 if limit is None else limit
    for i in range(expected + 1):  # one more than the limit allows
        server.script(calls(tool_call(f"w{i + 1}", "web_search", query="again")))
    limits = {} if limit is None else {"max_tool_errors": limit}
    rt = runtime_factory([agent(server, Echo(), **limits)], store=store_url)

    result = await run(rt, "search")

    assert result.status == "failed" and result.error is not None
    assert result.error.code == "TOOL_ERRORS_EXCEEDED" and result.error.category == "validation"
    assert result.steps == expected and len(server.model_requests) == expected
    assert f"made {expected} turns in a row whose tool calls could not run " \
        f"(limits.max_tool_errors is {expected})" in result.error.message
    last = f"turn {expected}, call w{expected}: TOOL_NOT_OFFERED: tool 'web_search' is not offered"
    assert last in result.error.message and result.error.details["errors"][-1] == last
    assert len(result.error.details["errors"]) == expected
    ops = tool_ops(rt, result.run_id)
    assert [(o["outcome"], o["data"]["attempts"]) for o in ops] == [("failed", 0)] * expected


async def test_12_4_a_call_that_runs_starts_the_count_again(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    bad = calls(tool_call("w", "web_search", query="again"))
    # a call that ran and failed (a missing file) is no malformed call: it resets the count too
    server.script(bad, bad, calls(tool_call("r", "fs_read", path="missing.txt")), bad, bad,
                  calls(tool_call("e", "echo", text="at last")), bad, bad, answer("made it"))
    echo = Echo()
    rt = runtime_factory([agent(server, echo)], store=store_url)

    result = await run(rt, "search")

    assert result.status == "succeeded", result.error
    assert result.output == "made it" and echo.ran == ["at last"]
    assert [o["outcome"] for o in tool_ops(rt, result.run_id)] == [
        "failed", "failed", "failed", "failed", "failed", "succeeded", "failed", "failed"]


async def test_12_4_a_call_whose_json_does_not_match_the_schema_counts_as_a_tool_error(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(calls(tool_call("w", "web_search", query="x")),
                  calls(tool_call("e", "echo", words="no such field")),
                  calls(("j", "echo", "{")))
    rt = runtime_factory([agent(server, Echo())], store=store_url)

    result = await run(rt, "search")

    assert result.error is not None and result.error.code == "TOOL_ERRORS_EXCEEDED"
    assert [e.split(": ")[1] for e in result.error.details["errors"]] == [
        "TOOL_NOT_OFFERED", "INVALID_ARGUMENTS", "INVALID_ARGUMENTS"]


# -- a crash between two malformed turns -------------------------------------------------------


@pytest.fixture
async def opened() -> AsyncIterator[list[Runtime]]:
    made: list[Runtime] = []
    yield made
    for rt in made:
        await rt.aclose()


@pytest.mark.kill
async def test_12_4_a_resumed_run_counts_the_tool_errors_made_before_the_crash(
    durable_store_url: str, tmp_path: Path, server: ScriptedOpenAIServer,
    opened: list[Runtime],
) -> None:
    for i in range(5):  # more than the limit (3): a count lost in the crash would take them
        server.script(calls(tool_call(f"w{i + 1}", "web_search", query="again")))
    config = Config(store=durable_store_url, workspace=tmp_path / "workspaces",
                    base_url=server.base_url, ledger=tmp_path / "effects.ledger")
    # the second malformed call is recorded, then the process is killed
    await crash_child(config, "effective_saved@2")
    assert len(server.model_requests) == 2
    rt = build(config)
    opened.append(rt)
    assert operation(rt, f"{RUN_ID}/t2/c0")["outcome"] == "failed"

    result = await asyncio.wait_for((await rt.resume(RUN_ID)).result(), WAIT_S)

    assert result.status == "failed" and result.error is not None
    assert result.error.code == "TOOL_ERRORS_EXCEEDED"
    assert len(server.model_requests) == 3  # turns 1 and 2 replayed from the store
    assert [e.split(",")[0] for e in result.error.details["errors"]] == [
        "turn 1", "turn 2", "turn 3"]
    for n in (1, 2, 3):
        op = operation(rt, f"{RUN_ID}/t{n}/c0")
        assert (op["outcome"], op["data"]["attempts"]) == ("failed", 0)
