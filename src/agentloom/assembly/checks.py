"""The build-time checks of a configuration that need the layers above the core.

``load_config`` checks what a configuration can tell from itself; ``check_config`` finds, before
any run starts, the problems only the provider presets or the script parser can see: an unknown
preset, a protocol or variant the preset lacks, a capability the configured model lacks on its
preset — tools, output format, think settings (000 §4.6) — a ``window`` / ``output_limit`` wider
than what the preset documents for the model (000 §4), a script file that does not parse. Every
problem is reported at once, each naming its key.

Owns: those checks. Does not own: the configuration's shape or the checks it can make alone
(``agentloom.config``); the runtime values built from it (``assembly.models``,
``assembly.tools``, ``assembly.hooks``).
"""

from __future__ import annotations

from agentloom.assembly.models import think_params
from agentloom.config import (
    AgentConfig,
    Config,
    ConnectionConfig,
    ConnectionModelChoice,
    Problem,
    ScriptModelChoice,
    config_error,
    did_you_mean,
    key_path,
)
from agentloom.errors import ConfigError
from agentloom.models.budget import resolve_descriptor
from agentloom.models.offline import load_script
from agentloom.models.presets import Preset, capabilities_for, list_presets, load_preset
from agentloom.models.types import STRUCTURED_FORMATS, ModelRequest, OutputFormat

__all__ = ["check_config", "preset_and_script_problems"]


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
