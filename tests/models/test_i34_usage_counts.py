"""Issue #34 (LOW): a provider that reports a negative ``prompt_tokens`` (and no
``total_tokens``) lowered the run's usage totals. A count a provider reports is believed only
when it is a whole number of tokens (an ``int``, not negative); anything else is recorded as
not reported, with a warning naming the field. Through the real OpenAI wire (the scripted
server on 127.0.0.1): the CLI in a process of its own on the preset path, and both adapters
without a preset."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from tests.cli.support import SERVER_KEY_ENV, agentloom, openai_project
from tests.models.conftest import attempt, request

from agentloom.models.adapters import OpenAIChatAdapter, OpenAIResponsesAdapter
from agentloom.models.aggregate import complete_once
from agentloom.testing.openai_server import (
    Chunk,
    Done,
    Event,
    ScriptedOpenAIServer,
    chat_turn,
    chat_usage,
    responses_turn,
)

NOT_COUNTS: list[Any] = [-1000, 12.5, "many", {"n": 1}]


def test_i34_usage_a_negative_prompt_count_never_lowers_the_runs_usage_totals(
    tmp_path: Path, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(SERVER_KEY_ENV, "sk-test")
    config = openai_project(tmp_path / "p", server.base_url, tools=["fs.write"])
    server.script(
        [*chat_turn("", tool_calls=[("w1", "fs_write", json.dumps({"path": "a.txt",
                                                                  "content": "hi"}))],
                    usage=None, done=False), chat_usage(100, 20), Done()],
        [*chat_turn("done", usage=None, done=False),
         Chunk({"choices": [], "usage": {"prompt_tokens": -1000, "completion_tokens": 3}}),
         Done()])

    done = agentloom("run", str(config), "write a", "--store",
                     f"sqlite:///{tmp_path / 'store.db'}", "--json", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["usage"] == {"input_tokens": 100, "output_tokens": 23, "reasoning_tokens": None}
    assert "prompt_tokens" in done.stderr and "-1000" in done.stderr  # the note
    shown = json.loads(agentloom("runs", "show", out["run_id"], "--store",
                                 f"sqlite:///{tmp_path / 'store.db'}", "--json",
                                 cwd=tmp_path).stdout)
    models = [o["usage"] for o in shown["operations"] if o["kind"] == "model"]
    assert [u["input_tokens"] for u in models] == [100, None]


@pytest.mark.parametrize("bad", NOT_COUNTS)
async def test_i34_usage_chat_counts_that_are_not_token_counts_are_not_reported(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter, bad: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server.script([*chat_turn("hi", usage=None, done=False), Chunk({"choices": [], "usage": {
        "prompt_tokens": bad, "completion_tokens": 3, "total_tokens": bad,
        "completion_tokens_details": {"reasoning_tokens": bad}}}), Done()])

    with caplog.at_level(logging.WARNING, logger="agentloom.models"):
        response = await complete_once(chat, request(), attempt())

    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens,
            response.usage.total_tokens, response.usage.reasoning_tokens) == (None, 3, None, None)
    assert "prompt_tokens" in caplog.text and "total_tokens" in caplog.text


@pytest.mark.parametrize("bad", NOT_COUNTS)
async def test_i34_usage_responses_counts_that_are_not_token_counts_are_not_reported(
    server: ScriptedOpenAIServer, responses: OpenAIResponsesAdapter, bad: Any,
) -> None:
    steps = responses_turn("hi")
    last = steps[-1]
    assert isinstance(last, Event)
    last.data["response"]["usage"] = {"input_tokens": bad, "output_tokens": 4,
                                      "total_tokens": bad}
    server.script(steps)

    response = await complete_once(responses, request(), attempt())

    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens,
            response.usage.total_tokens) == (None, 4, None)
