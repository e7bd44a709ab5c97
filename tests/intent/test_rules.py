"""Rules (issue 21): patterns and keywords with negation, quoted instructions, several
requests in one message, guards — and the ``intents:`` config shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloom.config.loader import load_config
from agentloom.errors import ConfigError
from agentloom.intent import IntentRegistry, IntentSpec, Recognizer, RuleSpec, SlotSpec

from .support import TODAY, registry


def _rec() -> Recognizer:
    return Recognizer(registry(), today=lambda: TODAY)


@pytest.mark.parametrize("text", [
    "don't cancel my order AB-1", "please do not cancel the order", "never move the meeting",
    "I won't book a room for 3",
])
async def test_i21_negated_requests_do_not_match(text: str) -> None:
    assert (await _rec().recognize(text)).decision == "no_match"


async def test_i34_4_a_negation_anywhere_in_the_message_starts_nothing() -> None:
    """Issue #34 (4) replaced issue 21's clause rule ("I don't need lunch, cancel order AB-1"
    matched): a negation anywhere in a message makes it no plain request — "never, ever move
    …" put a comma between the negation and the verb — so nothing starts; the user restates."""
    result = await _rec().recognize("I don't need lunch, cancel order AB-1")
    assert result.decision == "no_match" and result.reason and "negated" in result.reason
    plain = await _rec().recognize("cancel order AB-1")
    assert (plain.decision, plain.slots) == ("matched", {"order": "AB-1"})


@pytest.mark.parametrize("text", [
    'he wrote "cancel order AB-1" in the chat', "the ticket says 'move the meeting to friday'",
    "what does “cancel my order” mean?",
])
async def test_i21_quoted_instructions_are_not_requests(text: str) -> None:
    assert (await _rec().recognize(text)).decision == "no_match"


async def test_i21_several_requests_in_one_message_are_clarified_never_started() -> None:
    result = await _rec().recognize("move the meeting to friday and cancel order AB-1")
    assert result.decision == "clarify" and result.intent is None
    assert result.candidates == ("cancel_order", "move_meeting")


async def test_i21_keyword_rules_with_unless_words() -> None:
    reg = IntentRegistry()
    reg.register(IntentSpec(id="refund", action="billing.refund",
                            rules=(RuleSpec(keywords=("refund", "order"), unless=("status",)),)))
    rec = Recognizer(reg)
    assert (await rec.recognize("Order refund please")).intent == "refund"
    assert (await rec.recognize("what is the status of my order refund")).decision == "no_match"
    assert (await rec.recognize("refund")).decision == "no_match"


async def test_i21_the_longer_overlapping_hit_wins() -> None:
    reg = IntentRegistry()
    reg.register(IntentSpec(id="cancel_any", action="x.cancel", rules=(RuleSpec(pattern="cancel"),)))
    reg.register(IntentSpec(id="cancel_sub", action="sub.cancel",
                            rules=(RuleSpec(pattern="cancel (my )?subscription"),)))
    assert (await Recognizer(reg).recognize("cancel my subscription")).intent == "cancel_sub"


async def test_i21_registering_a_spec_later_is_seen_by_the_recognizer() -> None:
    reg = IntentRegistry()
    rec = Recognizer(reg)
    assert (await rec.recognize("ping")).decision == "no_match"
    reg.register(IntentSpec(id="ping", action="sys.ping", rules=(RuleSpec(pattern="^ping$"),)))
    assert (await rec.recognize("ping")).decision == "matched"


def test_i21_python_specs_are_held_to_the_config_rules() -> None:
    with pytest.raises(ConfigError, match="fill no declared slot"):
        IntentSpec(id="x", action="a.b", rules=(RuleSpec(pattern="(?P<day>\\w+)"),))
    with pytest.raises(ConfigError, match="needs `values`"):
        SlotSpec(name="d", type="enum")
    with pytest.raises(ConfigError, match="regular expression"):
        RuleSpec(pattern="(unclosed")
    reg = IntentRegistry()
    reg.register(IntentSpec(id="a", action="x.y", aliases=("b",)))
    with pytest.raises(ConfigError, match="already names"):
        reg.register(IntentSpec(id="b", action="x.z"))


BASE = ("version: 1\nagents:\n  main: {model: {builtin: test}}\ncommands:\n"
        "  meeting.move: {params: {type: object, properties: {day: {type: string}}, required: [day]},"
        " risk: write, handler: {kind: python, ref: 'my_commands:move'}}\n"
        "  a.b: {params: {type: object}, risk: read, handler: {kind: python, ref: 'my_commands:ab'}}\n")


