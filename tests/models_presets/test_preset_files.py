"""Preset files: every shipped file loads and is versioned; a broken file is a clear error that
names the file and the key."""

from __future__ import annotations

import copy
import importlib.resources
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentloom.errors import ConfigError
from agentloom.models.presets import CAPABILITIES, list_presets, load_preset, load_preset_file, parse_preset
from agentloom.models.types import ModelRequest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "models.md"


def shipped(name: str) -> dict[str, Any]:
    text = (importlib.resources.files("agentloom.models.preset_data") / f"{name}.yaml").read_text("utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def write(tmp_path: Path, data: Any, name: str = "deepseek") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def test_the_shipped_presets_are_the_documented_providers_plus_responses() -> None:
    assert list_presets() == ("aliyun", "anthropic", "deepseek", "gemini", "glm", "lmstudio", "minimax",
                              "ollama", "openai", "openai-responses", "openrouter", "vllm")


@pytest.mark.parametrize("name", list_presets())
def test_every_shipped_preset_loads_with_a_version_and_a_default_endpoint(name: str) -> None:
    preset = load_preset(name)
    assert preset.name == name
    assert isinstance(preset.version, int) and preset.version >= 1
    assert shipped(name)["version"] == preset.version
    endpoint = preset.endpoint()
    if endpoint.api_key_env is None or endpoint.api_key_optional:  # local servers (issue 36 (6))
        assert endpoint.base_url.startswith("http://localhost:")
    else:
        assert endpoint.base_url.startswith("https://")
        assert endpoint.api_key_env.endswith("_API_KEY")
    assert len(preset.digest) == 64


@pytest.mark.parametrize(
    ("name", "variant", "url"),
    [
        ("glm", "default", "https://open.bigmodel.cn/api/paas/v4"),
        ("glm", "coding_plan", "https://open.bigmodel.cn/api/coding/paas/v4"),
        ("aliyun", "default", "https://dashscope.aliyuncs.com/compatible-mode/v1"),
        ("aliyun", "coding_plan", "https://coding.dashscope.aliyuncs.com/v1"),
        ("deepseek", "default", "https://api.deepseek.com"),
        ("minimax", "default", "https://api.minimax.io/v1"),
    ],
)
def test_normal_and_coding_plan_base_urls_are_separate_variants(name: str, variant: str, url: str) -> None:
    assert load_preset(name).endpoint(variant).base_url == url


def test_an_unknown_variant_names_the_ones_that_exist() -> None:
    with pytest.raises(ConfigError, match=r"no variant 'coding_plan'.*'default', 'mainland'"):
        load_preset("minimax").endpoint("coding_plan")


def test_an_unknown_preset_names_the_known_ones() -> None:
    with pytest.raises(
        ConfigError, match=r"unknown model preset 'claude'; known presets: aliyun, anthropic, deepseek"
    ):
        load_preset("claude")
    with pytest.raises(ConfigError, match="unknown model preset"):
        load_preset("../openai")


def test_a_copied_preset_file_loads_identically(tmp_path: Path) -> None:
    loaded = load_preset_file(write(tmp_path, shipped("deepseek")))
    assert loaded.capabilities == load_preset("deepseek").capabilities
    assert loaded.digest == load_preset("deepseek").digest


def test_the_digest_changes_with_the_data() -> None:
    data = shipped("glm")
    changed = copy.deepcopy(data)
    changed["request"]["body"]["clear_thinking"] = True
    assert parse_preset(data, source="a").digest != parse_preset(changed, source="b").digest


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = data
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if value is _DELETE:
            del node[last]
        else:
            node[last] = value

    return edit


_DELETE = object()

BROKEN = [
    ("missing section", _set("request", _DELETE), "'request'", "Field required"),
    ("unknown key", _set("think.budget", 3), "'think.budget'", "Extra inputs"),
    (
        "unknown capability",
        _set("capabilities", ["tools", "telepathy"]),
        "'capabilities[1]'",
        "Input should be",
    ),
    ("protocol", _set("protocol", "grpc"), "'protocol'", "'chat' or 'responses'"),
    ("format", _set("format", 2), "'format'", "Input should be 1"),
    ("version", _set("version", 0), "'version'", "greater than or equal to 1"),
    ("effort level", _set("think.effort.values", {"low": "low"}), "'think.effort.values'", "missing"),
    ("effort for capability", _set("think.effort", _DELETE), "'think.effort'", "think_effort"),
    ("toggle fragments", _set("think.disabled", {}), "'think'", "think_toggle"),
    ("reserved body key", _set("request.body", {"stream": False}), "'request.body'", "stream"),
    ("max tokens in think", _set("think.enabled", {"max_tokens": 1}), "'think.enabled'", "max_tokens"),
    ("stream usage", _set("request.stream_usage", "none"), "'request.stream_usage'", "stream_usage"),
    ("echo form", _set("history.reasoning_as", []), "'history.reasoning_as'", "at least one"),
    (
        "responses form",
        _set("history.reasoning_as", ["responses_items"]),
        "'history.reasoning_as'",
        "responses",
    ),
    ("finish reason", _set("stream.finish_reasons", {"x": "done"}), "'stream.finish_reasons'", "allowed"),
    (
        "base url",
        _set("variants.default.base_url", "api.deepseek.com"),
        "'variants.default.base_url'",
        "pattern",
    ),
    (
        "default variant",
        _set("variants", {"beta": {"base_url": "https://x", "api_key_env": "K"}}),
        "'variants'",
        "'default'",
    ),
    ("name", _set("name", "deepseek2"), "'name'", "file is named 'deepseek'"),
    (
        "override value",
        _set("models.0.history", {"reasoning_echo": "sometimes"}),
        "'models[0].history.reasoning_echo'",
        "Input should be",
    ),
    (
        "override capability",
        _set("models.0.capabilities", {"remove": ["reasoning"], "add": ["mind"]}),
        "'models[0].capabilities.add[0]'",
        "Input should be",
    ),
    (
        "override consistency",
        _set("models.0.capabilities", {"remove": ["stream_usage"]}),
        "'models[0].request.stream_usage'",
        "stream_usage",
    ),
]


@pytest.mark.parametrize(("edit", "key", "detail"), [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN])
def test_a_broken_preset_file_names_the_file_and_the_key(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], key: str, detail: str
) -> None:
    data = shipped("deepseek")
    edit(data)
    path = write(tmp_path, data)
    with pytest.raises(ConfigError) as caught:
        load_preset_file(path)
    message = str(caught.value)
    assert str(path) in message
    assert f"key {key}" in message
    assert detail in message
    assert caught.value.code == "MODEL_PRESET_INVALID"


