"""A resumed run keeps the retry policy and limits it started with (000 §3.3.1; issue #14
item 10).

An agent's ``retry:`` and ``limits:`` are part of the run's frozen release: they go into the
release id, so a configuration whose policy differs is refused ``RELEASE_CHANGED`` naming the
changed key, and a resume goes on under the policy the run started with. A release that sets
none of them keeps the id it had before they were part of it (stored runs still resume).

Real ``agentloom`` processes on a SQLite store under ``tmp_path``; the model is the scripted
server on the real OpenAI wire (127.0.0.1); the run is interrupted by SIGKILL during an exec.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.cli.support import (
    SERVER_KEY_ENV,
    Cli,
    agentloom,
    openai_project,
)
from tests.cli.test_process import run_killed_during_exec

from agentloom.agent import AgentSpec, Limits, Runtime
from agentloom.models.ports import Connection
from agentloom.models.types import ThinkParams
from agentloom.pipeline.retry import RetryPolicy
from agentloom.testing.openai_server import ScriptedOpenAIServer, chat_turn

ONE_BAD_TURN = "    limits: {max_tool_errors: 1}\n"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    monkeypatch.setenv(SERVER_KEY_ENV, "sk-test")
    monkeypatch.delenv("AGENTLOOM_STORE", raising=False)
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(store=f"sqlite:///{tmp_path / 'store' / 'agentloom.db'}")


def _killed_during_exec(tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer) -> tuple[Path, str]:
    """A run started with ``max_tool_errors: 1``, SIGKILLed while its exec runs. Resumed, its
    model then calls a tool it was not offered, then answers: under the original limit the
    first bad turn ends the invocation; under the default (3) the answer would come."""
    server.script(
        chat_turn("", tool_calls=[("s1", "exec", json.dumps({"argv": ["sleep", "30"],
                                                             "timeout_s": 120}))]),
        chat_turn("", tool_calls=[("b1", "no.such_tool", "{}")]),
        chat_turn("answered after a bad turn"))
    config = openai_project(tmp_path / "p", server.base_url, tools=["exec"], extra=ONE_BAD_TURN)
    return config, run_killed_during_exec(cli, config, tmp_path)


@pytest.mark.kill
def test_s3_3_1_changed_limits_refuse_resume_and_the_same_ones_keep_the_run_policy(
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer,
) -> None:
    config, run_id = _killed_during_exec(tmp_path, cli, server)
    started = config.read_text(encoding="utf-8")
    config.write_text(started.replace(ONE_BAD_TURN, "    limits: {max_tool_errors: 2}\n"),
                      encoding="utf-8")

    refused = agentloom("runs", "resume", run_id, "--store", cli.store, "--json", cwd=tmp_path)

    assert refused.returncode == 2, (refused.stdout, refused.stderr)
    error = json.loads(refused.stdout)["error"]
    assert error["code"] == "RELEASE_CHANGED"
    assert "changed since it started: agents.main.limits.max_tool_errors;" in error["message"]
    assert cli.json("runs", "show", run_id, "--store", cli.store)["status"] == "interrupted"

    config.write_text(started, encoding="utf-8")  # the limits the run started with
    resumed = agentloom("runs", "resume", run_id, "--store", cli.store, "--json", cwd=tmp_path)

    out = json.loads(resumed.stdout)
    assert (out["run_id"], out["status"]) == (run_id, "failed"), (resumed.stdout, resumed.stderr)
    assert "TOOL_ERRORS_EXCEEDED" in resumed.stdout  # one bad turn: max_tool_errors 1 holds
    assert len(server.model_requests) == 2  # the killed turn and the bad one: no third one


# -- the release id ----------------------------------------------------------------------------

WIRE = Connection(base_url="http://127.0.0.1:9/v1", api_key="k", model="pinned-model")


def _agent(**changes: object) -> AgentSpec:
    return AgentSpec(name="main", model=WIRE, instructions="Answer.", tools=("fs.read",),
                     window=128_000, **changes)  # type: ignore[arg-type]


def test_s3_3_1_a_release_at_the_default_policy_keeps_its_old_id() -> None:
    # the ids these releases had before retry / limits were part of the release id
    assert Runtime._digest([_agent()], []) == "rel-f65cd8ca2a005947"
    assert Runtime._digest([_agent(retry=RetryPolicy(), limits=Limits())], []) == \
        "rel-f65cd8ca2a005947"
    assert Runtime._digest([_agent(think=ThinkParams(enabled=True), max_output_tokens=256)],
                           []) == "rel-25ec70db0a01c71d"


def test_s3_3_1_retry_and_limits_are_part_of_the_release_id() -> None:
    plain = Runtime._digest([_agent()], [])
    retried = Runtime._digest([_agent(retry=RetryPolicy(enabled=True, max_attempts=4))], [])
    tighter = Runtime._digest([_agent(limits=Limits(max_tool_errors=1))], [])

    assert len({plain, retried, tighter}) == 3
    assert Runtime._digest([_agent(retry=RetryPolicy(enabled=True, max_attempts=5))], []) != \
        retried
    # a whole number for a float setting is the same setting
    assert Runtime._digest([_agent(limits=Limits(run_deadline_s=100))], []) == \
        Runtime._digest([_agent(limits=Limits(run_deadline_s=100.0))], [])

