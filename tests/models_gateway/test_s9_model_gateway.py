"""Spec 000 §9 model bullets through the whole path: gateway → bus → pipeline (hooks, Attempts,
retry, persistence) → ModelHandler → the real OpenAI SDK → the scripted server on 127.0.0.1.

Every test runs on memory, SQLite and PostgreSQL (``store_url``)."""

from __future__ import annotations

from typing import Any

import pytest

from agentloom.hooks.decision import HookDecision
from agentloom.models.connect import connection_for
from agentloom.models.gateway import ModelCallFailed
from agentloom.models.ports import Connection
from agentloom.models.types import ThinkParams
from agentloom.pipeline.retry import RetryPolicy
from agentloom.testing.openai_server import (
    Comment,
    Disconnect,
    Headers,
    ScriptedOpenAIServer,
    Stall,
    Status,
    chat_reasoning,
    chat_role,
    chat_text,
    chat_turn,
)

from .support import API_KEY, model_hook, request


def connection(server: ScriptedOpenAIServer) -> Connection:
    return Connection(base_url=server.base_url, api_key=API_KEY, model="test-model")


async def test_s9_no_per_token_messages_reach_the_bus_hooks_or_observers(
    make: Any, server: ScriptedOpenAIServer
) -> None:
    pieces = [f"w{i} " for i in range(200)]
    server.script(chat_turn(pieces))
    seen: dict[str, list[Any]] = {"before": [], "after": []}

    def before(event: Any) -> dict[str, Any]:
        seen["before"].append(event["payload"])
        return {"decision": "allow"}

    def after(event: Any) -> dict[str, Any]:
        seen["after"].append(event["result"])
        return {"decision": "allow"}

    g = await make({"main": connection(server)},
                   hooks=[model_hook("pre", before), model_hook("post", after, timing="after")])
    response = await g.generate()

    assert response.text == "".join(pieces)
    assert g.kinds() == ["model.started", "operation.started", "operation.completed",
                         "model.completed"]
    assert len(seen["before"]) == 1 and len(seen["after"]) == 1
    assert seen["after"][0]["content"][0]["data"]["text"] == "".join(pieces)
    (op,) = g.operations()
    assert op["event_type"] == "model" and op["capability_key"] == "model.main"
    assert op["outcome"] == "succeeded"
    (attempt,) = g.attempts(op["operation_id"])
    assert attempt["status"] == "succeeded"
    assert attempt["data"]["raw"]["content"][0]["data"]["text"] == "".join(pieces)
    assert op["data"]["raw"]["content"][0]["data"]["text"] == "".join(pieces)
    completed = g.observed[-1][1]
    assert completed["operation_id"] == op["operation_id"]
    assert completed["usage"]["output_tokens"] == 5
    assert all("w1 " not in repr(payload) for _, payload in g.observed)  # no text is broadcast


async def test_s9_complete_response_is_delivered_only_after_post_hooks_and_effective_save(
    make: Any, server: ScriptedOpenAIServer
) -> None:
    server.script(chat_turn("the secret is 42"))
    saved_before_delivery: list[Any] = []

    def redact(event: Any) -> dict[str, Any]:
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/result/content/0/data/text", "value": "[redacted]"}]}

    g = await make({"main": connection(server)}, hooks=[model_hook("redact", redact, timing="after")])
    g.kernel.bus.subscribe(lambda kind, payload: saved_before_delivery.append(
        [op["outcome"] for op in g.operations()]) if kind == "model.completed" else None)
    response = await g.generate()

    assert response.text == "[redacted]"
    assert saved_before_delivery == [["succeeded"]]  # stored before the caller got it
    (op,) = g.operations()
    assert op["data"]["raw"]["content"][0]["data"]["text"] == "the secret is 42"
    assert op["data"]["result"]["content"][0]["data"]["text"] == "[redacted]"
    rows = g.kernel.store.query("hook_invocations", {"operation_id": op["operation_id"]})
    assert [(r["hook_id"], r["timing"], r["status"]) for r in rows] == [("redact", "after", "succeeded")]


