"""The checks of a configuration that look at more than one key: names of the sections' keys,
a model's connection, an agent's tools against the MCP servers and A2A agents, Executors, hook
ids, projects and worker caps, intents, commands and workflows — every problem, in file order.

Owns: ``cross_problems`` (what ``Config`` runs after its shape is valid). Does not own: the
shape of any key (the section modules), nor the checks that need the provider presets or the
script parser (build time, ``agentloom.assembly``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentloom.config._base import NAME, NAME_RULE
from agentloom.config._entries import a2a_agent_problem, mcp_server_problem
from agentloom.config._problems import Problem, did_you_mean, key_path
from agentloom.config.commands import command_problems, command_tool_problems
from agentloom.config.connections import ConnectionModelChoice, ScriptModelChoice, TestModelChoice
from agentloom.config.hooks import HookConfig, configured_hooks, default_hook_id
from agentloom.config.intents import intent_problems
from agentloom.config.skills import SkillHooksConfig
from agentloom.config.workflows import workflow_problems
from agentloom.limits import leaves_input_room

if TYPE_CHECKING:
    from agentloom.config.agents import AgentConfig
    from agentloom.config.model import Config


def cross_problems(config: Config) -> list[Problem]:
    """Every problem that needs more than one key to see, in file order (those that need a
    provider preset or the script parser are found at build time)."""
    problems: list[Problem] = []
    for section, names in (("connections", config.connections), ("agents", config.agents),
                           ("mcp_servers", config.mcp_servers),
                           ("a2a_agents", config.a2a_agents)):
        for name in names:
            if not NAME.match(name):
                problems.append(Problem(key_path((section, name)), NAME_RULE))
    for project, settings in config.projects.items():
        for name in settings.connections:
            if name not in config.connections:
                known = list(config.connections)
                problems.append(Problem(key_path(("projects", project, "connections", name)),
                                        f"no connection named {name!r}; {did_you_mean(name, known)}"
                                        f"defined: {', '.join(known) or 'none'}"))
    for agent_name in config.workers.max_concurrent_runs:
        if agent_name not in config.agents:
            problems.append(Problem(key_path(("workers", "max_concurrent_runs", agent_name)),
                                    f"no agent {agent_name!r} is defined; "
                                    f"{did_you_mean(agent_name, list(config.agents))}"
                                    f"agents: {', '.join(sorted(config.agents))}"))
    hook_ids: dict[str, str] = {}
    for name, agent in config.agents.items():
        at = key_path(("agents", name))
        _model_problems(config, agent.model, f"{at}.model", problems)
        _duplicates(agent.tools, f"{at}.tools", problems)
        _mcp_tool_problems(config, agent.tools, f"{at}.tools", problems)
        _a2a_tool_problems(config, agent.tools, f"{at}.tools", problems)
        _executor_problems(config, name, agent, at, problems)
        if agent.skills != "*":
            _duplicates(agent.skills, f"{at}.skills", problems)
        if not agent.skills:  # skill.list / skill.read come with skills (config.agents.AUTO_TOOLS)
            problems.extend(Problem(f"{at}.tools[{i}]", f"{tool!r} comes with skills: an agent "
                                    "with skills: gets skill.list and skill.read; add skills: "
                                    "or remove it") for i, tool in enumerate(agent.tools)
                            if tool in ("skill.list", "skill.read"))
        for i, hook in enumerate(agent.hooks):
            where = f"{at}.hooks[{i}]"
            if isinstance(hook, SkillHooksConfig):
                if agent.skills != "*" and hook.skill not in agent.skills:
                    problems.append(Problem(f"{where}.skill", f"skill {hook.skill!r} is not in "
                                            f"{at}.skills; add it there to bind its hooks"))
                continue
            hook_id = hook.hook_id or default_hook_id(name, i)
            if hook_id in hook_ids:
                problems.append(Problem(f"{where}.hook_id", f"hook id {hook_id!r} is already used by "
                                        f"{hook_ids[hook_id]}; give each hook its own id"))
            hook_ids.setdefault(hook_id, where)
            if hook.timing == "before" and hook.match.status is not None:
                problems.append(Problem(f"{where}.match.status", "applies to after hooks only "
                                        "(nothing has a status before it runs); remove it or set "
                                        "timing: after"))
    problems.extend(_workflow_hook_problems(config, hook_ids))
    problems.extend(intent_problems(config.intents))
    problems.extend(command_problems(config.intents, config.commands))
    problems.extend(command_tool_problems(config.agents, config.commands))
    problems.extend(workflow_problems(config))
    return problems


def _model_problems(
    config: Config, choice: ConnectionModelChoice | TestModelChoice | ScriptModelChoice, at: str,
    problems: list[Problem],
) -> None:
    if isinstance(choice, ScriptModelChoice):
        path = config.resolve_path(choice.path)
        if not path.is_file():
            problems.append(Problem(f"{at}.path", f"no script file at {str(path)!r} (a relative path is "
                                    f"read from the config file's folder); create it or fix the path"))
        return
    if isinstance(choice, TestModelChoice):
        return
    if choice.connection not in config.connections:
        known = list(config.connections)
        problems.append(Problem(f"{at}.connection", f"no connection named {choice.connection!r}; "
                                f"{did_you_mean(choice.connection, known)}defined: "
                                f"{', '.join(known) or 'none (add one under connections)'}"))
    if (choice.window is not None and choice.output_limit is not None
            and not leaves_input_room(choice.window, choice.output_limit)):
        problems.append(Problem(f"{at}.output_limit", f"must be less than window ({choice.window}) to leave "
                                f"room for input (got {choice.output_limit})"))
    limit = choice.max_output_tokens
    if limit is not None and choice.window is not None and not leaves_input_room(choice.window, limit):
        problems.append(Problem(f"{at}.max_output_tokens", f"must be less than window ({choice.window}) "
                                f"to leave room for input (got {limit})"))
    elif limit is not None and choice.output_limit is not None and limit > choice.output_limit:
        problems.append(Problem(f"{at}.max_output_tokens", f"must not exceed output_limit "
                                f"({choice.output_limit}), the model's output limit (got {limit})"))


def _duplicates(entries: tuple[str, ...], at: str, problems: list[Problem]) -> None:
    first: dict[str, int] = {}
    for i, entry in enumerate(entries):
        if entry in first:
            problems.append(Problem(f"{at}[{i}]", f"{entry!r} is listed twice (also at [{first[entry]}]); "
                                    "remove one"))
        first.setdefault(entry, i)


def _mcp_tool_problems(config: Config, entries: tuple[str, ...], at: str,
                       problems: list[Problem]) -> None:
    problems.extend(Problem(f"{at}[{i}]", problem) for i, entry in enumerate(entries)
                    if (problem := mcp_server_problem(config.mcp_servers, entry)) is not None)


def _a2a_tool_problems(config: Config, entries: tuple[str, ...], at: str,
                       problems: list[Problem]) -> None:
    problems.extend(Problem(f"{at}[{i}]", problem) for i, entry in enumerate(entries)
                    if (problem := a2a_agent_problem(config.a2a_agents, entry)) is not None)


def _executor_problems(config: Config, name: str, agent: AgentConfig, at: str,
                       problems: list[Problem]) -> None:
    first: dict[str, int] = {}
    for i, executor in enumerate(agent.executors):
        where = f"{at}.executors[{i}]"
        if executor in first:
            problems.append(Problem(where, f"{executor!r} is listed twice (also at [{first[executor]}]); "
                                    "remove one"))
        elif executor == name:
            problems.append(Problem(where, "an agent cannot be its own executor; remove it"))
        elif executor not in config.agents:
            others = [a for a in config.agents if a != name]
            problems.append(Problem(where, f"no agent named {executor!r}; {did_you_mean(executor, others)}"
                                    f"defined: {', '.join(others) or 'none besides this one'}"))
        elif config.agents[executor].executors:
            problems.append(Problem(
                where, f"agent {executor!r} has executors of its own; delegation is one level deep "
                f"(an executor does not delegate further): remove {key_path(('agents', executor))}"
                f".executors, or do not use {executor!r} as an executor"))
        first.setdefault(executor, i)


def _workflow_hook_problems(config: Config, hook_ids: dict[str, str]) -> list[Problem]:
    """A workflow's hooks (issue 37): ids unique across agents and workflows, no ``status`` on
    a before hook, and ``match.node`` naming a node of the workflow."""
    problems: list[Problem] = []
    for item in configured_hooks(config):
        hook = item.entry
        if not item.role.startswith("workflow:") or not isinstance(hook, HookConfig):
            continue
        hook_id = hook.hook_id or item.default_id
        if hook_id in hook_ids:
            problems.append(Problem(f"{item.where}.hook_id", f"hook id {hook_id!r} is already "
                                    f"used by {hook_ids[hook_id]}; give each hook its own id"))
        hook_ids.setdefault(hook_id, item.where)
        if hook.timing == "before" and hook.match.status is not None:
            problems.append(Problem(f"{item.where}.match.status", "applies to after hooks only "
                                    "(nothing has a status before it runs); remove it or set "
                                    "timing: after"))
        nodes = list(config.workflows[item.owner].nodes)
        node = hook.match.node
        if node is not None and node not in nodes:
            problems.append(Problem(f"{item.where}.match.node", f"workflow {item.owner!r} has no "
                                    f"node {node!r}; {did_you_mean(node, nodes)}nodes: "
                                    f"{', '.join(nodes)}"))
    return problems
