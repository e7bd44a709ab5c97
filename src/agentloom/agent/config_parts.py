"""From a validated ``Config`` to the parts the runtime is assembled from, at build time.

``load_config`` checks what a configuration can tell from itself; what needs the layers above
the core is done here, before any run starts: ``check_config`` finds the problems only the
provider presets or the script parser can see (an unknown preset, a protocol or variant the
preset lacks, a capability the configured model lacks on its preset — tools, output format,
think settings (000 §4.6) — a ``window`` / ``output_limit`` wider than what the preset documents
for the model (000 §4), a script file that does not parse), and the builders return plain runtime
values — a model source, hook specs, hook functions, a retry policy, SDK tools. User code
named in the configuration (``module:attr`` tools, hook functions) is imported here, with the
config file's folder first on ``sys.path`` for the duration of the import.

Owns: build-time checks and runtime parts from a ``Config``. Does not own: the configuration's
shape or the checks it can make alone (``agentloom.config``); assembling a ``Runtime``
(``agent/configured.py``).
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import sysconfig
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloom.agent.config_mcp import mcp_entry_tools, with_servers
from agentloom.agent.config_skill_hooks import skill_hook_sources, skill_hooks
from agentloom.agent.spec import AgentTool
from agentloom.catalog import CapabilitySpec
from agentloom.config import (
    AgentConfig,
    Config,
    ConnectionConfig,
    ConnectionModelChoice,
    Problem,
    ScriptModelChoice,
    TestModelChoice,
    config_error,
    default_hook_id,
    did_you_mean,
    key_path,
)
from agentloom.config.a2a import a2a_entry_agent
from agentloom.config.commands import command_entry
from agentloom.config.mcp import mcp_entry_parts
from agentloom.config.model import (
    AnyHandlerConfig,
    CommandHandlerConfig,
    HandlerConfig,
    HookConfig,
    HttpHandlerConfig,
    McpHandlerConfig,
)
from agentloom.config.skills import SkillHooksConfig
from agentloom.config.workflows import CapabilityNodeConfig
from agentloom.errors import ConfigError
from agentloom.hooks.spec import HandlerRef, HookMatch, HookSpec
from agentloom.models.budget import build_descriptor, resolve_descriptor
from agentloom.models.connect import connection_for
from agentloom.models.offline import ScriptModel, TestModel, load_script
from agentloom.models.ports import Connection, ModelAdapter
from agentloom.models.presets import Preset, capabilities_for, list_presets, load_preset
from agentloom.models.types import (
    STRUCTURED_FORMATS,
    ModelDescriptor,
    ModelRequest,
    OutputFormat,
    ThinkParams,
)
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.pipeline.retry import RetryPolicy
from agentloom.tools.sdk import Tool

if TYPE_CHECKING:
    from agentloom.a2a import A2aAgent
    from agentloom.mcp import McpTool

__all__ = [
    "agent_tools",
    "check_config",
    "entry_tools",
    "hook_functions",
    "hook_specs",
    "max_output_tokens",
    "model_descriptor",
    "model_source",
    "retry_policy",
    "sdk_tools",
    "think_params",
    "user_code",
    "workflow_tools",
]


# -- the checks that need the presets or the script parser --------------------------------------


def check_config(config: Config) -> None:
    """Check what only the provider presets and the script parser can see, every problem at once.

    Raises:
        ConfigError: ``CONFIG_INVALID``, headed by ``config.origin``, one ``key.path: problem``
            per line: an unknown preset, a protocol the preset does not speak, a variant it
            lacks, a capability the model lacks on its preset (``agents.<a>.model``, naming the
            model, the preset, the capability and what needs it), a ``window`` /
            ``output_limit`` wider than what the preset documents for the model, a script file
            that does not parse.
    """
    problems = preset_and_script_problems(config)
    if problems:
        raise config_error(config.origin, problems)


def preset_and_script_problems(config: Config) -> list[Problem]:
    """The problems ``check_config`` raises, in file order."""
    problems: list[Problem] = []
    presets: dict[str, Preset] = {}
    for name, connection in config.connections.items():
        preset = _preset(connection, key_path(("connections", name)), problems)
        if preset is not None:
            presets[name] = preset
    for name, agent in config.agents.items():
        at = f"{key_path(('agents', name))}.model"
        choice = agent.model
        if isinstance(choice, ScriptModelChoice):
            path = config.resolve_path(choice.path)
            if path.is_file():  # a missing file is a load-time problem already
                try:
                    load_script(path)
                except ConfigError as exc:
                    problems.append(Problem(f"{at}.path", exc.error.message))
        elif isinstance(choice, ConnectionModelChoice):
            preset = presets.get(choice.connection)
            variant = choice.variant
            if preset is not None and variant is not None and variant not in preset.variants:
                problems.append(Problem(f"{at}.variant", f"preset {preset.name!r} has no variant "
                                        f"{variant!r}; choose one of {', '.join(sorted(preset.variants))}"))
            if preset is not None:
                _capability_problems(preset, agent, choice, at, problems)
                _window_problems(preset, choice, at, problems)
    return problems


def _window_problems(preset: Preset, choice: ConnectionModelChoice, at: str,
                     problems: list[Problem]) -> None:
    """A configured window / output limit wider than what the preset documents (000 §4)."""
    known = preset.descriptor(choice.name)
    if known is None:
        return
    try:
        resolve_descriptor(known, configured_window=choice.window,
                           configured_output_limit=choice.output_limit, model=choice.name,
                           config_path=at)
    except ConfigError as exc:
        key = "output_limit" if exc.code == "MODEL_OUTPUT_LIMIT_INVALID" else "window"
        problems.append(Problem(f"{at}.{key}", f"{exc.error.message} (preset {preset.name!r} "
                                f"version {preset.version} documents it)"))


def _capability_problems(preset: Preset, agent: AgentConfig, choice: ConnectionModelChoice,
                         at: str, problems: list[Problem]) -> None:
    """What the agent asks of its model that the preset cannot serve for it (000 §4.6)."""
    fmt: OutputFormat = "text"
    if agent.output is not None:  # asked for as the preset allows (agent.output.request_format)
        formats = preset.for_model(choice.name).capabilities & STRUCTURED_FORMATS
        fmt = ({"name": agent.output.name, "schema": agent.output.schema_} if "json_schema" in formats
               else "json_object" if "json_object" in formats else "text")
    needed = capabilities_for(ModelRequest(messages=(), output_format=fmt, think=think_params(agent)))
    agent_at = at.removesuffix(".model")
    think = f"{at}.think ({choice.think})"
    why = {"think_toggle": think, "think_effort": think, "json_schema": f"{agent_at}.output",
           "json_object": f"{agent_at}.output"}
    if agent.tools or agent.executors:
        needed |= {"tools"}
        why["tools"] = f"{agent_at}.tools" if agent.tools else f"{agent_at}.executors"
    for capability in sorted(needed):
        try:
            preset.check((capability,), model=choice.name)
        except ConfigError as exc:
            problems.append(Problem(at, f"{exc.error.message}; {why[capability]} needs it: remove "
                                    "that, or choose a model that supports it"))


_THINK: dict[str, ThinkParams] = {
    "on": ThinkParams(enabled=True), "off": ThinkParams(enabled=False),
    "low": ThinkParams(effort="low"), "medium": ThinkParams(effort="medium"),
    "high": ThinkParams(effort="high"),
}


def think_params(agent: AgentConfig) -> ThinkParams | None:
    """The agent's ``model.think`` as the request's ``ThinkParams`` (``None``: not set, or not a
    connection model): ``on`` / ``off`` switch reasoning, ``low`` / ``medium`` / ``high`` set
    its effort."""
    choice = agent.model
    setting = choice.think if isinstance(choice, ConnectionModelChoice) else None
    return None if setting is None else _THINK[setting]


def max_output_tokens(agent: AgentConfig) -> int | None:
    """The agent's ``model.max_output_tokens`` (``None``: not set, or not a connection model)."""
    choice = agent.model
    return choice.max_output_tokens if isinstance(choice, ConnectionModelChoice) else None


