"""The shape a patched event must keep at each hook point, checked before the patch is used.

Before execution the payload must stay an object, and the capability's input schema (which
the pipeline holds) checks arguments and a model's messages. After execution the result must
stay what ``ToolResult.to_dict`` writes: ``check_result`` refuses anything else as
``HOOK_PATCH_INVALID``, naming the first wrong value, so a wrong type is dropped with the
hook's patches instead of reaching the code that reads the result. A model call's patched
payload must still fit the model's window where it adds fixed material (``check_window``,
000 §5.2.5).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentloom.hooks.patch import HOOK_PATCH_OVER_WINDOW, PatchInvalid
from agentloom.limits import CallWindow, fixed_tokens

_BLOCK_FIELDS = {"text": {"type", "text"}, "json": {"type", "data"},
                 "artifact_ref": {"type", "artifact"}}
_ARTIFACT_FIELDS = {"ref", "media_type", "size", "name"}


def _invalid(message: str) -> PatchInvalid:
    return PatchInvalid("HOOK_PATCH_INVALID", message)


def json_type(value: Any) -> str:
    """The JSON name of ``value``'s type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return f"a {type(value).__name__}"


def check_payload(payload: Any) -> None:
    """Raise ``HOOK_PATCH_INVALID`` unless a patched request payload is still an object."""
    if not isinstance(payload, Mapping):
        raise _invalid(f"/payload must stay an object, got {json_type(payload)}")


def check_window(before: Mapping[str, Any], after: Mapping[str, Any], window: CallWindow) -> None:
    """Raise ``HOOK_PATCH_OVER_WINDOW`` when a patched model payload ``after`` adds fixed
    material (what compaction never shortens: system and user messages, the latest turn, the
    tools) and that material alone no longer fits ``window``'s input limit. A patch that adds
    nothing fixed, or whose fixed material fits, passes: the rest is compaction's business."""
    needed = fixed_tokens(after.get("messages") or (), after.get("tools") or ())
    if needed <= window.input_limit:
        return
    if needed <= fixed_tokens(before.get("messages") or (), before.get("tools") or ()):
        return  # the patch added no fixed material: not this hook's doing
    raise PatchInvalid(
        HOOK_PATCH_OVER_WINDOW,
        f"the patched model request's fixed material (system and user messages, the latest "
        f"turn, the tools) needs about {needed} input tokens, more than the "
        f"{window.input_limit} the window leaves ({window.window} minus "
        f"{window.output_reserve} reserved for output); compaction cannot shorten it, so the "
        "patch is dropped")


def check_result(result: Any) -> None:
    """Raise ``HOOK_PATCH_INVALID`` unless a patched result still has the result's shape:
    ``content`` an array of content blocks, ``metadata`` an object, ``artifacts`` an array of
    artifact references (``status`` and ``error`` are protected, not checked here)."""
    if not isinstance(result, Mapping):
        raise _invalid(f"/result must stay an object, got {json_type(result)}")
    content = result.get("content")
    if content is not None:
        if not isinstance(content, list):
            raise _invalid("/result/content must be an array of content blocks, "
                           f"got {json_type(content)}")
        for i, block in enumerate(content):
            _check_block(block, f"/result/content/{i}")
    metadata = result.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise _invalid(f"/result/metadata must be an object, got {json_type(metadata)}")
    artifacts = result.get("artifacts")
    if artifacts is not None:
        if not isinstance(artifacts, list):
            raise _invalid("/result/artifacts must be an array of artifact references, "
                           f"got {json_type(artifacts)}")
        for i, artifact in enumerate(artifacts):
            _check_artifact(artifact, f"/result/artifacts/{i}")


def _check_block(block: Any, where: str) -> None:
    if not isinstance(block, Mapping):
        raise _invalid(f"{where} must be a content block object, got {json_type(block)}")
    kind = block.get("type")
    fields = _BLOCK_FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        raise _invalid(f"{where}/type must be one of {sorted(_BLOCK_FIELDS)}, got {kind!r}")
    missing, extra = fields - set(block), set(block) - fields
    if missing or extra:
        raise _invalid(f"{where}: a {kind} block has exactly the fields {sorted(fields)}")
    if kind == "text" and not isinstance(block["text"], str):
        raise _invalid(f"{where}/text must be a string, got {json_type(block['text'])}")
    if kind == "artifact_ref":
        _check_artifact(block["artifact"], f"{where}/artifact")


def _check_artifact(artifact: Any, where: str) -> None:
    if not isinstance(artifact, Mapping):
        raise _invalid(f"{where} must be an artifact reference object, got {json_type(artifact)}")
    extra = set(artifact) - _ARTIFACT_FIELDS
    if extra:
        raise _invalid(f"{where}: unexpected fields {sorted(extra)}")
    ref = artifact.get("ref")
    if not isinstance(ref, str) or not ref:
        raise _invalid(f"{where}/ref must be a non-empty string, got {json_type(ref)}")
    for name in ("media_type", "name"):
        value = artifact.get(name)
        if value is not None and not isinstance(value, str):
            raise _invalid(f"{where}/{name} must be a string, got {json_type(value)}")
    size = artifact.get("size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise _invalid(f"{where}/size must be a non-negative integer, got {size!r}")
