"""Configuration: the YAML file format (version 1), loaded and validated at load time.

``load_config(path)`` returns a frozen ``Config`` or raises one ``ConfigError`` naming every
bad key path and how to fix it (docs/config.md). ``build`` turns a ``Config`` into runtime
parts — model sources, hook specs, retry policies, SDK tools — without knowing the agent layer.

Owns: the configuration's shape, its cross-checks, reading it, building parts from it. Does
not own: running agents, the store, the compile step into a release.
"""

from agentloom.config.build import (
    agent_tools,
    hook_functions,
    hook_specs,
    model_source,
    retry_policy,
    sdk_tools,
)
from agentloom.config.loader import load_config, parse_config
from agentloom.config.model import (
    BUILTIN_TOOLS,
    CONFIG_VERSION,
    AgentConfig,
    Config,
    ConnectionConfig,
    ConnectionModelChoice,
    HandlerConfig,
    HookConfig,
    HookMatchConfig,
    LimitsConfig,
    ModelChoice,
    RetryConfig,
    SandboxBackendName,
    SandboxConfig,
    ScriptModelChoice,
    TestModelChoice,
    WorkspaceConfig,
)

__all__ = [
    "BUILTIN_TOOLS",
    "CONFIG_VERSION",
    "AgentConfig",
    "Config",
    "ConnectionConfig",
    "ConnectionModelChoice",
    "HandlerConfig",
    "HookConfig",
    "HookMatchConfig",
    "LimitsConfig",
    "ModelChoice",
    "RetryConfig",
    "SandboxBackendName",
    "SandboxConfig",
    "ScriptModelChoice",
    "TestModelChoice",
    "WorkspaceConfig",
    "agent_tools",
    "hook_functions",
    "hook_specs",
    "load_config",
    "model_source",
    "parse_config",
    "retry_policy",
    "sdk_tools",
]
