"""An agent's model settings as runtime values, at build time: what serves its model (a
connection, its API key read now, or an offline model), its window W and output limit O, its
think settings, its output-token cap and the retry policy of its calls.

Owns: turning ``agents.<agent>.model`` and ``.retry`` into runtime values. Does not own: the
checks against the presets (``assembly.checks``); the presets and connections themselves
(``agentloom.models``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from agentloom.config import (
    AgentConfig,
    Config,
    ConnectionModelChoice,
    ScriptModelChoice,
    TestModelChoice,
    key_path,
)
from agentloom.errors import ConfigError
from agentloom.models.budget import build_descriptor
from agentloom.models.connect import connection_for, key_rule
from agentloom.models.offline import ScriptModel, TestModel
from agentloom.models.ports import Connection, ModelAdapter
from agentloom.models.presets import load_preset
from agentloom.models.types import ModelDescriptor, ThinkParams
from agentloom.pipeline.retry import RetryPolicy

__all__ = ["max_output_tokens", "model_descriptor", "model_source", "retry_policy", "think_params"]


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
    rule = key_rule(load_preset(connection.preset).endpoint(variant), base_url=connection.base_url,
                    api_key_env=connection.api_key_env)
    variable = rule.variable
    env = os.environ if environ is None else environ
    if variable is not None and rule.required and not env.get(variable):
        where = key_path(("connections", name, "api_key_env"))
        why = "" if connection.api_key_env else f" (not set: preset {connection.preset!r} uses {variable})"
        raise ConfigError(
            f"{where}{why}: the environment variable {variable!r} is not set or is empty; export it "
            f"before running ({at} uses connection {name!r})", code="MODEL_API_KEY_MISSING")
    try:
        return connection_for(connection.preset, model=choice.name, variant=variant,
                              base_url=connection.base_url, api_key_env=connection.api_key_env, environ=env,
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


def retry_policy(agent: AgentConfig) -> RetryPolicy:
    """The agent's ``retry`` section as the pipeline's ``RetryPolicy``."""
    return RetryPolicy(enabled=agent.retry.enabled, max_attempts=agent.retry.max_attempts,
                       interval_s=agent.retry.interval_s)
