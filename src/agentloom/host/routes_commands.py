"""``GET /v1/commands/{operation_id}/receipt``: a command's receipt, for its owner only (issue 21;
what ``agentloom commands receipt OP_ID`` shows). An ``unknown`` receipt is reconciled from the
recorded operation first (never run again); another principal's receipt is the same 404 as a
missing one (``COMMAND_RECEIPT_NOT_FOUND``).

Owns: the route. Does not own: receipts (``agentloom.command``, ``agent.command_receipts``).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse

from agentloom.agent.command_receipts import StoreReceiptLog
from agentloom.agent.commands import RecordedCommands
from agentloom.agent.runtime import Runtime
from agentloom.command import CommandBus, CommandRegistry
from agentloom.refs import Principal

__all__ = ["get_receipt"]


async def get_receipt(request: Request, runtime: Runtime, principal: Principal) -> JSONResponse:
    """The principal's receipt of ``operation_id``, reconciled."""
    store = runtime.store
    bus = CommandBus(CommandRegistry(), RecordedCommands(store),
                     StoreReceiptLog(store, runtime.kernel.coordinator))
    receipt = await bus.reconcile(request.path_params["operation_id"], principal=principal)
    return JSONResponse(receipt.to_dict())
