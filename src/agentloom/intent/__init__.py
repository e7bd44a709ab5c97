"""Intent recognition: understand a user's message as one validated action (003 F07, F08, A1).

Owns: intent specs (``IntentSpec``: rules, guards, expectations, typed slots, confirmation
policy, the ``action`` — a command id — it maps to), the frozen ``IntentRegistry``, the one slot
validator, the rule matcher, the generative fallback *port* (``Proposer``), pending intents per
conversation (``ConversationStore`` port + in-memory adapter) and the ``Recognizer``.

Does not own: commands, their risk or execution (``agentloom.command``); the model call behind
the fallback (``agentloom.agent.intent_model``); routing a message to a command or an agent run
(admission, in the command bus's callers). A pure library: it imports only the core.

::

    IntentRegistry (frozen specs) ──► Recognizer.recognize(text, conversation=…)
                                          │ rules ─► follow-up ─► Proposer (port)
                                          ▼
                                validate_slots (one validator, every path)
                                          ▼
                     Recognition: matched | clarify | no_match | cancelled
"""

from .conversation import ConversationKey, ConversationStore, InMemoryConversationStore, PendingIntent
from .followup import CANCEL_PHRASES
from .ports import Proposer
from .recognition import Decision, Recognition, Source, Thresholds
from .recognizer import Recognizer
from .registry import IntentRegistry
from .rules import NEGATIONS
from .slots import SlotProblem, SlotReport, validate_slots
from .spec import ExpectationSpec, GuardSpec, IntentSpec, RuleSpec, SlotSpec

__all__ = [
    "CANCEL_PHRASES",
    "NEGATIONS",
    "ConversationKey",
    "ConversationStore",
    "Decision",
    "ExpectationSpec",
    "GuardSpec",
    "InMemoryConversationStore",
    "IntentRegistry",
    "IntentSpec",
    "PendingIntent",
    "Proposer",
    "Recognition",
    "Recognizer",
    "RuleSpec",
    "SlotProblem",
    "SlotReport",
    "SlotSpec",
    "Source",
    "Thresholds",
    "validate_slots",
]
