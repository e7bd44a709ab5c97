"""Issue 19: the A2A send handler and the card check on their own — a card that offers no
A2A 1.0 interface AgentLoom speaks is refused, a remote agent nobody can reach is a failure
with nothing sent, and a task that asked for input is answered by a second call naming it."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agentloom.a2a.card import checked_card, fetch_agent
from agentloom.a2a.catalog import A2aAgent
from agentloom.a2a.errors import A2aError
from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.config.a2a import A2aAgentConfig
from agentloom.ids import new_id


def _card(*interfaces: dict[str, str]) -> dict[str, Any]:
    return {"name": "x", "description": "d", "version": "1", "capabilities": {},
            "defaultInputModes": [], "defaultOutputModes": [], "skills": [],
            "supportedInterfaces": list(interfaces)}


@pytest.mark.parametrize("interfaces", [
    [{"url": "http://h/a", "protocolBinding": "JSONRPC", "protocolVersion": "0.3.0"}],
    [{"url": "http://h/a", "protocolBinding": "GRPC", "protocolVersion": "1.0"}],
    [{"url": "http://h/a", "protocolBinding": "JSONRPC"}],
], ids=["0.3", "grpc-only", "no-version"])
def test_i19_a_card_without_a_1_0_jsonrpc_or_rest_interface_is_refused(
    interfaces: list[dict[str, str]],
) -> None:
    with pytest.raises(A2aError) as caught:
        checked_card("a2a_agents.x", "http://h/card", _card(*interfaces))
    assert caught.value.code == "A2A_VERSION_UNSUPPORTED"
    assert "a2a_agents.x" in str(caught.value) and "1.0" in str(caught.value)


def test_i19_only_the_1_0_interfaces_of_a_card_are_kept_in_its_order() -> None:
    card = checked_card("a2a_agents.x", "http://h/card", _card(
        {"url": "http://h/old", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        {"url": "http://h/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0.1"},
        {"url": "http://h/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}))
    assert [i.url for i in card.supported_interfaces] == ["http://h/rest", "http://h/rpc"]


def _context() -> AttemptContext:
    return AttemptContext(operation_id=new_id(), attempt_no=1, run_id="run", role="main",
                          deadline=time.time() + 60)


def _request(context: AttemptContext, **arguments: str) -> CapabilityRequest:
    return CapabilityRequest(operation_id=context.operation_id, resource_version_id="rel",
                             capability_key="a2a.lab.send", arguments=arguments)


async def test_i19_an_unreachable_agent_fails_with_nothing_sent() -> None:
    card = checked_card("a2a_agents.lab", "http://127.0.0.1:9/card", _card(
        {"url": "http://127.0.0.1:9/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}))
    agent = A2aAgent(name="lab", config=A2aAgentConfig(card_url="http://127.0.0.1:9/card"),
                     card=card)
    context = _context()

    result = await agent.handler().invoke_once(_request(context, message="hi"), context)

    assert result.status == "failed" and result.error is not None
    assert result.error.code == "A2A_CONNECT_FAILED"
    assert result.error.external_outcome == "not_started" and result.error.category == "transport"


async def test_i19_3_a_task_that_asked_for_input_is_answered_by_a_call_naming_it(
    labs: Any,
) -> None:
    lab = labs()
    handler = fetch_agent("lab", A2aAgentConfig(card_url=lab.card_url)).handler()
    first = _context()
    asked = await handler.invoke_once(_request(first, message="ask"), first)
    assert asked.status == "failed" and asked.error is not None
    details = asked.error.details

    second = _context()
    answered = await handler.invoke_once(_request(
        second, message="account 7", task_id=details["task_id"],
        context_id=details["context_id"]), second)

    assert answered.status == "succeeded", answered
    assert "answer: account 7" in answered.text()
    assert answered.metadata["a2a"]["task_id"] == details["task_id"]
    await handler.clients.aclose()