def _preset(connection: ConnectionConfig, at: str, problems: list[Problem]) -> Preset | None:
    known = list_presets()
    if connection.preset not in known:
        problems.append(Problem(f"{at}.preset", f"unknown preset {connection.preset!r}; "
                                f"{did_you_mean(connection.preset, known)}known presets: {', '.join(known)}"))
        return None
    preset = load_preset(connection.preset)
    if connection.protocol is not None and connection.protocol != preset.protocol:
        speakers = [n for n in known if load_preset(n).protocol == connection.protocol]
        problems.append(Problem(
            f"{at}.protocol",
            f"preset {preset.name!r} speaks {preset.protocol!r}, not {connection.protocol!r}; remove "
            f"protocol, or use a preset that speaks {connection.protocol}: {', '.join(speakers)}"))
    return preset


# -- runtime parts -------------------------------------------------------------------------------


def model_source(
    config: Config, agent_name: str, *, environ: Mapping[str, str] | None = None
) -> ModelAdapter | Connection:
    """What serves the agent's model: a ``Connection`` for a connection model (its API key read
    now from ``environ``, default ``os.environ``), a ``TestModel`` or a ``ScriptModel``.

    Raises:
        ConfigError: no such agent; the key variable is unset or empty (``MODEL_API_KEY_MISSING``,
            naming ``connections.<c>.api_key_env`` and the variable, never a value); the script
            file became unreadable since load.
    """
    at = key_path(("agents", agent_name, "model"))
    choice = config.agent(agent_name).model
    if isinstance(choice, TestModelChoice):
        return TestModel()
    if isinstance(choice, ScriptModelChoice):
        try:
            return ScriptModel.from_file(config.resolve_path(choice.path))
        except ConfigError as exc:
            raise ConfigError(f"{at}.path: {exc.error.message}", code=exc.code) from None
    name = choice.connection
    connection = config.connections[name]
    variant = choice.variant or "default"
    variable = connection.api_key_env or load_preset(connection.preset).endpoint(variant).api_key_env
    env = os.environ if environ is None else environ
    if not env.get(variable):
        where = key_path(("connections", name, "api_key_env"))
        why = "" if connection.api_key_env else f" (not set: preset {connection.preset!r} uses {variable})"
        raise ConfigError(
            f"{where}{why}: the environment variable {variable!r} is not set or is empty; export it "
            f"before running ({at} uses connection {name!r})", code="MODEL_API_KEY_MISSING")
    try:
        return connection_for(connection.preset, model=choice.name, variant=variant,
                              base_url=connection.base_url, api_key_env=variable, environ=env,
                              config_name=name)
    except ConfigError as exc:
        raise ConfigError(f"{at}: {exc.error.message}", code=exc.code) from None


