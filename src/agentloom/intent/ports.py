"""The generative fallback port: a model proposes an intent and slots (003 F08).

The adapter that asks a model through the gateway with ``purpose=intent`` is
``agentloom.agent.intent_model.GatewayProposer``; tests use a scripted proposer or the scripted
OpenAI server. A proposal is only a proposal: the recognizer resolves its ``intent`` back to
exactly one spec and validates its slots and confidence like any rule hit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .spec import IntentSpec

__all__ = ["Proposer"]


class Proposer(Protocol):
    """Proposes ``{"intent": ID | None, "slots": {...}, "confidence": 0..1}`` for a message;
    ``"candidates": [ID, ...]`` (with ``intent: None``) says it asks for several things."""

    async def propose(self, text: str, intents: Sequence[IntentSpec]) -> Mapping[str, Any]:
        """A proposal for ``text`` among ``intents``; ``intent: None`` when none fits."""
        ...
