"""The developer Tool SDK (000 §8): write a tool, get a pipeline handler.

Owns the ``Tool`` base class, strict argument models, the context a tool sees and
the normalisation of tool exceptions into ``OperationError``. It does not own the
catalog (publication, exposed names), retries or recording: those belong to the
catalog and pipeline packages. ``@tool`` (``tools.function``) makes a ``Tool`` from a typed
function.
"""

from agentloom.results import ToolResult
from agentloom.tools.function import FunctionTool, tool
from agentloom.tools.normalise import error_from_exception, result_from_exception
from agentloom.tools.sdk import (
    StrictInput,
    Tool,
    ToolContext,
    ToolDescription,
    ToolHandler,
    ToolOutput,
)

__all__ = [
    "FunctionTool",
    "StrictInput",
    "Tool",
    "ToolContext",
    "ToolDescription",
    "ToolHandler",
    "ToolOutput",
    "ToolResult",
    "error_from_exception",
    "result_from_exception",
    "tool",
]