def model_descriptor(config: Config, agent_name: str,
                     model: ModelAdapter | Connection) -> ModelDescriptor:
    """The resolved window W and output limit O of the agent's ``model`` (its ``model_source``):
    ``models.budget.build_descriptor`` with the agent's configured ``window`` / ``output_limit``
    — the preset's documented window, an offline model's own, else the provider's model
    listing where the preset discovers (one bounded request, now).

    Raises:
        ConfigError: W is unknown or a configured value is invalid (``MODEL_WINDOW_UNKNOWN`` /
            ``MODEL_WINDOW_INVALID`` / ``MODEL_OUTPUT_LIMIT_INVALID``); the message names the
            agent, the model and ``agents.<agent>.model.window`` (or ``.output_limit``).
    """
    choice = config.agent(agent_name).model
    window = output_limit = None
    if isinstance(choice, ConnectionModelChoice):
        window, output_limit = choice.window, choice.output_limit
    return build_descriptor(
        model, agent=agent_name, config_path=key_path(("agents", agent_name, "model")),
        configured_window=window, configured_output_limit=output_limit)


def hook_specs(config: Config, skills: Mapping[str, Mapping[str, str]] | None = None, *,
               store: str | None = None) -> tuple[HookSpec, ...]:
    """Every agent's hooks, in file order. ``match.role`` defaults to the agent's name (the hook
    applies to that agent's calls only); ``role: "*"`` matches every role. A ``{skill: …}``
    entry stands for the hooks the skill declares in the version the release binds
    (``skills``: agent -> skill -> digest, read from the ``store`` URL), converted from Claude
    Code's shape, their commands run in the skill's materialised folder.

    Raises:
        ConfigError: a ``{skill: …}`` entry whose skill is not bound to the agent, declares no
            hooks, whose hooks do not convert, or whose ``hook`` id it does not declare
            (naming the key).
    """
    sources = skill_hook_sources(config, skills or {}, store)
    specs: list[HookSpec] = []
    for name, agent in config.agents.items():
        for i, hook in enumerate(agent.hooks):
            if isinstance(hook, SkillHooksConfig):
                where = f"{key_path(('agents', name))}.hooks[{i}]"
                specs.extend(_hook_spec(name, h, h.hook_id or where, folder)
                             for h, folder in skill_hooks(name, hook, sources, where))
                continue
            specs.append(_hook_spec(name, hook, hook.hook_id or default_hook_id(name, i),
                                    config.base_dir))
    return with_servers(config, tuple(specs))


