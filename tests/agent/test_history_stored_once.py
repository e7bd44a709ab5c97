"""Issue #5: per-step storage is constant — the history is never re-serialised per step.

A model call's proposed arguments (the whole history) are stored as a delta of the previous
call's: the stored row of turn 30 is no bigger than the row of turn 3, and reading a row back
rebuilds exactly the messages the model was sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentloom.agent import AgentSpec, Limits, Runtime
from agentloom.errors import StoreError
from agentloom.pipeline import records
from agentloom.pipeline.records import OperationState, stored_envelope

from .notes import Note, NoteTaker

STEPS = 30


async def _run(url: str, tmp_path: Path) -> tuple[Runtime, str, NoteTaker]:
    model = NoteTaker(lambda request: STEPS, text=lambda k: f"line {k} " + "x" * 200)
    rt = Runtime([AgentSpec(name="main", model=model, tools=(Note(),), window=128_000,
                            limits=Limits(max_steps=STEPS + 1))],
                 store=url, workspace_root=tmp_path / "ws")
    result = await rt.run("take notes")
    assert result.status == "succeeded" and result.output == "done"
    return rt, result.run_id, model


async def test_bytes_per_step_constant_model_history_stored_as_a_delta(
    durable_store_url: str, tmp_path: Path
) -> None:
    rt, run_id, model = await _run(durable_store_url, tmp_path)
    try:
        rows = {r["logical_key"].rsplit("/", 1)[0].rsplit("/", 1)[1]: r
                for r in rt.store.query("operations", {"run_id": run_id, "event_type": "model"})}
        size = {turn: len(json.dumps(row["data"])) for turn, row in rows.items()}
        assert size[f"t{STEPS}"] <= size["t3"] * 1.05  # flat, while the history grew 10×
        records._EXPANDED.clear()  # read as a new process would: follow the chain in the store
        for turn in (1, 2, 17, STEPS + 1):
            state = OperationState.from_row(rows[f"t{turn}"], rt.store)
            messages = state.request["proposed_arguments"]["messages"]
            assert len(messages) == model.sent[turn - 1] == 2 * turn - 1
            assert messages[0] == {"role": "user", "content": "take notes", "id": "task"}
            envelope = stored_envelope(rows[f"t{turn}"], rt.store)
            assert envelope is not None and envelope.proposed_arguments == state.payload
    finally:
        await rt.aclose()


async def test_reading_a_delta_row_without_its_store_is_a_clear_error(tmp_path: Path) -> None:
    rt, run_id, _ = await _run(f"sqlite:///{tmp_path / 'a.db'}", tmp_path)
    try:
        (row,) = rt.store.query("operations", {"run_id": run_id,
                                               "logical_key": f"{run_id}/t5/model"})
        assert row["data"]["request"]["proposed_delta"]["base"]
        with pytest.raises(StoreError, match="delta; pass the store"):
            OperationState.from_row(row)
    finally:
        await rt.aclose()


@pytest.mark.parametrize("limits", ["window", "window_and_quota"])
async def test_per_step_cost_flat_each_message_is_measured_once_for_budget_and_quota(
    limits: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget check before every turn and the quota's estimate (the scripted model
    reports no usage) measure each message once, never the whole history again per step."""
    from agentloom.agent import compaction

    measured: list[int] = []
    real = compaction.message_to_dict

    def counting(message: Any) -> dict[str, Any]:
        measured.append(1)
        return real(message)

    monkeypatch.setattr(compaction, "message_to_dict", counting)
    limited = limits == "window_and_quota"
    agent = AgentSpec(name="main", model=NoteTaker(lambda request: STEPS), tools=(Note(),),
                      window=10 ** 7,  # every agent has a window (000 §4)
                      limits=Limits(max_steps=STEPS + 1,
                                    max_total_tokens=10 ** 9 if limited else None))
    rt = Runtime([agent], store="memory://", workspace_root=tmp_path / "ws")
    try:
        result = await rt.run("take notes")
    finally:
        await rt.aclose()
    assert result.status == "succeeded"
    messages = 1 + 2 * STEPS + 1  # the task, a call and a result per step, the answer
    assert len(measured) <= messages
