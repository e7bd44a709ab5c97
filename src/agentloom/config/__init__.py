"""Configuration: the YAML file format (version 1), loaded and validated at load time.

``load_config(path)`` returns a frozen ``Config`` or raises one ``ConfigError`` naming every
bad key path and how to fix it (docs/config.md). ``Problem`` and ``config_error`` are that
error format, for the checks made later.

Owns: the configuration's shape, the checks it can make alone, reading it. Config is core: it
imports nothing above it. Does not own: the checks that need provider presets or the script
parser, and turning a configuration into runtime parts — both at build time, in
``agentloom.assembly``; running agents; the store; the compile step into a release.
"""

from agentloom.config._problems import Problem, config_error, did_you_mean, key_path
from agentloom.config.agents import AUTO_TOOLS
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
    default_hook_id,
)

__all__ = [
    "AUTO_TOOLS",
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
    "Problem",
    "RetryConfig",
    "SandboxBackendName",
    "SandboxConfig",
    "ScriptModelChoice",
    "TestModelChoice",
    "WorkspaceConfig",
    "config_error",
    "default_hook_id",
    "did_you_mean",
    "key_path",
    "load_config",
    "parse_config",
]
