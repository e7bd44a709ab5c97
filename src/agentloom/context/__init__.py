"""Effective context: role contexts of versioned records, raw kept, large results as blobs.

``ContextManager`` validates and *prepares* context write sets; it never commits.
The pipeline hands its ops to the ``CommitCoordinator`` with the phase they belong to.
"""

from agentloom.context.manager import ContextManager
from agentloom.context.results import ResultReadHandler, result_read_spec
from agentloom.store.context_records import ContextRecord

__all__ = ["ContextManager", "ContextRecord", "ResultReadHandler", "result_read_spec"]