async def test_s9_partial_output_then_disconnect_retries_with_a_new_attempt_and_never_splices(
    make: Any, server: ScriptedOpenAIServer
) -> None:
    server.script([chat_role(), chat_reasoning("thinking…"), chat_text("Hello "), chat_text("wor"),
                   Disconnect()])
    server.script(chat_turn("Fresh answer."))
    g = await make({"main": connection(server)},
                   retry=RetryPolicy(enabled=True, max_attempts=2, interval_s=0.01))
    response = await g.generate()

    assert response.text == "Fresh answer."
    assert response.reasoning is None  # the cut Attempt's reasoning is not carried over
    assert len(server.model_requests) == 2
    (op,) = g.operations()
    first, second = g.attempts(op["operation_id"])
    assert first["status"] == "failed"
    assert first["data"]["raw"]["error"]["category"] == "transport"
    assert first["data"]["retry_wait_s"] == pytest.approx(0.01)
    incomplete = first["data"]["raw"]["metadata"]["incomplete"]
    assert incomplete["text"] == "Hello wor" and incomplete["reasoning"] == "thinking…"
    assert second["status"] == "succeeded"
    assert "incomplete" not in second["data"]["raw"]["metadata"]
    assert op["data"]["attempts"] == 2
    assert op["data"]["raw"]["content"][0]["data"]["text"] == "Fresh answer."


async def test_s9_partial_output_without_retry_fails_and_keeps_the_material_as_evidence_only(
    make: Any, server: ScriptedOpenAIServer
) -> None:
    server.script([chat_role(), chat_text("half an ans"), Disconnect()])
    g = await make({"main": connection(server)})
    with pytest.raises(ModelCallFailed) as caught:
        await g.generate()

    assert caught.value.outcome == "failed"
    assert caught.value.error.category == "transport"
    assert caught.value.incomplete is not None and caught.value.incomplete["text"] == "half an ans"
    assert g.kinds()[-1] == "model.failed"
    (op,) = g.operations()
    assert op["outcome"] == "failed" and op["data"]["result"] is None


async def test_s9_first_output_timeout_through_the_gateway_fails_and_is_not_retried(
    make: Any, server: ScriptedOpenAIServer
) -> None:
    server.script([Headers(), Comment(), chat_role(), Comment(), Stall(10)])
    g = await make({"main": connection(server)}, first_output_timeout_s=0.3,
                   retry=RetryPolicy(enabled=True, max_attempts=3, interval_s=0.0))
    with pytest.raises(ModelCallFailed) as caught:
        await g.generate()

    assert caught.value.code == "MODEL_FIRST_OUTPUT_TIMEOUT"
    assert caught.value.error.category == "timeout"
    assert caught.value.outcome == "failed"
    assert len(server.model_requests) == 1
    (op,) = g.operations()
    assert op["outcome"] == "failed"
    assert len(g.attempts(op["operation_id"])) == 1


async def test_s9_rate_limit_waits_max_of_interval_and_retry_after_before_a_second_attempt(
    make: Any, server: ScriptedOpenAIServer
) -> None:
    server.script([Status(429, headers={"Retry-After": "0.2"})])
    server.script(chat_turn("after the wait"))
    g = await make({"main": connection(server)},
                   retry=RetryPolicy(enabled=True, max_attempts=2, interval_s=0.05))
    response = await g.generate()

    assert response.text == "after the wait"
    (op,) = g.operations()
    first, second = g.attempts(op["operation_id"])
    assert first["data"]["raw"]["error"]["code"] == "MODEL_RATE_LIMITED"
    assert first["data"]["raw"]["error"]["details"]["retry_after_s"] == pytest.approx(0.2)
    assert first["data"]["retry_wait_s"] == pytest.approx(0.2)
    assert second["status"] == "succeeded"
    assert len(server.model_requests) == 2


async def test_s9_a_before_hook_matching_purpose_compaction_runs_only_for_compaction_calls(
    make: Any, server: ScriptedOpenAIServer
) -> None:
    server.script(chat_turn("ordinary"), chat_turn("summary"), chat_turn("from the request"))
    purposes: list[Any] = []

    def on_compaction(event: Any) -> dict[str, Any]:
        purposes.append(event["purpose"])
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/payload/max_output_tokens", "value": 64}]}

    g = await make({"main": connection(server)},
                   hooks=[model_hook("compact", on_compaction, purpose="compaction")])
    assert (await g.generate()).text == "ordinary"
    assert (await g.generate(purpose="compaction")).text == "summary"
    assert (await g.generate(request(purpose="compaction"))).text == "from the request"

    assert purposes == ["compaction", "compaction"]
    bodies = [r.json for r in server.model_requests]
    assert "max_tokens" not in bodies[0]
    assert bodies[1]["max_tokens"] == 64 and bodies[2]["max_tokens"] == 64
    ops = g.operations()
    assert [op["data"]["request"]["purpose"] for op in ops] == [None, "compaction", "compaction"]


