"""The roles of a runtime: its agents and programs (workflows) by name, checked once when the
runtime is built, and what a run of each needs to know — its limits, retry policy and owner.

Owns: those lookups and the checks on the set (at least one agent, no two roles of one name,
no delegation to an agent that is not defined, no model that cannot serve its agent). Does not
own: the release id (``agent.release``) or running a role (``agent.driver``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from agentloom.agent.programs import RunProgram
from agentloom.agent.spec import AgentSpec, Limits
from agentloom.errors import ConfigError
from agentloom.pipeline.retry import RetryPolicy
from agentloom.refs import OwnerRef

__all__ = ["Roster"]


class Roster:
    """The agents and programs of one runtime, in the space ``space_id``."""

    def __init__(self, agents: Sequence[AgentSpec], programs: Sequence[RunProgram],
                 space_id: str) -> None:
        """Raises:
            ConfigError: no agent, two roles of one name, a delegation to an agent that is not
                defined, or a model that cannot serve its agent (000 §4.6)."""
        if not agents:
            raise ConfigError("a runtime needs at least one agent")
        self.agents = {a.name: a for a in agents}
        if len(self.agents) != len(agents):
            raise ConfigError("two agents have the same name")
        for agent in agents:
            for executor in agent.executors:
                if executor not in self.agents:
                    raise ConfigError(f"agent {agent.name!r} delegates to {executor!r}, which "
                                      f"is not defined; agents: {sorted(self.agents)}")
            agent.check_model()  # what its model cannot serve is refused now (000 §4.6)
        self.programs = {p.name: p for p in programs}
        if len(self.programs) != len(programs) or set(self.programs) & set(self.agents):
            raise ConfigError("two agents or workflows have the same name")
        self.space_id = space_id

    def agent(self, name: str) -> AgentSpec:
        """The agent ``name``.

        Raises:
            ConfigError: no agent has that name (the message lists them).
        """
        try:
            return self.agents[name]
        except KeyError:
            raise ConfigError(f"no agent named {name!r}; agents: {sorted(self.agents)}") from None

    def limits(self, name: str) -> Limits:
        """The limits of the agent or program (a workflow) ``name``.

        Raises:
            ConfigError: no agent or workflow has that name.
        """
        program = self.programs.get(name)
        if program is not None:
            return program.limits
        if name not in self.agents and name.startswith("workflow:"):
            raise ConfigError(f"no workflow named {name.removeprefix('workflow:')!r}; "
                              f"workflows: {sorted(p.owner.id for p in self.programs.values())}")
        return self.agent(name).limits

    def retry_and_limits(self, role: str) -> tuple[RetryPolicy, Limits]:
        """The retry policy and limits an invocation of ``role`` runs under."""
        program = self.programs.get(role)
        if program is not None:
            return program.retry, program.limits
        agent = self.agent(role)
        return agent.retry, agent.limits

    def owner_of(self, name: str) -> OwnerRef:
        """Whose capability use a run of the agent or program ``name`` is."""
        program = self.programs.get(name)
        if program is not None:
            return replace(program.owner, space_id=self.space_id)
        return OwnerRef(kind="agent", id=name, space_id=self.space_id)

    def names(self) -> list[str]:
        """Every role a run can be of: the agents, then the programs."""
        return [*self.agents, *self.programs]
