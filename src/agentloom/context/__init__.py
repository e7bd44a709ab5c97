"""Effective context: role contexts of versioned records, raw kept, large results as blobs.

``ContextManager`` validates and *prepares* context write sets; it never commits.
The pipeline hands its ops to the ``CommitCoordinator`` with the phase they belong to.
"""

from agentloom.context.manager import ContextManager, ContextRecord
from agentloom.context.results import ResultReadHandler, result_read_spec

__all__ = ["ContextManager", "ContextRecord", "ResultReadHandler", "result_read_spec"]