async def test_s9_a_before_hook_denying_a_model_call_sends_nothing_to_the_provider(
    make: Any, server: ScriptedOpenAIServer
) -> None:
    g = await make({"main": connection(server)},
                   hooks=[model_hook("guard", lambda e: HookDecision.deny("no model today"))])
    with pytest.raises(ModelCallFailed) as caught:
        await g.generate()

    assert caught.value.outcome == "denied_before_execution"
    assert caught.value.envelope.attempts == 0
    assert "no model today" in str(caught.value)
    assert server.requests == []
    (op,) = g.operations()
    assert op["outcome"] == "denied_before_execution"
    assert g.attempts(op["operation_id"]) == []
    assert g.kinds()[-1] == "model.failed"


async def test_s9_an_after_hook_denial_blocks_delivery_and_keeps_the_raw_response(
    make: Any, server: ScriptedOpenAIServer
) -> None:
    server.script(chat_turn("something off-policy"))
    g = await make({"main": connection(server)},
                   hooks=[model_hook("post", lambda e: HookDecision.deny("off-policy"), timing="after")])
    with pytest.raises(ModelCallFailed) as caught:
        await g.generate()

    assert caught.value.outcome == "denied_after_execution"
    assert caught.value.envelope.raw is not None
    (op,) = g.operations()
    assert op["data"]["raw"]["content"][0]["data"]["text"] == "something off-policy"


async def test_s9_a_preset_backed_connection_puts_the_provider_body_on_the_wire(
    make: Any, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTLOOM_TEST_DEEPSEEK_KEY", API_KEY)
    conn = connection_for("deepseek", model="deepseek-chat", base_url=server.base_url,
                          api_key_env="AGENTLOOM_TEST_DEEPSEEK_KEY")
    server.script(chat_turn("Sunny.", reasoning=["Paris ", "in June"]))
    g = await make({"main": conn})
    response = await g.generate(request(think=ThinkParams(enabled=True, effort="medium"),
                                        max_output_tokens=300))

    assert response.text == "Sunny." and response.reasoning == "Paris in June"
    (sent,) = server.model_requests
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    body = sent.json
    assert body["model"] == "deepseek-chat"
    assert body["thinking"] == {"type": "enabled"}
    assert body["reasoning_effort"] == "high"
    assert body["max_tokens"] == 300
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["tools"][0]["function"]["name"] == "get_weather"
    (op,) = g.operations()
    assert API_KEY not in repr(op)


async def test_s9_a_hook_patch_needing_a_capability_the_preset_lacks_fails_before_sending(
    make: Any, server: ScriptedOpenAIServer
) -> None:
    conn = connection_for("deepseek", model="deepseek-chat", base_url=server.base_url, api_key=API_KEY)

    def want_schema(event: Any) -> dict[str, Any]:
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/payload/output_format", "value": {"type": "object"}}]}

    g = await make({"main": conn}, hooks=[model_hook("schema", want_schema)])
    with pytest.raises(ModelCallFailed) as caught:
        await g.generate()

    assert caught.value.code == "MODEL_CAPABILITY_UNSUPPORTED"
    assert caught.value.error.external_outcome == "not_started"
    assert server.requests == []


async def test_a_provider_error_status_is_a_known_failure_and_is_not_retried(
    make: Any, server: ScriptedOpenAIServer
) -> None:
    server.script([Status(500)])
    g = await make({"main": connection(server)},
                   retry=RetryPolicy(enabled=True, max_attempts=3, interval_s=0.0))
    with pytest.raises(ModelCallFailed) as caught:
        await g.generate()

    assert caught.value.outcome == "failed"
    assert caught.value.code == "MODEL_PROVIDER_ERROR"
    assert caught.value.error.external_outcome == "known"
    assert len(server.model_requests) == 1
