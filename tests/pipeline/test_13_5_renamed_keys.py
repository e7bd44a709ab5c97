"""Issue #13 item 5: ``model_name`` became ``exposed_name`` and ``workspace_scope_ref`` became
``workspace_scope_id``. Operations stored under the old keys still resume, and the catalog
version a run stores did not change with the rename."""

from __future__ import annotations

from typing import Any

import pytest
from tests.pipeline.support import hook

from agentloom.catalog import CapabilityRegistry, CapabilitySpec
from agentloom.errors import FencedOut
from agentloom.store.ports import Put, WriteSet


async def test_13_5_an_operation_stored_with_the_old_request_keys_still_resumes(make: Any) -> None:
    h_ref: dict[str, Any] = {}

    def steal(event: Any) -> dict[str, Any]:  # the first time: another worker takes the run
        if h_ref["h"] is not None:
            h_ref["h"].kernel.claim(h_ref["h"].lease.run_id)
        return {"decision": "allow"}

    h = await make([hook("steal", steal)])
    h_ref["h"] = h
    with pytest.raises(FencedOut):
        await h.call({"text": "x"})
    [row] = h.ops()
    assert row["phase"] == "hooks_before" and h.tool.calls == []
    request = dict(row["data"]["request"])
    assert request["exposed_name"] == "demo_echo" and "workspace_scope_id" in request
    # rewrite the row as a release before the rename stored it
    request["model_name"] = request.pop("exposed_name")
    request["workspace_scope_ref"] = request.pop("workspace_scope_id")
    old = {**row["data"], "request": request}
    store = h.kernel.store
    assert store.commit_many([WriteSet((Put("operations", {
        "operation_id": row["operation_id"], "data": old}),))]) == [None]

    h_ref["h"] = None  # from now on the hook just allows
    new_ctx = h.kernel.invocation_context(h.kernel.claim(h.lease.run_id), release_id="rel")
    [result] = await h.kernel.recover(new_ctx)
    assert result.outcome == "succeeded"
    assert [c["arguments"] for c in h.tool.calls] == [{"text": "x"}]


def test_13_5_the_catalog_version_is_the_one_from_before_the_rename() -> None:
    # Runs store the catalog version and a resume compares it: the rename must not move it.
    spec = CapabilitySpec(
        resource_version_id="rv-1", capability_key="fs.read", kind="builtin",
        exposed_name="fs_read", description="the fs.read capability",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}},
                      "required": ["path"]},
        handler_ref="handlers.fs.read",
    )
    version = CapabilityRegistry().publish("rel", [spec], roles={"main": ["fs.read"]})
    assert version == "ec66abb4437f057c366a641dabbaf38625454dc5b996e36a6e657ffc42d40912"
    assert spec.to_json()["exposed_name"] == "fs_read" and "model_name" not in spec.to_json()
