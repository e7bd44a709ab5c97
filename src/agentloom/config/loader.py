"""Reading a configuration: a YAML file (or parsed data) → a validated ``Config``.

``load_config`` reads the file; a YAML syntax error or a duplicate key is reported with
``file:line:column``. ``parse_config`` checks ``version`` first — keys mean what their format
version says, so nothing else is read from a file of another version — then validates the
whole configuration and reports every problem it finds in one ``ConfigError``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from agentloom.config._problems import Problem, config_error, shown, validation_problems
from agentloom.config.model import CONFIG_VERSION, MODEL_TAGS, Config
from agentloom.errors import ConfigError
from agentloom.yamlfile import load_yaml

__all__ = ["load_config", "parse_config"]

MINIMAL = "version: 1\nagents:\n  main:\n    model: {builtin: test}"


def load_config(path: str | Path) -> Config:
    """The configuration in the YAML file ``path``; relative paths in it are read from its folder.

    Raises:
        ConfigError: the file is missing (``CONFIG_NOT_FOUND``), unreadable, empty
            (``CONFIG_EMPTY``), not valid YAML (``CONFIG_SYNTAX``, with line and column), of
            another version (``CONFIG_VERSION``) or invalid (``CONFIG_INVALID``, every problem
            as ``key.path: problem``).
    """
    file = Path(path)
    source = str(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{source}: no such config file", code="CONFIG_NOT_FOUND") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{source}: not UTF-8 text", code="CONFIG_UNREADABLE") from None
    except OSError as exc:
        raise ConfigError(f"{source}: cannot be read ({exc.strerror})", code="CONFIG_UNREADABLE") from None
    data = _parse_yaml(text, source)
    if data is None:
        raise ConfigError(f"{source}: the file is empty; a minimal configuration is:\n{MINIMAL}",
                          code="CONFIG_EMPTY")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return parse_config(data, base_dir=file.absolute().parent, source=source,
                        source_path=file.absolute(), source_digest=digest)


def parse_config(data: Mapping[str, Any], *, base_dir: Path, source: str = "<config>",
                 source_path: Path | None = None, source_digest: str | None = None) -> Config:
    """Validate parsed configuration data; ``base_dir`` is where relative paths are read from.

    Raises:
        ConfigError: as for ``load_config``; ``source`` heads the message.
    """
    if not isinstance(data, Mapping):
        raise config_error(source, [Problem("(top level)", f"must be a mapping of keys such as version "
                                            f"and agents (got {shown(data)}); for example:\n{MINIMAL}")])
    if "version" not in data:
        raise config_error(source, [Problem("version", f"is missing; add `version: {CONFIG_VERSION}` "
                                            "as the first line")], code="CONFIG_VERSION")
    version = data["version"]
    if type(version) is not int or version != CONFIG_VERSION:
        raise config_error(source, [Problem(
            "version", f"this AgentLoom reads configuration version {CONFIG_VERSION} only (got "
            f"{shown(version)}); write the file in version {CONFIG_VERSION} (docs/config.md)")],
            code="CONFIG_VERSION")
    try:
        return Config.model_validate(dict(data), context={
            "base_dir": Path(base_dir), "source": source, "source_path": source_path,
            "source_digest": source_digest})
    except ValidationError as exc:
        raise config_error(source, validation_problems(exc, Config, MODEL_TAGS)) from None


# -- YAML ----------------------------------------------------------------------------------------


def _parse_yaml(text: str, source: str) -> Any:
    try:
        return load_yaml(text)  # refuses a key written twice
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
        problem = exc.problem or "invalid YAML"
        context = f" ({exc.context})" if exc.context else ""
        raise ConfigError(f"{where}: not valid YAML: {problem}{context}", code="CONFIG_SYNTAX") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}", code="CONFIG_SYNTAX") from None
