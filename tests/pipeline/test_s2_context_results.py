"""Spec 000 §2.2: large results are stored as content-addressed blobs; the model gets a bounded
preview, a truncated flag and a result_ref; ``result.read`` is its own authorised operation."""

from __future__ import annotations

from typing import Any

from agentloom.results import ToolResult


def big(args: dict[str, Any], ctx: Any) -> ToolResult:
    return ToolResult.success("line\n" * 5000)


async def test_s2_large_result_is_a_blob_with_a_bounded_preview_and_a_result_ref(make: Any) -> None:
    h = await make()
    h.tool.behaviour = big
    result = await h.call({"text": "x"})
    record = h.kernel.context.current(h.ctx.context_scope, f"result:{result.operation_id}")
    assert record is not None
    assert record.data["truncated"] is True
    assert len(record.data["preview"].encode()) <= h.kernel.context.preview_limit
    assert record.data["result_ref"] == f"res:{result.operation_id}"
    assert record.data["size"] == len(("line\n" * 5000).encode())
    assert "/" not in record.data["result_ref"].removeprefix("res:").replace("-", "")


async def test_s2_result_read_is_its_own_operation_and_returns_the_rest(make: Any) -> None:
    h = await make()
    h.tool.behaviour = big
    first = await h.call({"text": "x"})
    ref = f"res:{first.operation_id}"
    read = await h.kernel.bus.request("result_read", {"result_ref": ref, "offset": 4096,
                                                      "limit": 10}, h.ctx)
    assert read.succeeded
    data = read.result.content[0].data
    assert data["offset"] == 4096 and data["next_offset"] == 4106
    assert read.operation_id != first.operation_id
    assert {o["capability_key"] for o in h.ops()} == {"demo.echo", "result.read"}


async def test_s2_result_read_refuses_another_role_and_a_storage_path(make: Any) -> None:
    h = await make(roles={"main": ["demo.echo"], "executor": ["demo.echo"]})
    h.tool.behaviour = big
    first = await h.call({"text": "x"})
    other = h.kernel.invocation_context(h.lease, release_id="rel", role="executor")
    stolen = await h.kernel.bus.request(
        "result_read", {"result_ref": f"res:{first.operation_id}"}, other)
    assert stolen.outcome == "failed" and stolen.error.category == "permission"
    path = await h.kernel.bus.request("result_read", {"result_ref": "/etc/passwd"}, h.ctx)
    assert path.outcome == "failed" and path.error.category == "permission"


async def test_s2_small_results_stay_inline_without_a_blob(make: Any) -> None:
    h = await make()
    result = await h.call({"text": "x"})
    record = h.kernel.context.current(h.ctx.context_scope, f"result:{result.operation_id}")
    assert record is not None and record.data["truncated"] is False
    assert "result_ref" not in record.data
    assert h.kernel.store.query("blobs") == []


async def test_i11_10_result_read_past_the_end_says_so_not_that_the_blob_is_missing(make: Any) -> None:
    h = await make()
    h.tool.behaviour = big
    first = await h.call({"text": "x"})
    size = len(("line\n" * 5000).encode())
    for offset in (size, 10**18):
        read = await h.kernel.bus.request("result_read", {"result_ref": f"res:{first.operation_id}",
                                                          "offset": offset}, h.ctx)
        assert read.outcome == "failed" and read.error is not None
        assert read.error.code == "RESULT_OFFSET_PAST_END"
        assert f"has {size} bytes" in read.error.message
