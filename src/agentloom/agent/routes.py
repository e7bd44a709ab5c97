"""Per-project model routes (003 F13): which endpoint, key variable and model id each agent of a
run talks to, resolved once when the run is queued or started and kept, as one snapshot, to
its end — the Planner and every Executor of the run use it; nothing is read again mid-run.

::

    projects: {acme: {connections: {openai: {base_url: …, api_key_env: ACME_KEY, model: m}}}}
        │  ModelRoutes.snapshot("acme")   (assembly.routes: the config's adapter)
        ▼
    run data["route"] = {"project": "acme", "agents": {"main": {connection, preset, variant,
                         base_url, api_key_env, model}, "coder": {…}}}      (no key values)
        │  route_connections(route)  each time a process drives the run (any process:
        │                              the snapshot is all it needs)
        ▼
    ModelManager.route(run_id, {"main": Connection, "coder": Connection})

A run without a snapshot (no project, or a project that overrides nothing its agents use)
talks to the release's own connections. The snapshot holds the key's *variable*, never its
value: the key is read from the environment of the process that drives the run.

Owns: the port, what a run records and the connections it names. Does not own: reading the
config (``assembly.routes``), choosing the connection at call time (``models.manager``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Protocol

from agentloom.errors import ConfigError
from agentloom.models.connect import connection_for, key_rule
from agentloom.models.ports import Connection
from agentloom.models.presets import load_preset

__all__ = ["ModelRoutes", "RouteSnapshot", "route_connections"]

RouteSnapshot = dict[str, Any]
"""``{"project": str, "agents": {agent: {"connection", "preset", "variant", "base_url",
"api_key_env", "model"}}}``: what a run records of its route (JSON, no secret values)."""


class ModelRoutes(Protocol):
    """Where a project's runs send their model calls."""

    def snapshot(self, project: str | None) -> RouteSnapshot | None:
        """The route of a run of ``project`` (None: the release's own connections)."""
        ...


def route_connections(snapshot: Mapping[str, Any], *,
                      environ: Mapping[str, str] | None = None) -> dict[str, Connection]:
    """Agent -> the ``Connection`` a recorded snapshot names, its key read now from
    ``environ`` (default ``os.environ``).

    Raises:
        ConfigError: ``MODEL_API_KEY_MISSING`` (the variable is not set in this process,
            named with the project's key path, never a value), or a preset the snapshot names
            is unknown here.
    """
    env = os.environ if environ is None else environ
    project = snapshot.get("project")
    found: dict[str, Connection] = {}
    for agent, entry in dict(snapshot.get("agents") or {}).items():
        variable = entry["api_key_env"]  # None: the endpoint takes no key
        rule = key_rule(load_preset(entry["preset"]).endpoint(entry["variant"]),
                        base_url=entry["base_url"], api_key_env=variable)
        if variable and rule.required and not env.get(variable):
            raise ConfigError(
                f"projects.{project}.connections.{entry['connection']}: the environment variable "
                f"{variable!r} is not set or is empty in this process; the runs of project "
                f"{project!r} read their model key from it (agent {agent!r})",
                code="MODEL_API_KEY_MISSING")
        found[agent] = connection_for(
            entry["preset"], model=entry["model"], variant=entry["variant"],
            base_url=entry["base_url"], api_key_env=variable, environ=env,
            config_name=entry["connection"])
    return found