def _hook_spec(agent: str, hook: HookConfig, hook_id: str, base_dir: Path) -> HookSpec:
    role = hook.match.role
    return HookSpec(
        hook_id=hook_id, timing=hook.timing, event=hook.event,
        match=HookMatch(role=agent if role is None else (None if role == "*" else role),
                        capability=hook.match.capability, purpose=hook.match.purpose,
                        status=hook.match.status),
        handler=_handler_ref(hook.handler, base_dir), timeout_s=hook.hook_timeout_s,
        on_failure=hook.on_failure)


def _handler_ref(handler: AnyHandlerConfig, base_dir: Path) -> HandlerRef:
    """The spec of a configured handler; a command hook starts in the config file's folder."""
    if isinstance(handler, CommandHandlerConfig):
        return HandlerRef(kind="command", command=handler.command, argv=handler.argv,
                          env=tuple(handler.env.items()), project_dir=str(base_dir),
                          format=handler.format)
    if isinstance(handler, HttpHandlerConfig):
        return HandlerRef(kind="http", url=handler.url, headers=tuple(handler.headers.items()),
                          allow_private=handler.allow_private)
    if isinstance(handler, McpHandlerConfig):  # its server's entry: ``config_mcp.with_servers``
        return HandlerRef(kind="mcp", server=handler.server, tool=handler.tool,
                          project_dir=str(base_dir))
    return HandlerRef(kind=handler.kind, ref=handler.ref)


def hook_functions(config: Config) -> dict[str, Callable[..., Any]]:
    """Every hook handler imported now, by ref (for ``Kernel(hook_functions=…)``), so a bad ref
    fails before any run and a module beside the config file is found.

    Raises:
        ConfigError: a module does not import, lacks the attribute, or it is not callable; the
            message names ``agents.<agent>.hooks[<i>].handler.ref``.
    """
    functions: dict[str, Callable[..., Any]] = {}
    for name, agent in config.agents.items():
        for i, hook in enumerate(agent.hooks):
            if isinstance(hook, SkillHooksConfig) or not isinstance(hook.handler, HandlerConfig):
                continue  # command / http, a skill's (command) hooks: nothing to import
                continue
            ref = hook.handler.ref
            if ref in functions:
                continue
            where = f"{key_path(('agents', name))}.hooks[{i}].handler.ref"
            target = _import(ref, where, config.base_dir)
            if not callable(target):
                raise ConfigError(f"{where}: {ref!r} is a {type(target).__name__}, not a function",
                                  code="CONFIG_IMPORT")
            functions[ref] = target
    return functions


