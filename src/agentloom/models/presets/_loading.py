"""Reading preset files: the shipped ones by name, any file by path, parsed data; checks
across sections, and the ``models:`` overrides folded into one ``Preset`` view each.

Owns: ``list_presets``, ``load_preset`` (cached), ``load_preset_file``, ``parse_preset`` and
the ``MODEL_PRESET_INVALID`` messages (file and key named). Does not own: a section's own
fields (``_sections``) or what a preset does with a request (``_preset``).
"""

from __future__ import annotations

import copy
import hashlib
import importlib.resources
import re
from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn

import yaml
from pydantic import ValidationError

from agentloom.canonical import canonical_json
from agentloom.errors import ConfigError
from agentloom.models.presets._body import merge
from agentloom.models.presets._preset import Preset
from agentloom.models.presets._sections import NAME, RESERVED, PresetFile
from agentloom.yamlfile import load_yaml

__all__ = ["list_presets", "load_preset", "load_preset_file", "parse_preset"]

_PACKAGE = "agentloom.models.preset_data"
NAME_ENV = re.compile(r"^[A-Z][A-Z0-9_]*$")


def list_presets() -> tuple[str, ...]:
    """Names of the presets shipped in ``models/preset_data``, sorted."""
    root = importlib.resources.files(_PACKAGE)
    return tuple(sorted(p.name[: -len(".yaml")] for p in root.iterdir() if p.name.endswith(".yaml")))


@cache
def load_preset(name: str) -> Preset:
    """The shipped preset ``name``.

    Raises:
        ConfigError: no such preset (the message lists the known ones), or its file is broken.
    """
    if not NAME.match(name) or name not in list_presets():
        raise ConfigError(
            f"unknown model preset {name!r}; known presets: {', '.join(list_presets())}",
            code="MODEL_PRESET_UNKNOWN",
        )
    resource = importlib.resources.files(_PACKAGE) / f"{name}.yaml"
    return _parse_text(resource.read_text(encoding="utf-8"), source=f"preset_data/{name}.yaml", stem=name)


def load_preset_file(path: str | Path) -> Preset:
    """A preset from any YAML file (its ``name`` must equal the file's stem).

    Raises:
        ConfigError: the file is unreadable, not YAML, or fails validation (file and key named).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"preset file {str(p)!r}: cannot be read ({exc.strerror})") from None
    return _parse_text(text, source=str(p), stem=p.stem.removesuffix(".yaml"))


def _parse_text(text: str, *, source: str, stem: str | None) -> Preset:
    try:
        data = load_yaml(text)  # refuses a key written twice
    except yaml.YAMLError as exc:
        raise ConfigError(f"preset file {source!r}: not valid YAML: {exc}") from None
    return parse_preset(data, source=source, stem=stem)


def parse_preset(data: Any, *, source: str, stem: str | None = None) -> Preset:
    """Validate parsed preset data into a ``Preset`` (its model overrides included).

    Raises:
        ConfigError: the data is invalid; the message names ``source`` and the offending key.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"preset file {source!r}: must be a mapping, not {type(data).__name__}")
    try:
        digest = hashlib.sha256(
            canonical_json(data).encode()
        ).hexdigest()
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"preset file {source!r}: holds a value that is not plain JSON ({exc})") from None
    parsed = _validate(data, source=source, prefix="")
    if stem is not None and parsed.name != stem:
        _fail(source, "name", f"is {parsed.name!r} but the file is named {stem!r}")
    base_raw = {k: v for k, v in data.items() if k != "models"}
    overrides = []
    for i, override in enumerate(parsed.models):
        raw = copy.deepcopy(base_raw)
        caps = [c for c in parsed.capabilities if c not in override.capabilities.remove]
        raw["capabilities"] = caps + [c for c in override.capabilities.add if c not in caps]
        for section in ("think", "reasoning", "history", "request", "usage", "stream"):
            fragment = getattr(override, section)
            if fragment is not None:
                target = raw.setdefault(section, {})
                if not isinstance(target, dict):
                    _fail(source, section, "must be a mapping")
                merge(target, fragment)
        if override.notes:
            raw["notes"] = {**dict(raw.get("notes") or {}), "model": override.notes}
        view = _validate(raw, source=source, prefix=f"models[{i}].")
        if (override.window is not None and override.output_limit is not None
                and override.output_limit >= override.window):
            _fail(source, f"models[{i}].output_limit", f"must be less than window ({override.window})")
        overrides.append(replace(_build(view, source=source, digest=digest, matched=override.match),
                                 window=override.window, output_limit=override.output_limit))
    return replace(_build(parsed, source=source, digest=digest), overrides=tuple(overrides))


