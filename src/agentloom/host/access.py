"""Who is asking, and what they may see: every ``/v1`` request authenticates with its API key
and reads or controls only its principal's runs.

A run of another principal — and a run started from the CLI or Python, which has none — is
answered exactly like a run that does not exist (``problems.not_found_run``): never a 403
that would confirm it is there.

Owns: the principal of a request (and whether its key still holds), the owned-run lookup,
reading a JSON body. Does not own the keys (``host.keys``), the routes, nor a body's shape
(``host.shapes``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, get_args

from starlette.requests import Request

from agentloom.host.keys import AuthError, authenticate
from agentloom.host.problems import Problem, not_found_run
from agentloom.refs import Principal
from agentloom.results import RunStatus
from agentloom.store import Store
from agentloom.store.runs import RunRecord, get_run

__all__ = ["RUN_STATUSES", "json_body", "key_still_valid", "owned_run", "principal_of"]

RUN_STATUSES = frozenset(get_args(RunStatus))
MAX_DEPTH = 64  # arrays and objects in a request body: far more than any route's body needs
UNAUTHENTICATED = ("a valid API key is required: send it in the Authorization header with the "
                   "Bearer scheme (agentloom keys create makes one)")


def principal_of(request: Request, store: Store) -> Principal:
    """The principal of the request's ``Authorization: Bearer KEY``; a 401 problem else."""
    try:
        return authenticate(store, request.headers.get("authorization"))
    except AuthError:
        raise Problem(401, "UNAUTHENTICATED", UNAUTHENTICATED) from None


def key_still_valid(store: Store, authorization: str | None) -> Callable[[], bool]:
    """Whether the key of ``authorization`` still authenticates, asked again at each call: a
    long answer (an event stream) ends once its key is revoked."""
    def valid() -> bool:
        try:
            authenticate(store, authorization)
        except AuthError:
            return False
        return True
    return valid


def owned_run(store: Store, run_id: str, principal: Principal) -> RunRecord:
    """The run ``run_id`` when ``principal`` owns it; the not-found problem otherwise."""
    run = get_run(store, run_id, lenient=True)
    if run is None or not run.done_for(principal):
        raise not_found_run(run_id)
    return run


async def json_body(request: Request, *, optional: bool = False) -> dict[str, Any]:
    """The request's JSON object (``optional``: an empty body is ``{}``); a 400 problem for
    anything else: not UTF-8, not JSON, nested deeper than ``MAX_DEPTH``, a string with a lone
    surrogate (not text: no store could keep it), not an object."""
    raw = await request.body()
    if not raw.strip():
        if optional:
            return {}
        raise Problem(400, "INVALID_REQUEST", "the request needs a JSON object body")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Problem(400, "INVALID_REQUEST", f"the body is not UTF-8 text: {exc.reason} at "
                      f"byte {exc.start}") from None
    try:
        body = json.loads(text)
    except RecursionError:  # deeper than Python parses
        raise _too_deep() from None
    except ValueError as exc:
        raise Problem(400, "INVALID_REQUEST", f"the body is not valid JSON: {exc}") from None
    _check_values(body)
    if not isinstance(body, dict):
        raise Problem(400, "INVALID_REQUEST",
                      f"the body must be a JSON object, got {type(body).__name__}")
    return body


def _too_deep() -> Problem:
    return Problem(400, "INVALID_REQUEST", f"the body nests arrays and objects more than "
                   f"{MAX_DEPTH} levels deep")


def _check_values(body: Any) -> None:
    """Refuse a body nested deeper than ``MAX_DEPTH`` or holding a string (or key) with a lone
    surrogate (``"\\ud800"``: valid JSON, but not Unicode text). Iterative: any depth."""
    stack: list[tuple[Any, int]] = [(body, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > MAX_DEPTH:
                raise _too_deep()
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                stack.append((item, depth + 1))
                if isinstance(key, str):
                    stack.append((key, depth))
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise Problem(400, "INVALID_REQUEST", "the body holds a string with a lone "
                              f"surrogate (U+{ord(value[exc.start]):04X}), which is not "
                              "Unicode text") from None