def retry_policy(agent: AgentConfig) -> RetryPolicy:
    """The agent's ``retry`` section as the pipeline's ``RetryPolicy``."""
    return RetryPolicy(enabled=agent.retry.enabled, max_attempts=agent.retry.max_attempts,
                       interval_s=agent.retry.interval_s)


def sdk_tools(config: Config, agent_name: str) -> list[Tool[Any]]:
    """The agent's ``module:attr`` tools, imported now, in the order listed.

    Raises:
        ConfigError: no such agent, or an entry does not import or is not an ``agentloom.Tool``
            instance; the message names ``agents.<agent>.tools[<i>]``.
    """
    return [t for t in agent_tools(config, agent_name) if isinstance(t, Tool)]


def workflow_tools(config: Config, workflow: str,
                   mcp: Sequence[McpTool] | None = None, a2a: Mapping[str, A2aAgent] | None = None,
                   commands: Mapping[str, tuple[CapabilitySpec, CapabilityHandler]] | None = None,
                   ) -> dict[str, AgentTool]:
    """What each capability node of ``workflows.<workflow>`` calls, by its ``capability``
    entry, resolved as an agent's ``tools`` are (``agent_tools``): a ``module:attr`` entry
    names the tool it imports, whose capability key is the tool's own name.

    Raises:
        ConfigError: as ``agent_tools``; an entry that names no single tool (a glob) names
            its key.
    """
    nodes = config.workflows[workflow].nodes
    at = {node.capability: f"{key_path(('workflows', workflow, 'nodes', name))}.capability"
          for name, node in reversed(nodes.items()) if isinstance(node, CapabilityNodeConfig)}
    out: dict[str, AgentTool] = {}
    for entry, where in reversed(at.items()):
        tools = entry_tools(config, [entry], functools.partial(_same, where), mcp, a2a, commands)
        if len(tools) != 1:
            raise ConfigError(f"{where}: {entry!r} names {len(tools)} tools; a capability node "
                              "calls exactly one (no globs)", code="CONFIG_INVALID")
        out[entry] = tools[0]
    return out


def _same(where: str, index: int) -> str:
    return where


def agent_tools(config: Config, agent_name: str,
                mcp: Sequence[McpTool] | None = None, a2a: Mapping[str, A2aAgent] | None = None,
                commands: Mapping[str, tuple[CapabilitySpec, CapabilityHandler]] | None = None,
                ) -> list[AgentTool]:
    """The agent's tools in the order listed: built-in names as strings, SDK tools imported,
    the MCP tools of ``mcp`` (``config_mcp.mcp_catalog``) its ``mcp.<server>.<tool>`` entries
    select (left out when ``mcp`` is ``None``), the remote agents of ``a2a``
    (``config_a2a.a2a_catalog``) its ``a2a.<name>`` entries name (left out when ``a2a`` is
    ``None``), the ``(spec, handler)`` of its ``command.<id>`` entries from ``commands``
    (``config_commands.command_tools``; left out when ``None``) — the form ``Kernel.publish``
    takes.

    Raises:
        ConfigError: as for ``sdk_tools``; ``MCP_TOOL_NOT_LISTED`` for an MCP entry naming a
            tool its server does not list.
    """
    return entry_tools(config, list(config.agent(agent_name).tools),
                       lambda i: f"{key_path(('agents', agent_name))}.tools[{i}]",
                       mcp, a2a, commands)


