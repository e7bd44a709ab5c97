"""A2A ``ListTasks`` over the store: a page of the principal's tasks, the latest change first.

::

    principal_keys (run_id, status, updated_at) ──► filter, sort, page ──► the page's runs
                                                                           (get_run) ──► Task

Only the page's runs are read whole (with their follow-up messages) and made tasks: the others
are read as three columns (no ``data`` decoded), so a page of one costs one run's row however
many (or large) runs the principal has. A ``contextId`` filter is the exception: a run's
context is in its data, so then every run of the principal is read. ``list_tasks`` blocks on
the store: the handler runs it in a worker thread, never on the event loop.

A status filter that names no task state is ``InvalidParamsError`` (the SDK reads an unknown
state name as no filter at all: ``check_status`` looks at what the request said).

Owns: the listing, its page tokens, the status filter's check. Does not own the mapping
(``host.a2a.tasks``) nor the other methods (``host.a2a.handler``).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from a2a.types import ListTasksRequest, ListTasksResponse, TaskState
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import InvalidParamsError
from a2a.utils.task import apply_history_length

from agentloom.host.a2a.tasks import follow_ups, state_of, task_of
from agentloom.refs import Principal
from agentloom.store import Store
from agentloom.store.runs import RunKey, RunRecord, get_run, principal_keys, principal_runs

__all__ = ["check_status", "list_tasks"]

UNSET = (None, "", 0, "0", "TASK_STATE_UNSPECIFIED")  # no status filter, however said

Position = tuple[int, str]


def check_status(params: ListTasksRequest, raw: Any) -> None:
    """Refuse a status filter that names no task state: ``params.status`` as parsed, ``raw``
    as the request gave it (a query parameter or the JSON-RPC ``params.status``)."""
    known = {v.number for v in TaskState.DESCRIPTOR.values}
    unknown = params.status not in known or (
        params.status == TaskState.TASK_STATE_UNSPECIFIED and raw not in UNSET)
    if unknown:
        names = [v.name for v in TaskState.DESCRIPTOR.values if v.number]
        shown = raw if raw not in UNSET else params.status
        raise InvalidParamsError(message=f"status {str(shown)[:80]!r} is not a task state; "
                                 f"one of {names}")


def list_tasks(store: Store, principal: Principal, params: ListTasksRequest) -> ListTasksResponse:
    """The page ``params`` asks for (checked already). Blocks on the store."""
    keys = principal_keys(store, principal)  # what a run is sorted and filtered by
    if params.status:
        keys = [k for k in keys if state_of(k.stored_status) == params.status]
    if params.HasField("status_timestamp_after"):
        after_ns = params.status_timestamp_after.ToNanoseconds()
        keys = [k for k in keys if _position(k)[0] >= after_ns]
    whole: dict[str, RunRecord] = {}
    if params.context_id:  # a run's context is in its data: read them all
        whole = {r.run_id: r for r in principal_runs(store, principal)}
        keys = [k for k in keys if k.run_id in whole
                and _context_of(whole[k.run_id]) == params.context_id]
    keys.sort(key=_position, reverse=True)  # the latest change first
    if params.page_token:
        cursor = _cursor(params.page_token)
        after_cursor = [k for k in keys if _position(k) < cursor]
    else:
        after_cursor = keys
    size = params.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE
    page = after_cursor[:size]
    response = ListTasksResponse(total_size=len(keys), page_size=size)
    if len(after_cursor) > size:
        response.next_page_token = _token(_position(page[-1]))
    for key in page:
        run = whole.get(key.run_id) or get_run(store, key.run_id, lenient=True)
        if run is None or not run.done_for(principal):  # deleted since
            continue
        task = task_of(run, follow_ups(store, run.run_id))
        if not params.include_artifacts:
            task.ClearField("artifacts")
        response.tasks.append(apply_history_length(task, params))
    return response


def _context_of(run: RunRecord) -> str:
    a2a = run.data.get("a2a") or {}
    return str(a2a.get("context_id") or run.run_id)


def _position(key: RunKey) -> Position:
    """Where a run is in the list: its task's status timestamp (ns), then its id."""
    return int(float(key.updated_at) * 1e9), str(key.run_id)


def _token(position: Position) -> str:
    raw = json.dumps(list(position)).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _cursor(token: str) -> Position:
    """The position a page token names; ``InvalidParamsError`` for one this server did not
    give."""
    try:
        stamp, task_id = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if isinstance(stamp, bool) or not isinstance(stamp, int) or not isinstance(task_id, str):
            raise ValueError(token)
    except (ValueError, TypeError, binascii.Error):
        raise InvalidParamsError(message="pageToken is not a token this server gave (use "
                                 "nextPageToken of the previous page as it is)") from None
    return stamp, task_id
