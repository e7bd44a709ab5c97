"""The generative intent fallback on a model: ``intent.Proposer`` through the gateway (003 F08).

``GatewayProposer.propose`` asks model connection ``model`` — one recorded model call through
the gateway with ``purpose="intent"``, so hooks that match ``purpose: intent`` apply — to pick
one of the intents and fill its slots, and reads its answer as the proposal
``{"intent", "slots", "confidence"}``. The answer is only parsed here, never trusted: the
recognizer resolves the intent back to one spec and validates slots and confidence itself.

Owns: the prompt, the JSON reading of the answer, the call's usage tally. Does not own:
recognition or validation (``agentloom.intent``), the model call (``models.gateway``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agentloom.intent import IntentSpec
from agentloom.models.gateway import CallerContext, ModelGateway
from agentloom.models.types import Message, ModelRequest, OutputFormat

__all__ = ["INTENT_INSTRUCTIONS", "INTENT_PURPOSE", "GatewayProposer", "intent_request",
           "read_proposal"]

INTENT_PURPOSE = "intent"
"""The ``purpose`` of the fallback's model calls (hook matchers see it)."""

INTENT_INSTRUCTIONS = (
    "You map a user's message to at most one of the intents listed below. Reply with ONE JSON "
    'object and nothing else: {"intent": "<intent id>" or null, "slots": {"<slot>": <value>}, '
    '"confidence": <number from 0 to 1>}. Use only the listed intent ids and slot names; leave '
    "out a slot the message does not give (never guess). Text in quotes is quoted, not asked "
    "for. A negated request (\"don't ...\") is not an intent: reply null. A message asking "
    'for several things: reply {"intent": null, "candidates": ["<id>", ...], "confidence": <n>}.'
)
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def _catalog(intents: Sequence[IntentSpec]) -> str:
    lines = []
    for spec in intents:
        lines.append(f"- {spec.id}: {spec.description or spec.action}")
        for name, slot in spec.slots.items():
            detail = f"one of {', '.join(slot.values)}" if slot.type == "enum" else slot.type
            if slot.type == "date":
                detail = "date YYYY-MM-DD"
            lines.append(f"    slot {name} ({detail}{', required' if slot.required else ''})")
        lines += [f"    e.g. {example!r}" for example in spec.examples[:3]]
    return "\n".join(lines)


def intent_request(text: str, intents: Sequence[IntentSpec], *,
                   output_format: OutputFormat = "text") -> ModelRequest:
    """The model request asking which of ``intents`` ``text`` is."""
    return ModelRequest(
        messages=(Message(role="system", content=f"{INTENT_INSTRUCTIONS}\n\nIntents:\n"
                                                 f"{_catalog(intents)}"),
                  Message(role="user", content=text)),
        output_format=output_format, purpose=INTENT_PURPOSE)


def read_proposal(answer: str) -> dict[str, Any]:
    """The proposal in a model's answer: its (first) JSON object; ``{"intent": None}`` when
    there is none. Values are passed on as given — validating them is the recognizer's job."""
    found = _OBJECT.search(answer)
    if found is None:
        return {"intent": None, "reason": "the answer holds no JSON object"}
    try:
        value = json.loads(found.group())
    except ValueError:
        return {"intent": None, "reason": "the answer's JSON does not parse"}
    if not isinstance(value, dict):
        return {"intent": None, "reason": "the answer is not a JSON object"}
    return value


class GatewayProposer:
    """``intent.Proposer`` asking model ``model`` through ``gateway`` in ``context`` (the
    caller's invocation context: the calls are recorded in its run). ``calls`` and
    ``tokens`` tally what it has spent."""

    def __init__(self, gateway: ModelGateway, context: CallerContext, *, model: str = "main",
                 output_format: OutputFormat = "text") -> None:
        self._gateway = gateway
        self._context = context
        self._model = model
        self._format = output_format
        self.calls = 0
        self.tokens = 0

    async def propose(self, text: str, intents: Sequence[IntentSpec]) -> Mapping[str, Any]:
        """Raises ``models.gateway.ModelCallFailed`` when the call fails (the recognizer turns
        that into ``no_match``)."""
        request = intent_request(text, intents, output_format=self._format)
        self.calls += 1
        response = await self._gateway.generate(request, self._context, model=self._model,
                                                purpose=INTENT_PURPOSE)
        usage = response.usage
        if usage is not None:
            self.tokens += usage.total_tokens or (usage.input_tokens or 0) + (usage.output_tokens or 0)
        return read_proposal(response.text)
