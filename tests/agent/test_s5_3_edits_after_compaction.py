"""000 §4, §5.3: after compaction, a model before-hook's edit is re-materialised from the
committed message records by stable id — not by message position, and without running the hook
again — so the compaction call's input and every request after it show the edited text.

Real parts: the runtime on memory / SQLite / PostgreSQL, the real OpenAI SDK against the
scripted OpenAI-wire server on 127.0.0.1 (what the provider receives is read off the wire)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agentloom.agent import Runtime
from agentloom.testing.openai_server import ScriptedOpenAIServer

from .conftest import answer, before_hook, calls, run, sent_messages, tool_call
from .test_compaction import agent

SECRET = "hunter2"


async def test_s5_3_an_edit_is_rematerialised_after_compaction_by_stable_id(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    seen: list[int] = []

    def redact_once(event: dict[str, Any]) -> dict[str, Any]:
        seen.append(len(event["payload"]["messages"]))
        if len(seen) > 1:
            return {"decision": "allow"}
        task = event["payload"]["messages"][0]["content"]
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/payload/messages/0/content",
             "value": task.replace(SECRET, "***")}]}

    spec, ref, fn = before_hook("redact-once", redact_once, event="model")
    server.script(
        calls(tool_call("c1", "lookup", key="alpha")),
        calls(tool_call("c2", "lookup", key="beta")),
        answer("alpha was looked up"),  # the compaction call's summary
        answer("done"),
    )
    rt = runtime_factory([agent(server)], store=store_url, hooks=[spec], hook_functions={ref: fn})

    result = await run(rt, f"password {SECRET}: look up alpha and beta")

    assert result.status == "succeeded", result.error
    assert len(server.model_requests) == 4 and len(seen) == 4  # the hook ran once per call
    for n in range(4):
        assert SECRET not in json.dumps(sent_messages(server, n)), n
    after = sent_messages(server, 3)
    assert after[0] == {"role": "user", "content": "password ***: look up alpha and beta"}
