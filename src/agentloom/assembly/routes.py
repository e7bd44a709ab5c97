"""The configuration's ``projects:`` as ``ModelRoutes`` (003 F13; ``agent.routes``).

A project overrides connections: ``projects.<p>.connections.<c>`` sets another ``base_url``,
``api_key_env`` or ``model``. The route of a run of ``p`` is, for every agent whose model is on
a connection ``p`` overrides, the whole resolved endpoint — the connection's preset and
variant, the override's URL and key variable (else the connection's, else the preset's), the
override's model id (else the agent's) — so a user's model id never meets a default endpoint
or key. Agents on connections the project leaves alone keep the release's connection.

Owns: turning ``projects`` into snapshots. Does not own: when
a run takes its snapshot (``Runtime``), the call-time choice (``models.manager``).
"""

from __future__ import annotations

from typing import Any

from agentloom.agent.routes import RouteSnapshot
from agentloom.config import Config, ConnectionModelChoice
from agentloom.models.presets import load_preset

__all__ = ["ConfigRoutes"]


class ConfigRoutes:
    """``ModelRoutes`` of a configuration."""

    def __init__(self, config: Config) -> None:
        self._config = config

    def snapshot(self, project: str | None) -> RouteSnapshot | None:
        settings = self._config.projects.get(project) if project is not None else None
        if settings is None or not settings.connections:
            return None
        agents: dict[str, dict[str, Any]] = {}
        for name, agent in self._config.agents.items():
            choice = agent.model
            if not isinstance(choice, ConnectionModelChoice):
                continue
            override = settings.connections.get(choice.connection)
            if override is None:
                continue
            connection = self._config.connections[choice.connection]
            variant = choice.variant or "default"
            endpoint = load_preset(connection.preset).endpoint(variant)
            agents[name] = {
                "connection": choice.connection, "preset": connection.preset,
                "variant": variant,
                "base_url": override.base_url or connection.base_url or endpoint.base_url,
                "api_key_env": (override.api_key_env or connection.api_key_env
                                or endpoint.api_key_env),
                "model": override.model or choice.name}
        return {"project": project, "agents": agents} if agents else None
