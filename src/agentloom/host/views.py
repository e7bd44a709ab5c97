"""What the host shows of a run is what ``agentloom runs show --json`` prints: the CLI's views
(``cli.views``: ``run_detail``, ``operation_detail``, ``excerpt``), handed to the app by its
entry point (``cli.serve``) — the CLI sits above the host, so the host does not import it.

Owns: the shape the app expects of those views. Does not own the views themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentloom.store import Store
from agentloom.store.records import OperationRecord

__all__ = ["RunViews"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunViews:
    """``run_detail(store, run_id)`` (None: no such run), ``operation_detail(store, op)`` and
    ``excerpt(text)`` — the JSON ``runs show`` / ``runs list`` print."""

    run_detail: Callable[[Store, str], dict[str, Any] | None]
    operation_detail: Callable[[Store, OperationRecord], dict[str, Any]]
    excerpt: Callable[[str | None], str]
