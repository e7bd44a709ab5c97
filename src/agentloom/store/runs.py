"""The ``runs`` repository: the typed record of a run row, its reads and the ops that write it.

::

    store.get("runs", …)    ──► RunRecord.from_row ──► get_run(store, run_id)
    store.query("runs", …)  ──► RunRecord.from_row ──► runs(store, …) / principal_page(store, …)
                                                        / principal_runs(store, principal)
    store.query("runs", …, columns=…) ──► RunKey      ──► principal_keys(store, principal)
    Insert("runs", row)     ◄── new_run_op(…)                    (a run created or queued)
    Put("runs", changes)    ◄── update_run_op(run_id, …) / requeue_op(run_id, …)

A record is a frozen view of one row: its columns as typed fields — the status as the
``RunStatus`` of ``agentloom.results`` — and typed accessors for the ``data`` keys readers use
(a run's ``agent``, ``task``, ``session_id``, ``failures``, …). ``from_row`` refuses a row whose
status is outside its set (``ValueError`` naming the row, the value and the set), so a reader
never branches on a value it does not know. Only what *shows* runs as they are stored (``runs
list`` / ``show``, the host's views) reads them with ``lenient=True``: a damaged status is then
kept as text (``stored_status``), and the run counts as neither running nor ended.

Who writes runs rows: the kernel (a run created, queued, claimed, parked, ended: it decides
*when*) and ``approvals.answers``, which puts a ``waiting`` run whose approvals are all answered
back in the queue (``requeue_op``, fenced by the epoch it read). Both build their ops here and
commit them through the commit coordinator; this module commits nothing.

Owns: ``RunRecord``, ``RunFailures``, ``RunKey``, the reads ``get_run``, ``runs``,
``principal_page``, ``principal_keys``, ``principal_runs``, ``probe`` and the op builders.
Does not own: the generic ``Store`` protocol (``store.ports``), claiming a run
(``Store.claim_run`` / ``claim_next``), when a run's row is written (the kernel,
``approvals.answers``), or what a lease means (``agent.leases``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, assert_never

from agentloom.errors import OperationError
from agentloom.refs import Principal
from agentloom.results import RUN_STATUSES, RunStatus, TerminalRunStatus
from agentloom.store.ports import Fence, Insert, Put, Store

__all__ = ["RunFailures", "RunKey", "RunPage", "RunRecord", "get_run", "new_run_op",
           "principal_agent_runs", "principal_keys", "principal_page", "principal_runs", "probe",
           "requeue_op", "runs",
           "update_run_op"]

TABLE = "runs"
COLUMNS = frozenset({"run_id", "status", "lease_epoch", "lease_owner", "lease_expires_at",
                     "created_at", "updated_at", "data", "agent", "priority", "release_id",
                     "actor", "project"})
_RUN_STATUS: Mapping[object, RunStatus] = {status: status for status in RUN_STATUSES}


def _refused(run_id: object, status: object) -> ValueError:
    return ValueError(f"run {run_id!r} has status {status!r}, which is not one of "
                      f"{', '.join(RUN_STATUSES)}; this release cannot read the row")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFailures:
    """``runs.data.failures``: how often the runtime failed while driving the run
    (``agent.failures`` writes it). ``count`` in a row the same way, ``total`` in all; a worker
    resumes the run no earlier than ``retry_at``; ``last_*`` describe the last failure."""

    fingerprint: str
    count: int
    total: int
    retry_at: float
    last_code: str
    last_type: str
    last_message: str
    last_at: float

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunFailures:
        last = data.get("last") or {}
        return cls(fingerprint=str(data.get("fingerprint", "")), count=int(data.get("count", 0)),
                   total=int(data.get("total", 0)), retry_at=float(data.get("retry_at") or 0.0),
                   last_code=str(last.get("code", "")), last_type=str(last.get("type", "")),
                   last_message=str(last.get("message", "")),
                   last_at=float(last.get("at") or 0.0))


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    """One ``runs`` row. ``data`` is the run's stored facts as JSON (read it, never change it):
    what it was started with (``agent``, ``task``, ``session_id``, ``release_id``, …) and, once
    it ended, what it gave (``output``, ``error``, ``steps``, ``workspace``).

    ``stored_status`` is the ``status`` column as stored; ``status`` is it as a ``RunStatus``
    (always, unless the record was read ``lenient``). ``actor`` / ``project`` say whom the run
    is done for (a host's principal; None for a run started otherwise)."""

    run_id: str
    stored_status: str
    lease_epoch: int
    lease_owner: str | None
    lease_expires_at: float | None
    created_at: float
    updated_at: float
    data: Mapping[str, Any]
    priority: int = 0
    actor: str | None = None
    project: str | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any], *, lenient: bool = False) -> RunRecord:
        """The record of a ``runs`` row (as ``Store.get`` / ``query`` return it); ``lenient``
        keeps a status that is not a ``RunStatus`` (to show a damaged row, never to act on it).

        Raises:
            ValueError: its ``status`` is not a ``RunStatus`` (and not ``lenient``).
        """
        if not lenient and row.get("status") not in _RUN_STATUS:
            raise _refused(row.get("run_id"), row.get("status"))
        return cls(run_id=row["run_id"], stored_status=row["status"],
                   lease_epoch=int(row.get("lease_epoch") or 0),
                   lease_owner=row.get("lease_owner"),
                   lease_expires_at=row.get("lease_expires_at"),
                   created_at=row["created_at"], updated_at=row["updated_at"],
                   data=row.get("data") or {}, priority=int(row.get("priority") or 0),
                   actor=row.get("actor"), project=row.get("project"))

    # -- status ----------------------------------------------------------------------------
    @property
    def known_status(self) -> RunStatus | None:
        """The status, or None when the stored one is not a ``RunStatus`` (a ``lenient`` read)."""
        return _RUN_STATUS.get(self.stored_status)

    @property
    def status(self) -> RunStatus:
        """The run's status.

        Raises:
            ValueError: the stored status is not a ``RunStatus`` (only on a ``lenient`` read).
        """
        status = self.known_status
        if status is None:
            raise _refused(self.run_id, self.stored_status)
        return status

    @property
    def running(self) -> bool:
        return self.known_status == "running"

    @property
    def ended(self) -> TerminalRunStatus | None:
        """How the run ended; None while it has not (``pending``, ``running``, ``waiting``,
        ``suspended``) or its status is unknown."""
        status = self.known_status
        match status:
            case None | "running" | "pending" | "waiting" | "suspended":
                return None
            case "succeeded" | "failed" | "cancelled" | "timed_out":
                return status
            case _:
                assert_never(status)

    # -- lease and owner ------------------------------------------------------------------------
    @property
    def fence(self) -> Fence:
        """The fence of a commit that must find the run under the lease epoch read here."""
        return Fence(self.run_id, self.lease_epoch)

    def done_for(self, principal: Principal) -> bool:
        """Whether the run is done for ``principal`` (its actor in its project)."""
        return self.actor == principal.actor and self.project == principal.project

    # -- what it was started with ---------------------------------------------------------------
    @property
    def agent(self) -> str | None:
        return self.data.get("agent")

    @property
    def task(self) -> str | None:
        return self.data.get("task")

    @property
    def session_id(self) -> str | None:
        return self.data.get("session_id")

    @property
    def session_seen(self) -> int | None:
        """How many turns of its session the run saw when it started."""
        return self.data.get("session_seen")

    @property
    def release_id(self) -> str | None:
        return self.data.get("release_id")

    @property
    def catalog_version(self) -> str | None:
        return self.data.get("catalog_version")

    @property
    def sandbox_backend(self) -> str | None:
        """The sandbox its commands ran in (None for a run recorded before it was stored)."""
        return self.data.get("sandbox_backend")

    @property
    def config_path(self) -> str | None:
        """The config file the run was started from (``data.config.path``), if any."""
        return (self.data.get("config") or {}).get("path")

    @property
    def config_snapshot(self) -> Any:
        """The config's values when the run started (``data.config.snapshot``), if recorded."""
        return (self.data.get("config") or {}).get("snapshot")

    # -- what it gave -----------------------------------------------------------------------
    @property
    def output(self) -> Any:
        """The final answer: its text, or the parsed JSON of a structured one."""
        return self.data.get("output")

    @property
    def error(self) -> OperationError | None:
        stored = self.data.get("error")
        return OperationError.from_dict(stored) if stored else None

    @property
    def steps(self) -> int | None:
        return self.data.get("steps")

    @property
    def workspace(self) -> str | None:
        """The host folder its files stay in after it ended, if it was kept."""
        return self.data.get("workspace")

    @property
    def failures(self) -> RunFailures | None:
        """How often the runtime failed driving it (``agent.failures``); None if never."""
        stored = self.data.get("failures")
        return RunFailures.from_dict(stored) if stored else None