def _validate(data: Mapping[str, Any], *, source: str, prefix: str) -> PresetFile:
    try:
        parsed = PresetFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        _fail(source, prefix + _loc(first["loc"]), first["msg"])
    for problem in _semantic_problems(parsed):
        _fail(source, prefix + problem[0], problem[1])
    return parsed


def _semantic_problems(p: PresetFile) -> list[tuple[str, str]]:
    caps = set(p.capabilities)
    problems: list[tuple[str, str]] = []
    if "default" not in p.variants:
        problems.append(("variants", "must include a 'default' variant"))
    for variant, endpoint in p.variants.items():
        if endpoint.api_key_optional and endpoint.api_key_env is None:
            problems.append((f"variants.{variant}.api_key_optional",
                             "needs api_key_env (the variable read when it is set)"))
    for header, variable in p.request.headers_env.items():
        if not NAME_ENV.match(variable):
            problems.append((f"request.headers_env.{header}",
                             f"must name an environment variable such as APP_URL, not {variable!r}"))
    if "think_effort" in caps and p.think.effort is None:
        problems.append(("think.effort", "is required when capabilities include think_effort"))
    if "think_toggle" in caps and not (p.think.enabled and p.think.disabled):
        problems.append(("think", "needs both 'enabled' and 'disabled' fragments for think_toggle"))
    if ("stream_usage" in caps) == (p.request.stream_usage == "none"):
        problems.append(
            ("request.stream_usage", "must be 'none' exactly when stream_usage is not a capability")
        )
    if p.history.reasoning_echo != "never" and not p.history.reasoning_as:
        problems.append(("history.reasoning_as", "must name at least one form when reasoning is echoed"))
    responses_form = "responses_items" in p.history.reasoning_as
    if responses_form != (p.protocol == "responses") and p.history.reasoning_as:
        problems.append(
            ("history.reasoning_as", "responses_items is the form for, and only for, protocol responses")
        )
    if p.protocol == "responses" and p.reasoning.channels:
        problems.append(("reasoning.channels", "must be empty for protocol responses (typed events)"))
    reserved = RESERVED | {p.request.max_tokens_param}
    fragments = {
        "request.body": p.request.body,
        "request.body_with_tools": p.request.body_with_tools,
        "think.enabled": p.think.enabled,
        "think.disabled": p.think.disabled,
    }
    for where, fragment in fragments.items():
        clash = sorted(reserved & set(fragment))
        if clash:
            problems.append((where, f"may not set {clash}: the body builder owns them"))
    return problems


def _build(p: PresetFile, *, source: str, digest: str, matched: tuple[str, ...] = ()) -> Preset:
    return Preset(
        name=p.name,
        version=p.version,
        title=p.title,
        protocol=p.protocol,
        variants=MappingProxyType(dict(p.variants)),
        capabilities=frozenset(p.capabilities),
        think=p.think,
        reasoning=p.reasoning,
        history=p.history,
        request=p.request,
        usage=p.usage,
        stream=p.stream,
        errors=p.errors,
        notes=MappingProxyType(dict(p.notes)),
        discovery=p.discovery,
        source=source,
        digest=digest,
        matched=matched,
    )


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _fail(source: str, key: str, message: str) -> NoReturn:
    raise ConfigError(f"preset file {source!r}: key {key!r}: {message}", code="MODEL_PRESET_INVALID")
