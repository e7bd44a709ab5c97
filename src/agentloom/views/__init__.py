"""Read models: what ``agentloom runs`` shows and the host's ``/v1/runs`` routes return, as
plain JSON-ready data read from the store — one shape for the CLI and the host alike.

::

    views.runs       run_summaries, run_detail, operation_detail, cleanup_detail, excerpt
    views.diagnosis  why a run that has not ended does not move (``diagnosis``)
    views.workflow   a workflow run's graph state (its nodes and edges)

Owns: those shapes. Does not own: anything that writes (they only read), a run's live events
(``agent.events``), the list ``Runtime.runs`` returns (``agent.runtime.list_runs``).
"""

from agentloom.views.diagnosis import diagnose, diagnosis_lines
from agentloom.views.runs import (
    TASK_EXCERPT,
    USAGE_FIELDS,
    cleanup_detail,
    excerpt,
    operation_detail,
    run_detail,
    run_summaries,
)
from agentloom.views.workflow import workflow_detail

__all__ = ["TASK_EXCERPT", "USAGE_FIELDS", "cleanup_detail", "diagnose", "diagnosis_lines",
           "excerpt", "operation_detail", "run_detail", "run_summaries", "workflow_detail"]