def entry_tools(config: Config, entries: Sequence[str], where: Callable[[int], str],
                mcp: Sequence[McpTool] | None = None, a2a: Mapping[str, A2aAgent] | None = None,
                commands: Mapping[str, tuple[CapabilitySpec, CapabilityHandler]] | None = None,
                ) -> list[AgentTool]:
    """``entries`` (tool entries; ``where(i)`` names the key of the ``i``-th in messages)
    resolved: see ``agent_tools``."""
    out: list[AgentTool] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        if mcp_entry_parts(entry) is not None:
            chosen = mcp_entry_tools(entry, mcp, where(i)) if mcp is not None else []
            out.extend(t for t in chosen if t.capability_key not in seen)
            seen.update(t.capability_key for t in chosen)
            continue
        if (remote := a2a_entry_agent(entry)) is not None:  # ``config_a2a.a2a_catalog``
            if a2a is not None:
                out.append(a2a[remote])
            continue
        if (command := command_entry(entry)) is not None:  # ``config_commands``
            if commands is not None:
                out.append(commands[command])
            continue
        if ":" not in entry:
            out.append(entry)
            continue
        at = where(i)
        target = _import(entry, at, config.base_dir)
        if isinstance(target, type) and issubclass(target, Tool):
            raise ConfigError(f"{at}: {entry!r} is the class {target.__name__}; name an instance "
                              f"(e.g. `tool = {target.__name__}()` in the module)", code="CONFIG_IMPORT")
        if not isinstance(target, Tool):
            raise ConfigError(f"{at}: {entry!r} is a {type(target).__name__}, not an agentloom.Tool "
                              "instance", code="CONFIG_IMPORT")
        out.append(target)
    return out


# -- importing user code -------------------------------------------------------------------------


@contextmanager
def _importable_from(folder: Path) -> Iterator[None]:
    """``folder`` first on ``sys.path`` while importing (as Python does for a script's folder)."""
    entry = str(folder)
    added = entry not in sys.path
    if added:
        sys.path.insert(0, entry)
    try:
        yield
    finally:
        if added and entry in sys.path:
            sys.path.remove(entry)


def _own_module(module_name: str, folder: Path) -> None:
    """Make ``import module_name`` find ``folder``'s own module when ``folder`` has one (its
    ``<top>.py`` or ``<top>/__init__.py``) and a module of that name is already imported from
    another folder of user code: the earlier one (e.g. another config's ``guards.py`` in this
    process) is forgotten, with its submodules, so each config gets the code beside it. What
    was resolved from the earlier one is kept by whoever resolved it (a built runtime holds
    its functions). The standard library and installed packages are never forgotten."""
    top = module_name.partition(".")[0]
    loaded = sys.modules.get(top)
    origin = getattr(loaded, "__file__", None)
    if not origin:
        return
    own = next((p for p in (folder / f"{top}.py", folder / top / "__init__.py") if p.is_file()),
               None)
    if own is None or origin == str(own):  # the folder's own, as imported from it: no resolve
        return
    here = Path(origin).resolve()
    if here == own.resolve() or any(
            here.is_relative_to(root) for root in _installed_roots()):
        return
    for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
        del sys.modules[name]


@functools.cache
def _installed_roots() -> tuple[Path, ...]:
    """Where the standard library and installed packages live (never user code to forget)."""
    paths = sysconfig.get_paths()
    return tuple({Path(paths[k]).resolve() for k in ("stdlib", "platstdlib", "purelib", "platlib")})


def user_code(config: Config) -> Callable[[str], Any]:
    """What ``module:attr`` names, imported as the configuration's other user code is (the
    config file's folder first on ``sys.path``; its own module, not another config's of the
    same name): for parts resolved after the build, e.g. command handlers."""
    return lambda ref: _import(ref, ref, config.base_dir)


def _import(ref: str, where: str, folder: Path) -> Any:
    module_name, _, attr = ref.partition(":")
    with _importable_from(folder):
        try:
            _own_module(module_name, folder)
            if module_name not in sys.modules:  # a module written moments ago must be seen;
                importlib.invalidate_caches()  # one imported already (by the agent before) is
            module = importlib.import_module(module_name)  # not looked for again
        except Exception as exc:  # user code: any failure at import is a config problem
            raise ConfigError(
                f"{where}: cannot import module {module_name!r} ({type(exc).__name__}: {exc}); "
                f"it is looked up on sys.path and in {str(folder)!r}", code="CONFIG_IMPORT") from None
    target: Any = module
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ConfigError(f"{where}: module {module_name!r} has no attribute {attr!r}",
                              code="CONFIG_IMPORT") from None
    return target
