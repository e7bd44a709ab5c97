"""An operation's rows carry the exact text the SQL stores would write for them, although its
large parts (request, payload, raw, result) are encoded once per operation."""

from __future__ import annotations

import json
from typing import Any

from agentloom.pipeline.records import EncodedJson, OperationState, attempt_row
from agentloom.store._sql import dumps


def state() -> OperationState:
    args = {"messages": [{"role": "user", "content": "héllo ✓"}], "n": 1.5, "flag": True}
    return OperationState(
        operation_id="op-1", run_id="run-1", logical_key="op-1", capability_key="model.main",
        event_type="model", request={"exposed_name": "model_main", "proposed_arguments": args},
        payload=args, hooks_version="h1",
    )


def data_of(op: Any) -> EncodedJson:
    data = op.row["data"]
    assert isinstance(data, EncodedJson)
    return data


def assert_canonical(data: EncodedJson) -> None:
    assert data.json_text == dumps(dict(data))
    assert json.loads(data.json_text) == data


def test_every_phase_of_an_operation_row_has_the_text_dumps_would_write() -> None:
    s = state()
    assert_canonical(data_of(s.row(new=True)))
    s.chain["after"] = ["audit"]  # the chain is changed in place: never cached
    s.cursor = {"timing": "after", "position": 0}
    s.payload = {**s.payload, "n": 2}  # a hook's patch replaces the payload
    s.payload_version = 1
    s.attempts = 1
    s.raw = {"status": "succeeded", "content": [{"type": "json", "data": {"text": "ok", "x": None}}],
             "error": None, "artifacts": [], "metadata": {}}
    assert_canonical(attempt_row("op-1", 1, "succeeded", s.encoded({"raw": s.raw}), finished=True)
                     .row["data"])
    assert_canonical(data_of(s.row()))
    s.result = {**s.raw, "metadata": {"patched": "ü"}}
    s.envelope = {"outcome": "succeeded", "error": None, "reason": None}
    final = data_of(s.row())
    assert_canonical(final)
    assert final["payload"] == {**s.request["proposed_arguments"], "n": 2}
    assert final["chain"] == {"before": [], "after": ["audit"]}


def test_a_part_that_was_replaced_is_encoded_again() -> None:
    s = state()
    first = data_of(s.row(new=True))
    s.raw = {"status": "succeeded"}
    s.row()
    s.raw = {"status": "failed"}  # a new object: its old text must not be reused
    again = data_of(s.row())
    assert json.loads(again.json_text)["raw"] == {"status": "failed"}
    assert json.loads(first.json_text)["raw"] is None
