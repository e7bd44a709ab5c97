"""Spec 000 §9 bullet 7: a failed required commit never produces a false success and is never
skipped through a hook's fail-open. The failures here are real: another worker takes the
run's lease (a new fencing epoch) while the call is in flight."""

from __future__ import annotations

from typing import Any

import pytest
from tests.pipeline.support import hook

from agentloom.errors import FencedOut


async def test_s9_7_a_caller_that_lost_its_lease_never_executes(make: Any) -> None:
    h = await make()
    h.kernel.claim(h.lease.run_id)  # another worker takes over
    with pytest.raises(FencedOut):
        await h.call({"text": "x"})
    assert h.tool.calls == []
    assert h.ops() == []


async def test_s9_7_a_hook_commit_that_fails_stops_the_call_instead_of_failing_open(make: Any) -> None:
    h_ref: dict[str, Any] = {}

    def steal(event: Any) -> dict[str, Any]:
        h_ref["h"].kernel.claim(h_ref["h"].lease.run_id)
        return {"decision": "allow"}

    h = await make([hook("steal", steal)])
    h_ref["h"] = h
    with pytest.raises(FencedOut):
        await h.call({"text": "x"})
    assert h.tool.calls == []
    op = h.ops()[0]
    assert op["outcome"] is None and op["phase"] == "hooks_before"


async def test_s9_7_a_raw_result_that_cannot_be_saved_is_not_reported_as_success(make: Any) -> None:
    h = await make()

    def steal(args: dict[str, Any], ctx: Any) -> None:
        h.kernel.claim(h.lease.run_id)

    h.tool.behaviour = steal
    with pytest.raises(FencedOut):
        await h.call({"text": "x"})
    assert len(h.tool.calls) == 1
    op = h.ops()[0]
    assert op["outcome"] is None and op["phase"] == "attempt_started"
    # the new lease holder recovers it: the Attempt has no raw result, so it is unknown
    new_ctx = h.kernel.invocation_context(h.kernel.claim(h.lease.run_id), release_id="rel")
    recovered = await h.kernel.recover(new_ctx)
    assert [r.outcome for r in recovered] == ["unknown"]
    assert recovered[0].error.external_outcome == "unknown"
    assert len(h.tool.calls) == 1