# -- reads ------------------------------------------------------------------------------------


def get_run(store: Store, run_id: str, *, lenient: bool = False) -> RunRecord | None:
    """The run, or None when the store has no such run (``lenient``: see
    ``RunRecord.from_row``)."""
    row = store.get(TABLE, {"run_id": run_id})
    return None if row is None else RunRecord.from_row(row, lenient=lenient)


def runs(store: Store, *, status: RunStatus | None = None, newest_first: bool = False,
         limit: int | None = None, lenient: bool = False) -> list[RunRecord]:
    """Runs in the order they were created (``newest_first``: the other way), only those with
    ``status`` when given, at most ``limit`` (``lenient``: see ``RunRecord.from_row``)."""
    where = None if status is None else {"status": status}
    rows = store.query(TABLE, where, order_by=("created_at",), descending=newest_first,
                       limit=limit)
    return [RunRecord.from_row(row, lenient=lenient) for row in rows]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunPage:
    """A page of a principal's runs (``principal_page``): the runs, newest first, read as they
    are now (``lenient``), and ``last`` — the (created_at, run_id) of the page's last run when
    more runs follow it, else None."""

    runs: Sequence[RunRecord]
    last: tuple[float, str] | None


def principal_page(store: Store, principal: Principal, *, limit: int,
                   status: str | None = None, agent: str | None = None,
                   after: tuple[float, str] | None = None) -> RunPage:
    """The principal's runs newest first (by ``created_at``, then ``run_id``), only those with
    ``status`` / the ``agent`` column when given, only those before ``after`` (a position a
    previous page ended at), at most ``limit``. Reads the keys of every matching run, then the
    rows of the page's runs only (a run that changed meanwhile so that it no longer matches is
    left out)."""
    where: dict[str, Any] = {"actor": principal.actor, "project": principal.project}
    if status is not None:
        where["status"] = status
    if agent is not None:
        where["agent"] = agent
    keys = store.query(TABLE, where, order_by=("created_at", "run_id"), descending=True,
                       columns=("run_id", "created_at"))
    if after is not None:
        keys = [k for k in keys if (k["created_at"], k["run_id"]) < after]
    page = keys[:limit]
    rows = [row for k in page if (row := store.get(TABLE, {"run_id": k["run_id"]})) is not None
            and all(row.get(c) == v for c, v in where.items())]  # as it is now
    last = (page[-1]["created_at"], page[-1]["run_id"]) if len(keys) > limit and page else None
    return RunPage(runs=[RunRecord.from_row(r, lenient=True) for r in rows], last=last)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunKey:
    """What a listing sorts and filters a run by (``principal_keys``): three columns, no
    ``data`` decoded. ``stored_status`` is the column as stored (not checked: a listing shows
    a damaged row as it is)."""

    run_id: str
    stored_status: str
    updated_at: float