def _load(tmp_path: Path, intents: str) -> ConfigError | None:
    path = tmp_path / "agentloom.yaml"
    path.write_text(BASE + "intents:\n" + intents, encoding="utf-8")
    try:
        load_config(path)
    except ConfigError as exc:
        return exc
    return None


def test_i21_the_issue_config_shape_loads(tmp_path: Path) -> None:
    path = tmp_path / "agentloom.yaml"
    path.write_text(BASE + """intents:
  move_meeting:
    description: Move a meeting to another day
    examples: ["move the meeting to friday"]
    rules: [{pattern: "move (the )?meeting( to (?P<day>\\\\w+))?"}]
    slots: {day: {type: enum, values: [monday, tuesday, wednesday, thursday, friday], required: true}}
    action: meeting.move
""", encoding="utf-8")
    config = load_config(path)
    reg = IntentRegistry.from_config(config.intents)
    assert reg.get("move_meeting").slots["day"].values[-1] == "friday"


@pytest.mark.parametrize(("entry", "message"), [
    ("  x: {action: a.b, rules: [{pattern: '(?P<day>x)'}]}\n", "fill no declared slot"),
    ("  x: {action: a.b, slots: {d: {type: enum}}}\n", "needs `values`"),
    ("  x: {action: a.b, slots: {d: {type: regex}}}\n", "needs `pattern`"),
    ("  x: {action: a.b, slots: {d: {type: colour}}}\n", "intents.x.slots.d.type"),
    ("  x: {action: a.b, rules: [{pattern: '('}]}\n", "not a valid regular expression"),
    ("  x: {action: a.b, rules: [{pattern: a, keywords: [b]}]}\n", "exactly one of"),
    ("  x: {action: a.b, expectations: [day]}\n", "not declared"),
    ("  x: {rules: [{pattern: a}]}\n", "intents.x.action"),
    ("  x: {action: a.b, slot: {}}\n", "unknown key 'slot'"),
    ("  '9 lives': {action: a.b}\n", "an intent id must start with a letter"),
])
def test_i21_a_bad_intent_fails_at_load_naming_its_key(tmp_path: Path, entry: str, message: str) -> None:
    error = _load(tmp_path, entry)
    assert error is not None and message in str(error), error


def _eval_specs() -> list[IntentSpec]:
    import yaml

    from agentloom.config.intents import IntentConfig

    data = Path(__file__).resolve().parents[1] / "data" / "intent_eval.yaml"
    raw = yaml.safe_load(data.read_text(encoding="utf-8"))
    return [IntentSpec.from_config(k, IntentConfig.model_validate(v)) for k, v in raw["intents"].items()]


def test_i21_3_the_prefilter_never_drops_a_rule_that_would_hit() -> None:
    import json

    from agentloom.intent.rules import RuleIndex

    specs = [*_eval_specs(), *registry().specs(),
             IntentSpec(id="odd", action="o.d", rules=(
                 RuleSpec(pattern="(?x) s e n d \\s+ (?P<a>\\d+)"), RuleSpec(pattern="stra(ss|ß)e"),
                 RuleSpec(pattern="\\bkilo\\b"), RuleSpec(pattern="x?ab+c"),
                 RuleSpec(keywords=("don't", "order"))), slots={"a": SlotSpec(name="a")}),
             ]
    data = Path(__file__).resolve().parents[1] / "data" / "intent_eval.jsonl"
    texts = [t for line in data.read_text(encoding="utf-8").splitlines()
             for t in json.loads(line)["turns"]]
    texts += [t.upper() for t in texts] + [t.replace("s", "ſ").replace("k", "\u212a") for t in texts]
    texts += ["ſend 5 to x", "ſ e n d 12", "\u212aILO", "KILO", "abbbc", "ac", "DON'T order", "Straße"]
    fast, slow = RuleIndex(specs), RuleIndex(specs, prefilter=False)
    for text in texts:
        assert fast.hits(text) == slow.hits(text), text


async def test_i21_a_refused_rule_hit_is_not_second_guessed_by_the_model() -> None:
    from .support import ScriptedProposer

    proposer = ScriptedProposer({"intent": "cancel_order", "slots": {"order": "AB-1"}, "confidence": 1.0})
    rec = Recognizer(registry(), proposer=proposer)
    for text in ("don't cancel order AB-1", 'she said "cancel order AB-1"',
                 "cancel order AB-1 in test mode"):
        assert (await rec.recognize(text)).decision == "no_match"
    assert proposer.asked == []
