"""One physical Attempt: the handler called once with the frozen request, bounded by the
run deadline and the stop signal, its outcome turned into a ``ToolResult`` — never an
exception, never a success it did not report, and never text a store cannot hold
(``results.storable_result``). One exception passes: a recoverable handler (a delegation)
whose own call waits for a person raises ``ApprovalPending``, and is run again, replaying
its calls, when it is issued again."""

from __future__ import annotations

import asyncio
import time

from agentloom.approvals import ApprovalPending
from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.cancel import CancelToken
from agentloom.errors import OperationError
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.results import ToolResult, storable_result


async def run_attempt(handler: CapabilityHandler, request: CapabilityRequest,
                      context: AttemptContext) -> ToolResult:
    """Call ``handler`` once with ``request``. A stop, the run deadline or an exception during
    the call — any the handler raises, ``SystemExit`` and ``KeyboardInterrupt`` included — is
    an ``unknown`` result (it may have taken effect), never a raised error. Only the runtime's
    own cancellation of the calling task propagates."""
    task = asyncio.current_task()
    assert task is not None
    stopped = False

    def on_cancel() -> None:
        nonlocal stopped
        stopped = True
        task.cancel()

    cancel = context.cancel
    remove = cancel.add_callback(on_cancel)
    timeout = asyncio.timeout(context.deadline - time.time())
    try:
        async with timeout:
            result = await handler.invoke_once(request, context)
        if not isinstance(result, ToolResult):
            return ToolResult.unknown(OperationError(
                code="INVALID_HANDLER_RESULT", category="protocol",
                message=f"handler for {request.capability_key} returned "
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
            message=f"stopped ({cancel.reason}) while the call was running; "
            "it may have taken effect", external_outcome="unknown"))
    except TimeoutError as exc:
        if timeout.expired():
            return ToolResult.unknown(OperationError(
                code="RUN_DEADLINE_EXCEEDED", category="timeout",
                message="the run deadline passed while the call was running; "
                "it may have taken effect", external_outcome="unknown"))
        return _handler_exception(request.capability_key, exc)
    except GeneratorExit:
        raise  # the coroutine itself is being closed
    except ApprovalPending as exc:
        if handler.recoverable:
            raise  # it waits with the call it made; resumed, it replays its calls
        return _handler_exception(request.capability_key, exc)
    except BaseException as exc:  # SystemExit, KeyboardInterrupt, ... the handler's own
        return _handler_exception(request.capability_key, exc)
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


def _handler_exception(capability_key: str, exc: BaseException) -> ToolResult:
    """A handler that raised instead of returning a result: its outcome is unknown."""
    return ToolResult.unknown(OperationError(
        code="HANDLER_EXCEPTION", category="unknown",
        message=f"{capability_key} raised {type(exc).__name__}: {exc}",
        external_outcome="unknown"))


