"""003 F08 through a real model call: ``GatewayProposer`` asks the scripted OpenAI server through
the gateway with ``purpose=intent`` (one recorded operation, hooks matching that purpose
apply), and what the model answers is validated like any rule hit."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.models_gateway.support import API_KEY, Gateway, gateway, model_hook

from agentloom.agent.intent_model import INTENT_PURPOSE, GatewayProposer, read_proposal
from agentloom.intent import Recognizer
from agentloom.models.ports import Connection
from agentloom.testing.openai_server import ScriptedOpenAIServer, chat_turn

from .support import TODAY, registry


@pytest.fixture
def server() -> Any:
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture
async def made(tmp_path: Path, server: ScriptedOpenAIServer) -> AsyncIterator[list[Gateway]]:
    made: list[Gateway] = []
    yield made
    for g in made:
        await g.kernel.models.aclose()
        g.kernel.close()


async def _gateway(tmp_path: Path, server: ScriptedOpenAIServer, made: list[Gateway],
                   **kw: Any) -> Gateway:
    conn = Connection(base_url=server.base_url, api_key=API_KEY, model="test-model")
    g = await gateway(f"sqlite:///{tmp_path / 'agentloom.db'}", tmp_path, {"main": conn}, **kw)
    made.append(g)
    return g


async def test_f08_gateway_proposal_is_one_intent_purpose_call_and_is_validated(
        tmp_path: Path, server: ScriptedOpenAIServer, made: list[Gateway]) -> None:
    g = await _gateway(tmp_path, server, made)
    answer = {"intent": "move_meeting", "slots": {"day": "Friday", "room": "B2"}, "confidence": 0.97}
    server.script(chat_turn(json.dumps(answer), usage=(120, 20)))
    proposer = GatewayProposer(g.kernel.models, g.ctx)
    rec = Recognizer(registry(), proposer=proposer, today=lambda: TODAY)
    result = await rec.recognize("could we shift our sync to the end of the week?")
    assert (result.decision, result.intent, result.source) == ("clarify", "move_meeting", "generative")
    assert result.slots == {"day": "friday"}
    assert [p.slot for p in result.invalid] == ["room"]  # the unknown slot is reported
    body = server.model_requests[0].json
    assert "move_meeting" in body["messages"][0]["content"]
    assert body["messages"][-1]["content"] == "could we shift our sync to the end of the week?"
    assert len(g.operations()) == 1
    assert [p["purpose"] for kind, p in g.observed if kind == "model.started"] == [INTENT_PURPOSE]
    assert (proposer.calls, proposer.tokens) == (1, 140)


async def test_f08_a_hook_on_purpose_intent_sees_the_call_and_a_deny_is_no_match(
        tmp_path: Path, server: ScriptedOpenAIServer, made: list[Gateway]) -> None:
    seen: list[Any] = []

    def deny(event: Any) -> dict[str, Any]:
        seen.append(event)
        return {"decision": "deny", "reason": "no model routing here"}

    g = await _gateway(tmp_path, server, made, hooks=[model_hook("h", deny, purpose="intent")])
    rec = Recognizer(registry(), proposer=GatewayProposer(g.kernel.models, g.ctx))
    result = await rec.recognize("could we shift our sync?")
    assert result.decision == "no_match" and "generative fallback failed" in (result.reason or "")
    assert len(seen) == 1 and server.model_requests == []


@pytest.mark.parametrize(("answer", "intent"), [
    ('Sure! {"intent": "x", "slots": {}, "confidence": 0.5} hope that helps', "x"),
    ("no json here", None), ("{not json}", None), ('["a"]', None),
])
def test_f08_read_proposal_takes_the_json_object_or_proposes_nothing(answer: str,
                                                                     intent: str | None) -> None:
    assert read_proposal(answer).get("intent") == intent