def principal_keys(store: Store, principal: Principal) -> list[RunKey]:
    """The key of every run done for ``principal``, in the store's order: its id, status and
    last change only (a listing of many, or large, runs reads no run's data)."""
    rows = store.query(TABLE, _done_for(principal), columns=("run_id", "status", "updated_at"))
    return [RunKey(run_id=r["run_id"], stored_status=r["status"], updated_at=r["updated_at"])
            for r in rows]


def principal_runs(store: Store, principal: Principal) -> list[RunRecord]:
    """Every run done for ``principal``, whole, in the store's order, read as stored
    (``lenient``)."""
    return [RunRecord.from_row(r, lenient=True)
            for r in store.query(TABLE, _done_for(principal))]


def _done_for(principal: Principal) -> dict[str, Any]:
    return {"actor": principal.actor, "project": principal.project}


def principal_agent_runs(store: Store, principal: Principal, agent: str) -> list[RunRecord]:
    """The runs of ``agent`` (its column) done for ``principal``, in the store's order, read
    as stored (``lenient``: a reader that only looks a run up never refuses a damaged row)."""
    rows = store.query(TABLE, {"agent": agent, "actor": principal.actor,
                               "project": principal.project})
    return [RunRecord.from_row(row, lenient=True) for row in rows]


def probe(store: Store) -> None:
    """Read one run row, whatever it is: raises whatever the store raises when it does not
    answer (a readiness check)."""
    store.query(TABLE, limit=1)


# -- writes (ops for the caller to commit) ---------------------------------------------------


def new_run_op(run_id: str, *, status: RunStatus, data: Mapping[str, Any], created_at: float,
               priority: int = 0, principal: Principal | None = None,
               lease: tuple[int, str, float] | None = None) -> Insert:
    """The ``Insert`` of a new run row: ``data`` as given, its ``agent`` and ``release_id``
    copied into their columns (a queue claim filters and counts by them), whom it is done for
    (``principal``), held under ``lease`` = (epoch, owner, expires_at) when given (a run
    created already held: the insert is the claim), else held by nobody (epoch 0)."""
    epoch, owner, expires_at = lease if lease is not None else (0, None, None)
    row: dict[str, Any] = {
        "run_id": run_id, "status": status, "lease_epoch": epoch, "lease_owner": owner,
        "created_at": created_at, "updated_at": created_at, "data": dict(data),
        "agent": data.get("agent"), "release_id": data.get("release_id"), "priority": priority,
        "actor": principal.actor if principal else None,
        "project": principal.project if principal else None}
    if lease is not None:
        row["lease_expires_at"] = expires_at
    return Insert(TABLE, row)


def update_run_op(run_id: str, changes: Mapping[str, Any]) -> Put:
    """The ``Put`` changing the columns ``changes`` of the run (the others stay as stored).

    Raises:
        ValueError: ``changes`` names a column ``runs`` does not have, or the key itself.
    """
    unknown = sorted(set(changes) - (COLUMNS - {"run_id"}))
    if unknown:
        raise ValueError(f"a runs row has no column {', '.join(unknown)} to change "
                         f"(columns: {', '.join(sorted(COLUMNS))})")
    return Put(TABLE, {"run_id": run_id, **changes})


def requeue_op(run_id: str, *, now: float) -> Put:
    """The ``Put`` putting the run back in the queue (``pending``, held by nobody new); commit
    it fenced by the epoch the caller read the run under (``RunRecord.fence``)."""
    return update_run_op(run_id, {"status": "pending", "updated_at": now})
