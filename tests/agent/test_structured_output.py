"""Structured output (#12 point 7): an agent with an output schema (``AgentSpec.output``, or a
pydantic ``output_type``) asks for its final answer in that format where its preset can
(``response_format`` json_schema on Chat, ``text.format`` on Responses, JSON mode plus the
schema in the system message, or the system message only), validates it, gives the model
exactly one corrective turn naming the errors, and returns the parsed JSON as
``RunResult.output`` (stored as ``runs.data.output``). A second invalid answer ends the run
``failed`` with ``OUTPUT_INVALID``. End to end over the scripted OpenAI server, on every store.

The kill test runs this module as a child (``python -m tests.agent.test_structured_output``)
that SIGKILLs itself once the corrective turn is committed; a new runtime resumes the run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field, field_validator

from agentloom.agent import AgentSpec, Limits, Runtime
from agentloom.agent.output import OutputSpec
from agentloom.hooks.spec import HandlerRef, HookMatch, HookSpec
from agentloom.models.connect import connection_for
from agentloom.testing.openai_server import ScriptedOpenAIServer, responses_turn

from .conftest import WAIT_S, answer, connection, run, sent_messages

REPO = Path(__file__).resolve().parents[2]
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}},
    "required": ["answer"],
}
MISSING = "$: 'answer' is a required property"


def agent(srv: ScriptedOpenAIServer, **kwargs: Any) -> AgentSpec:
    kwargs.setdefault("output", OutputSpec(schema=SCHEMA, name="verdict"))
    return AgentSpec(name="main", model=connection(srv), **kwargs)


def model_keys(rt: Runtime, run_id: str) -> list[str]:
    ops = rt.store.query("operations", {"run_id": run_id, "event_type": "model"},
                         order_by=("created_at",))
    return [op["logical_key"].removeprefix(f"{run_id}/") for op in ops]


async def test_12_7_the_request_carries_the_schema_and_a_valid_answer_is_parsed_into_the_output(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    raw = '{"answer": "42", "confidence": 0.9}'
    server.script(answer(raw))
    rt = runtime_factory([agent(server)], store=store_url)

    result = await run(rt, "what is the answer?")

    assert result.status == "succeeded", result.error
    assert result.output == {"answer": "42", "confidence": 0.9}
    assert json.loads(json.dumps(result.to_dict()))["output"] == result.output
    sent = server.model_requests[0].json
    assert sent["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": False}}
    system = sent["messages"][0]
    assert system["role"] == "system" and "one JSON value" in system["content"]
    assert json.dumps(SCHEMA, sort_keys=True) not in system["content"]  # the request carries it
    row = rt.store.get("runs", {"run_id": result.run_id})
    assert row["data"]["output"] == {"answer": "42", "confidence": 0.9}  # parsed, not a string
    again = await (await rt.resume(result.run_id)).result()  # the stored result, read back
    assert again.output == result.output


async def test_12_7_the_history_keeps_the_raw_answer_text(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    raw = '{"answer": "first"}'
    server.script(answer(raw), answer('{"answer": "second"}'))
    rt = runtime_factory([agent(server)], store=store_url)

    first = await run(rt, "one", session="s1")
    second = await run(rt, "two", session="s1")

    assert (first.output, second.output) == ({"answer": "first"}, {"answer": "second"})
    told = sent_messages(server, 1)
    assert {"role": "assistant", "content": raw} in told  # the session turn: the text as said


async def test_12_7_an_invalid_answer_gets_one_corrective_turn_naming_the_error_then_succeeds(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    invalid = '{"confidence": 0.5}'
    server.script(answer(invalid), answer('{"answer": "42"}'))
    rt = runtime_factory([agent(server)], store=store_url)

    result = await run(rt, "what is the answer?")

    assert result.status == "succeeded", result.error
    assert result.output == {"answer": "42"}
    assert result.steps == 2
    assert len(server.model_requests) == 2
    corrective = server.model_requests[1].json
    *_, said, correction = corrective["messages"]
    assert said == {"role": "assistant", "content": invalid}
    assert correction["role"] == "user"
    assert MISSING in correction["content"] and "Answer again" in correction["content"]
    assert corrective["response_format"] == server.model_requests[0].json["response_format"]
    # the corrective turn is a recorded model call like any other
    assert model_keys(rt, result.run_id) == ["t1/model", "t2/model"]


async def test_12_7_two_invalid_answers_end_the_run_failed_with_output_invalid(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(answer("The answer is 42."), answer('{"confidence": 1}'),
                  answer('{"answer": "never asked"}'))
    rt = runtime_factory([agent(server)], store=store_url)

    result = await run(rt, "what is the answer?")

    assert result.status == "failed" and result.output is None
    assert result.error is not None and result.error.code == "OUTPUT_INVALID"
    assert result.error.category == "validation"
    assert result.error.message.startswith(
        "the final answer of agent 'main' does not match its output schema (verdict) after one "
        "corrective turn: ")
    assert MISSING in result.error.message
    assert result.error.details == {"errors": [MISSING]}
    assert len(server.model_requests) == 2  # exactly one corrective turn
    first_correction = server.model_requests[1].json["messages"][-1]["content"]
    assert "the answer is not JSON (Expecting value)" in first_correction
    row = rt.store.get("runs", {"run_id": result.run_id})
    assert row["status"] == "failed" and row["data"]["error"]["code"] == "OUTPUT_INVALID"


async def test_12_7_an_invalid_answer_on_the_last_step_fails_at_once(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(answer('{"confidence": 1}'), answer('{"answer": "never asked"}'))
    rt = runtime_factory([agent(server, limits=Limits(max_steps=1))], store=store_url)

    result = await run(rt, "what is the answer?")

    assert result.status == "failed" and result.steps == 1
    assert result.error is not None and result.error.code == "OUTPUT_INVALID"
    assert "and no step is left for a corrective turn (limits.max_steps): " + MISSING in \
        result.error.message
    assert len(server.model_requests) == 1


class Verdict(BaseModel):
    answer: str
    score: int = Field(ge=0, le=10)

    @field_validator("answer")
    @classmethod
    def _said_something(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


async def test_12_7_output_type_asks_with_the_models_schema_and_checks_with_the_model(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    # valid against the JSON Schema, refused by the model's own validator
    server.script(answer('{"answer": "  ", "score": 3}'), answer('{"answer": "yes", "score": 7}'))
    spec = AgentSpec(name="main", model=connection(server), output_type=Verdict)
    rt = runtime_factory([spec], store=store_url)

    result = await run(rt, "judge it")

    assert result.status == "succeeded", result.error
    assert result.output == {"answer": "yes", "score": 7}
    assert result.parsed(Verdict) == Verdict(answer="yes", score=7)
    assert server.model_requests[0].json["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "Verdict", "schema": Verdict.model_json_schema(), "strict": False}}
    correction = server.model_requests[1].json["messages"][-1]["content"]
    assert "$.answer: Value error, must not be blank" in correction
    with pytest.raises(ValueError, match="not both"):
        AgentSpec(name="x", model=connection(server), output_type=Verdict,
                  output=OutputSpec(schema=SCHEMA))


@pytest.mark.parametrize(("preset", "model", "response_format"), [
    ("deepseek", "deepseek-chat", {"type": "json_object"}),  # JSON mode only
    ("minimax", "MiniMax-M2", None),  # neither: the system message says it all
])
async def test_12_7_a_preset_without_json_schema_gets_the_schema_in_the_system_message(
    preset: str, model: str, response_format: dict[str, Any] | None,
    server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(answer('{"answer": "42"}'))
    model_source = connection_for(preset, model=model, base_url=server.base_url, api_key="test")
    rt = runtime_factory([AgentSpec(name="main", model=model_source, instructions="Be brief.",
                                    output=OutputSpec(schema=SCHEMA), window=128_000)],
                         store="memory://")

    result = await run(rt, "what is the answer?")

    assert result.status == "succeeded", result.error
    assert result.output == {"answer": "42"}
    sent = server.model_requests[0].json
    assert sent.get("response_format") == response_format
    system = sent["messages"][0]["content"]
    assert system.startswith("Be brief.\n\nGive your final answer as one JSON value")
    assert system.endswith(json.dumps(SCHEMA, sort_keys=True))


async def test_12_7_the_responses_protocol_asks_with_text_format(
    server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(responses_turn('{"answer": "42"}'))
    model_source = connection_for("openai-responses", model="gpt-5", base_url=server.base_url,
                                  api_key="test")
    rt = runtime_factory([AgentSpec(name="main", model=model_source, window=128_000,
                                    output=OutputSpec(schema=SCHEMA, strict=True))],
                         store="memory://")

    result = await run(rt, "what is the answer?")

    assert result.status == "succeeded", result.error
    assert result.output == {"answer": "42"}
    assert server.model_requests[0].json["text"]["format"] == {
        "type": "json_schema", "name": "output", "schema": SCHEMA, "strict": True}


def test_12_7_an_output_schema_that_is_not_a_json_schema_is_refused() -> None:
    with pytest.raises(ValueError, match="is not a valid JSON Schema 2020-12 at #/type"):
        OutputSpec(schema={"type": "strin"})
    with pytest.raises(ValueError, match="output name"):
        OutputSpec(schema=SCHEMA, name="has spaces")


# -- the corrective turn survives a crash ------------------------------------------------------

RUN_ID = "structured-run"
CHILD_TIMEOUT_S = 60.0
MODEL_HOOK_REF = "tests.agent.test_structured_output:allow_model"


def allow_model(event: dict[str, Any]) -> dict[str, Any]:
    return {"decision": "allow"}


def build(store: str, base_url: str, workspace: Path) -> Runtime:
    """The runtime both processes build. A before-hook on model calls makes each model call
    commit on its own (a call without hooks is carried into the next commit)."""
    hook = HookSpec(hook_id="allow-model", timing="before", event="model",
                    match=HookMatch(), handler=HandlerRef(ref=MODEL_HOOK_REF))
    model = connection_for("openai", model="scripted-model", base_url=base_url, api_key="test")
    return Runtime([AgentSpec(name="main", model=model, output=OutputSpec(schema=SCHEMA))],
                   store=store, workspace_root=workspace, hooks=[hook],
                   hook_functions={MODEL_HOOK_REF: allow_model})


async def _child(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--workspace", type=Path, required=True)
    args = parser.parse_args(argv)
    rt = build(args.store, args.base_url, args.workspace)
    result = await (await rt.start("what is the answer?", run_id=RUN_ID)).result()
    print(result.status, flush=True)  # only reached when the crash point did not fire
    await rt.aclose()


@pytest.mark.kill
async def test_12_7_a_resumed_run_replays_the_corrective_turn_without_calling_the_model_again(
    durable_store_url: str, server: ScriptedOpenAIServer, tmp_path: Path,
) -> None:
    server.script(answer('{"confidence": 0.5}'), answer('{"answer": "42"}'))
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_CRASH_AT"}
    env["AGENTLOOM_CRASH_AT"] = "delivered@2"  # the corrective turn's response is committed
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.agent.test_structured_output", "--store", durable_store_url,
        "--base-url", server.base_url, "--workspace", str(tmp_path / "workspaces"), cwd=REPO,
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), CHILD_TIMEOUT_S)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, out.decode(), err.decode()[-3000:])
    rt = build(durable_store_url, server.base_url, tmp_path / "workspaces")
    try:
        assert rt.store.get("runs", {"run_id": RUN_ID})["status"] == "running"
        assert model_keys(rt, RUN_ID) == ["t1/model", "t2/model"]

        result = await asyncio.wait_for((await rt.resume(RUN_ID)).result(), WAIT_S)

        assert result.status == "succeeded", result.error
        assert result.output == {"answer": "42"}
        assert len(server.model_requests) == 2  # both turns replayed from the store
        assert model_keys(rt, RUN_ID) == ["t1/model", "t2/model"]
    finally:
        await rt.aclose()


if __name__ == "__main__":
    asyncio.run(_child(sys.argv[1:]))
