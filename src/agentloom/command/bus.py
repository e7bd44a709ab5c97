"""The command bus: authorise, validate, confirm, execute once, and give an honest receipt.

::

    submit(command, params, principal)
      ├─ unknown command / not authorised / invalid params ──────────► rejected (nothing ran)
      ├─ needs confirmation ─► accepted (token bound to the exact params, principal, binding)
      │      submit(..., confirmation=token) ─► consume once ─► execute  (a repeat: same receipt)
      └─ execute through the pipeline (one recorded operation, hooks apply)
             succeeded ─► committed(result) │ certainly nothing ran ─► rejected
             anything else ─► unknown (keeps the operation id; reconciled, never replayed)
             receipt write fails after that ─► unknown, same id (003 F10)

Owns: the order of those steps, confirmation tokens (``<operation id>.<secret>``; only the
secret's digest is stored) and reconciling an ``unknown`` receipt from what the executor
recorded. Does not own: storage (``ReceiptLog``), running a handler (``CommandExecutor``),
who may do what (``Authoriser``).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from agentloom.canonical import canonical_json
from agentloom.catalog import freeze_json
from agentloom.command.ports import AllowAll, Authoriser, CommandExecutor, Execution, ReceiptLog
from agentloom.command.receipts import Receipt, ReceiptState
from agentloom.command.spec import CommandRegistry, CommandSpec
from agentloom.errors import AgentLoomError, CatalogError, ErrorCategory
from agentloom.ids import new_id
from agentloom.refs import Principal

__all__ = ["CommandBus", "ReceiptNotFound"]

log = logging.getLogger("agentloom.command")


class ReceiptNotFound(AgentLoomError):
    """No receipt of that id for this principal — none at all, or another principal's (the
    two are told apart by nobody: a receipt's existence is not leaked)."""

    default_code = "COMMAND_RECEIPT_NOT_FOUND"
    default_category: ErrorCategory = "not_found"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _error(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


class CommandBus:
    """Runs commands of ``registry`` with ``executor``, keeping receipts in ``receipts``."""

    def __init__(self, registry: CommandRegistry, executor: CommandExecutor,
                 receipts: ReceiptLog, *, authoriser: Authoriser | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.registry = registry
        self.executor = executor
        self.receipts = receipts
        self.authoriser: Authoriser = authoriser or AllowAll()
        self._clock = clock

    # -- submitting ----------------------------------------------------------------------
    async def submit(self, command: str, params: Mapping[str, Any], *, principal: Principal,
                     confirmation: str | None = None, confirm: bool = False,
                     binding: Mapping[str, Any] | None = None) -> Receipt:
        """Submit ``command`` with ``params`` for ``principal`` and return its receipt.

        ``confirmation``: the token of an ``accepted`` receipt; it runs that command once
        when ``command``, ``params``, ``principal`` and ``binding`` are exactly the ones it
        was issued for. ``confirm``: ask for a confirmation even when the command's risk does
        not (an intent's ``confirmation: always``). ``binding``: what else a confirmation is
        bound to (e.g. a conversation's pending action and revision).
        """
        if confirmation is not None:
            return await self._confirm(confirmation, command, params, principal, binding)
        now = self._clock()
        operation_id = new_id()
        spec = self.registry.peek(command)
        if spec is None:
            return await self._reject(operation_id, command, principal, params, _error(
                "COMMAND_UNKNOWN", f"no command {command!r}"), now)
        refused = self.authoriser.refuse(principal, spec)
        if refused is not None:
            return await self._reject(operation_id, command, principal, params, _error(
                "COMMAND_FORBIDDEN", refused), now)
        if not isinstance(params, Mapping):
            return await self._reject(operation_id, command, principal, {}, _error(
                "COMMAND_PARAMS_INVALID", "params must be a JSON object"), now)
        problems = self.registry.errors(command, params)
        if problems:
            return await self._reject(operation_id, command, principal, params, _error(
                "COMMAND_PARAMS_INVALID", "; ".join(problems)), now)
        if spec.needs_confirmation or confirm:
            return await self._queue(spec, params, operation_id, principal, binding, now)
        return await self._run(spec, params, operation_id, principal, now)

    async def decline(self, operation_id: str, *, principal: Principal) -> Receipt:
        """Decline the ``accepted`` command ``operation_id``: it never runs (``rejected``).
        A receipt in another state is returned as it is.

        Raises:
            ReceiptNotFound: no such receipt of ``principal``'s.
        """
        stored = self._owned(operation_id, principal)
        if stored.state != "accepted" or not await self.receipts.consume(operation_id):
            return self.receipts.get(operation_id) or stored
        declined = replace(stored, state="rejected", reason="declined: it never ran",
                           token_digest=None, updated_at=self._clock())
        await self.receipts.save(declined)
        return declined

    async def refuse(self, command: str, params: Mapping[str, Any], *, principal: Principal,
                     code: str, message: str) -> Receipt:
        """Record a ``rejected`` receipt for something that will not run (a cancelled
        pending action, say): a new operation id, nothing executed."""
        return await self._reject(new_id(), command, principal, params, _error(code, message),
                                  self._clock())

    # -- reading -------------------------------------------------------------------------
    def receipt(self, operation_id: str, *, principal: Principal) -> Receipt:
        """The receipt of ``operation_id`` — only for the principal that submitted it.

        An ``unknown`` one (or one whose write was lost, or an ``accepted`` one whose
        confirmation started it) is reconciled from what the executor recorded, never run
        again: ``committed`` when the operation succeeded, ``rejected`` when it certainly did
        not run, else ``unknown``.

        Raises:
            ReceiptNotFound: none, or another principal's.
        """
        stored = self.receipts.get(operation_id)
        if stored is not None and stored.principal != principal:
            raise ReceiptNotFound(f"no command receipt {operation_id!r}")
        # an ``accepted`` one may have been confirmed by a process that died while running it
        if stored is not None and stored.state not in ("unknown", "accepted"):
            return stored
        recorded = self.executor.recorded(operation_id, principal)
        if recorded is None or recorded.principal != principal:
            if stored is not None:
                return stored
            raise ReceiptNotFound(f"no command receipt {operation_id!r}")
        execution = recorded.execution or Execution(
            outcome="unknown", reason="it started and no outcome was recorded: it may have run")
        if stored is not None and stored.state == "unknown" and execution.outcome == "unknown":
            return stored
        return self._receipt(
            _state(execution), operation_id, recorded.command, principal,
            stored.params if stored is not None else recorded.params, execution,
            stored.created_at if stored is not None else self._clock(),
            stored.binding if stored is not None else None,
            token_digest=stored.token_digest if stored is not None else None)

    async def reconcile(self, operation_id: str, *, principal: Principal) -> Receipt:
        """``receipt``, and the reconciled receipt written back when it changed."""
        before = self.receipts.get(operation_id)
        after = self.receipt(operation_id, principal=principal)
        if before is None or before.state != after.state:
            await self.receipts.save(after)
        return after

    # -- the steps -----------------------------------------------------------------------
    def _owned(self, operation_id: str, principal: Principal) -> Receipt:
        stored = self.receipts.get(operation_id)
        if stored is None or stored.principal != principal:
            raise ReceiptNotFound(f"no command receipt {operation_id!r}")
        return stored

    async def _reject(self, operation_id: str, command: str, principal: Principal,
                      params: Mapping[str, Any], error: dict[str, str], now: float) -> Receipt:
        try:
            kept = freeze_json(_plain(params), where="params")
        except CatalogError:  # not JSON (a NaN, an object): it is not kept
            kept = {}
        receipt = Receipt(state="rejected", operation_id=operation_id, command=command,
                          principal=principal, params=kept, reason=error["message"],
                          error=error, created_at=now, updated_at=now)
        try:  # nothing ran: a lost rejection loses no effect, only its audit line
            await self.receipts.save(receipt)
        except Exception as exc:
            log.warning("command %s: the rejection %s was not recorded: %s", command,
                        operation_id, exc)
        return receipt

    async def _queue(self, spec: CommandSpec, params: Mapping[str, Any], operation_id: str,
                     principal: Principal, binding: Mapping[str, Any] | None,
                     now: float) -> Receipt:
        secret = secrets.token_urlsafe(24)
        token = f"{operation_id}.{secret}"
        expires = now + spec.confirmation_ttl_s
        receipt = Receipt(state="accepted", operation_id=operation_id, command=spec.id,
                          principal=principal, params=params,
                          reason="waiting for confirmation", token_digest=_digest(secret),
                          expires_at=expires, binding=binding, created_at=now, updated_at=now,
                          result={"confirmation_required": True, "expires_at": expires})
        try:
            await self.receipts.save(receipt)
        except Exception as exc:  # not queued: nothing ran, and nothing can confirm it
            return replace(receipt, state="rejected", token_digest=None, error=_error(
                "COMMAND_NOT_QUEUED", f"it could not be queued for confirmation: {exc}"),
                reason="not queued", result=None)
        # the token reaches the submitter only: in ``confirmation`` and in the result
        return replace(receipt, confirmation=token, result={**receipt.result, "token": token})

    async def _confirm(self, token: str, command: str, params: Mapping[str, Any],
                       principal: Principal, binding: Mapping[str, Any] | None) -> Receipt:
        now = self._clock()
        operation_id, _, secret = token.partition(".")
        stored = self.receipts.get(operation_id) if operation_id and secret else None
        refused = None
        if (stored is None or stored.principal != principal or stored.token_digest is None
                or not hmac.compare_digest(stored.token_digest, _digest(secret))):
            refused = "the confirmation token is not valid"
        elif stored.state != "accepted":  # confirmed before: it ran (or not) once
            return stored
        elif stored.command != command or canonical_json(_plain(stored.params)) \
                != canonical_json(_plain(params)):
            refused = "the confirmation was issued for other params; submit them again"
        elif canonical_json(_plain(stored.binding or {})) != canonical_json(_plain(binding or {})):
            refused = "the confirmation is stale: the pending action changed since it was issued"
        elif stored.expires_at is not None and now > stored.expires_at:
            if await self.receipts.consume(operation_id):
                expired = replace(stored, state="rejected", reason="the confirmation expired",
                                  error=_error("COMMAND_CONFIRMATION_EXPIRED",
                                               "the confirmation expired; it never ran"),
                                  token_digest=None, updated_at=now)
                await self.receipts.save(expired)
                return expired
            return self.receipts.get(operation_id) or stored
        if refused is not None or stored is None:
            return await self._reject(new_id(), command, principal, params, _error(
                "COMMAND_CONFIRMATION_REFUSED", refused or "refused"), now)
        spec = self.registry.peek(stored.command)
        if spec is None:
            return await self._reject(new_id(), command, principal, params, _error(
                "COMMAND_UNKNOWN", f"no command {command!r}"), now)
        # checked again: the principal's rights or the command's schema may have changed
        why = self.authoriser.refuse(principal, spec)
        problems = self.registry.errors(spec.id, stored.params) if why is None else []
        if why is not None or problems:
            return await self._reject(new_id(), command, principal, params, _error(
                "COMMAND_FORBIDDEN" if why is not None else "COMMAND_PARAMS_INVALID",
                why or "; ".join(problems)), now)
        if not await self.receipts.consume(operation_id):  # another confirmation won
            current = self.receipts.get(operation_id) or stored
            if current.state == "accepted":  # it is running under that confirmation
                return replace(current, reason="confirmed already: it runs once, under the "
                               "first confirmation", token_digest=None)
            return current
        return await self._run(spec, stored.params, operation_id, principal, stored.created_at,
                               binding=stored.binding, token_digest=stored.token_digest)

    async def _run(self, spec: CommandSpec, params: Mapping[str, Any], operation_id: str,
                   principal: Principal, created_at: float,
                   binding: Mapping[str, Any] | None = None,
                   token_digest: str | None = None) -> Receipt:
        try:
            execution = await self.executor.execute(spec, params, operation_id=operation_id,
                                                    principal=principal)
        except Exception as exc:  # it may have started: never "nothing ran"
            execution = Execution(outcome="unknown", reason=f"the execution failed: {exc}",
                                  error=_error("COMMAND_OUTCOME_UNKNOWN", str(exc)))
        receipt = self._receipt(_state(execution), operation_id, spec.id, principal, params,
                                execution, created_at, binding,
                                token_digest=token_digest)  # a repeat of its token finds it
        try:
            await self.receipts.save(receipt)
        except Exception as exc:
            if receipt.state == "rejected":  # nothing ran either way
                return receipt
            log.warning("command %s: receipt %s not recorded: %s", spec.id, operation_id, exc)
            return replace(receipt, state="unknown", reason=(
                f"it {'ran' if receipt.state == 'committed' else 'may have run'} but its "
                f"receipt could not be written ({exc}); reconcile with this operation id"),
                error=_error("COMMAND_RECEIPT_NOT_RECORDED", str(exc)))
        return receipt

    def _receipt(self, state: ReceiptState, operation_id: str, command: str,
                 principal: Principal, params: Mapping[str, Any], execution: Execution,
                 created_at: float, binding: Mapping[str, Any] | None = None,
                 token_digest: str | None = None) -> Receipt:
        return Receipt(token_digest=token_digest, state=state, operation_id=operation_id, command=command,
                       principal=principal, params=params,
                       result=execution.result if state == "committed" else None,
                       reason=execution.reason, error=execution.error,
                       pipeline_operation_id=execution.pipeline_operation_id, binding=binding,
                       created_at=created_at, updated_at=self._clock())


def _state(execution: Execution) -> ReceiptState:
    match execution.outcome:
        case "succeeded":
            return "committed"
        case "not_executed":
            return "rejected"
        case _:
            return "unknown"


def _plain(value: Any) -> Any:
    """A JSON value as plain dicts / lists (frozen ones included), for comparing and storing."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
