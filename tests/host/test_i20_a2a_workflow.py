"""Issue 20 with issue 19's server: ``agentloom serve`` serves the config's workflows over A2A
1.0 beside its agents — a skill ``workflow:<name>`` each on the card; a message whose
``metadata.skill`` names one runs that workflow as a task (a run, durable), its wait for a
person is ``INPUT_REQUIRED`` with the node's question, a data answer approves it, and the task
completes with the workflow's output (its last node's) as its artifact. Driven by the official
``a2a-sdk`` client over both bindings against a real server process on 127.0.0.1."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from a2a.types import TaskState
from a2a.utils.errors import A2AError

from .support import make_key, serving
from .test_i19_a2a_server import BINDINGS, _client, _message, _one, _send, _text
from .test_i20_ui_graph import _project

S = TaskState


@pytest.mark.parametrize("binding", BINDINGS)
def test_i20_a_workflow_is_a_skill_of_the_card_and_runs_as_a_task_through_its_wait(
        tmp_path: Path, binding: str) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    key = make_key(store, "alice", "acme")
    with serving(_project(tmp_path), store) as base:
        card = httpx.get(base + "/.well-known/agent-card.json").json()
        assert [s["id"] for s in card["skills"]] == ["main", "workflow:ship"]
        assert "workflow" in card["skills"][1]["tags"]

        async def scenario() -> None:
            async with _client(base, key, binding) as client:
                unknown = _send(_message("v2.0"))
                unknown.metadata.update({"skill": "workflow:shpi"})
                with pytest.raises(A2AError, match=r"names no skill.*'main', 'workflow:ship'"):
                    await _one(client, unknown)

                request = _send(_message("v2.0", context_id="release"))
                request.metadata.update({"skill": "workflow:ship"})
                asking = await _one(client, request)
                assert asking.status.state == S.TASK_STATE_INPUT_REQUIRED
                assert "Ship v2.0?" in asking.status.message.parts[0].text
                assert asking.metadata["agentloom"]["run_status"] == "waiting"

                done = await _one(client, _send(_message(task_id=asking.id,
                                                         data={"approve": True})))
                assert done.status.state == S.TASK_STATE_COMPLETED
                assert "v2.0" in _text(done)  # the last node read back what the first wrote
                assert done.context_id == "release"

        asyncio.run(scenario())
        listed = httpx.get(base + "/v1/runs", headers={"Authorization": f"Bearer {key}"}).json()
        assert [r["agent"] for r in listed["items"]] == ["workflow:ship"]
