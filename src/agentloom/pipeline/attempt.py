"""One physical Attempt: the handler called once with the frozen request, bounded by the
run deadline and the stop signal, its outcome turned into a ``ToolResult`` — never an
exception, never a success it did not report, and never text a store cannot hold
(``results.storable_result``)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from agentloom.catalog import CapabilitySpec
from agentloom.errors import OperationError
from agentloom.pipeline.cancel import CancelToken
from agentloom.pipeline.context import Request
from agentloom.pipeline.ports import AttemptContext, CapabilityHandler, CapabilityRequest
from agentloom.pipeline.records import OperationState
from agentloom.results import ToolResult, storable_result


async def run_attempt(
    state: OperationState,
    request: Request,
    spec: CapabilitySpec,
    handler: CapabilityHandler,
    attempt_no: int,
    frozen: dict[str, Any],
) -> ToolResult:
    ctx = request.context
    actx = AttemptContext(
        operation_id=state.operation_id, attempt_no=attempt_no, run_id=ctx.run_id,
        role=ctx.role, deadline=ctx.deadline, cancel=ctx.cancel,
        workspace_scope_ref=ctx.workspace_scope_ref, lease_epoch=ctx.lease_epoch,
    )
    creq = CapabilityRequest(
        operation_id=state.operation_id, resource_version_id=spec.resource_version_id,
        capability_key=spec.capability_key, arguments=frozen,
    )
    """Call the handler once. A stop, the run deadline or an exception during the call —
    any the handler raises, ``SystemExit`` and ``KeyboardInterrupt`` included — is an
    ``unknown`` result (it may have taken effect), never a raised error. Only the runtime's
    own cancellation of the calling task propagates."""
    task = asyncio.current_task()
    assert task is not None
    stopped = False

    def on_cancel() -> None:
        nonlocal stopped
        stopped = True
        task.cancel()

    remove = ctx.cancel.add_callback(on_cancel)
    timeout = asyncio.timeout(ctx.deadline - time.time())
    try:
        async with timeout:
            result = await handler.invoke_once(creq, actx)
        if not isinstance(result, ToolResult):
            return ToolResult.unknown(OperationError(
                code="INVALID_HANDLER_RESULT", category="protocol",
                message=f"handler for {spec.capability_key} returned "
                f"{type(result).__name__}, not a ToolResult",
                external_outcome="unknown"))
        # Where outside text enters the pipeline: nothing a store cannot hold goes further.
        return storable_result(result)
    except asyncio.CancelledError:
        if not stopped:
            raise
        task.uncancel()
        return ToolResult.unknown(OperationError(
            code="RUN_STOPPED", category="cancelled",
            message=f"stopped ({ctx.cancel.reason}) while the call was running; "
            "it may have taken effect", external_outcome="unknown"))
    except TimeoutError as exc:
        if timeout.expired():
            return ToolResult.unknown(OperationError(
                code="RUN_DEADLINE_EXCEEDED", category="timeout",
                message="the run deadline passed while the call was running; "
                "it may have taken effect", external_outcome="unknown"))
        return _handler_exception(spec, exc)
    except GeneratorExit:
        raise  # the coroutine itself is being closed
    except BaseException as exc:  # SystemExit, KeyboardInterrupt, ... the handler's own
        return _handler_exception(spec, exc)
    finally:
        remove()


async def sleep_unless_cancelled(seconds: float, cancel: CancelToken) -> None:
    """Wait ``seconds`` (a retry interval), returning early when the run is stopped."""
    waiter = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait_for(asyncio.shield(waiter), timeout=seconds)
    except TimeoutError:
        pass
    finally:
        waiter.cancel()


def _handler_exception(spec: CapabilitySpec, exc: BaseException) -> ToolResult:
    """A handler that raised instead of returning a result: its outcome is unknown."""
    return ToolResult.unknown(OperationError(
        code="HANDLER_EXCEPTION", category="unknown",
        message=f"{spec.capability_key} raised {type(exc).__name__}: {exc}",
        external_outcome="unknown"))