def test_a_preset_file_that_is_not_yaml_is_a_config_error_naming_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "name: [unclosed\n")
    with pytest.raises(ConfigError, match=rf"preset file '{path}': not valid YAML"):
        load_preset_file(path)
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_preset_file(write(tmp_path, "- a\n- b\n", name="glm"))
    with pytest.raises(ConfigError, match="cannot be read"):
        load_preset_file(tmp_path / "absent.yaml")


def test_a_yaml_value_that_is_not_json_is_refused(tmp_path: Path) -> None:
    text = (importlib.resources.files("agentloom.models.preset_data") / "deepseek.yaml").read_text("utf-8")
    path = write(tmp_path, text + "released: 2026-11-01\n")
    with pytest.raises(ConfigError, match="not plain JSON"):
        load_preset_file(path)


def test_model_overrides_match_glob_patterns_case_insensitively() -> None:
    glm = load_preset("glm")
    assert "think_effort" in glm.for_model("GLM-5.2").capabilities
    assert "think_effort" in glm.for_model("glm-6-air").capabilities
    assert "think_effort" not in glm.for_model("glm-5.1").capabilities
    assert glm.for_model("glm-4.7") is glm
    assert glm.for_model("glm-5.3").notes["model"].startswith("reasoning_effort exists")


def test_docs_capability_table_matches_the_preset_data() -> None:
    rows = {}
    header: list[str] = []
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if cells[:2] == ["preset", "protocol"]:
            header = cells
        elif header and len(cells) == len(header) and cells[0] in list_presets():
            rows[cells[0]] = cells
        elif header and rows and not line.startswith("|"):
            break
    assert header[2:] == list(CAPABILITIES)
    assert set(rows) == set(list_presets())
    for name, cells in rows.items():
        preset = load_preset(name)
        assert cells[1] == preset.protocol
        documented = {cap for cap, cell in zip(CAPABILITIES, cells[2:], strict=True) if cell != "—"}
        assert documented == set(preset.capabilities), name


def test_a_loaded_preset_is_shared_and_read_only() -> None:
    preset = load_preset("glm")
    assert load_preset("glm") is preset
    with pytest.raises(TypeError):
        preset.request.body["clear_thinking"] = True
    with pytest.raises(TypeError):
        preset.variants["evil"] = preset.endpoint()  # type: ignore[index]
    body = preset.build_body(ModelRequest(messages=()), model="glm-4.7")
    body["clear_thinking"] = True  # the body is the caller's own copy
    assert preset.request.body["clear_thinking"] is False
