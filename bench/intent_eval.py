"""Offline intent evaluation (issue 21, acceptance 2; 003 A3).

Run from the repository root::

    python bench/intent_eval.py              # both sets, both modes, the tables
    python bench/intent_eval.py --set adversarial
    python bench/intent_eval.py --json       # JSON on stdout, the tables on stderr
    python bench/intent_eval.py --check      # exit status 1 when a target fails
    python bench/intent_eval.py --by-category

Two labelled sets over the intents of ``tests/data/intent_eval.yaml`` (which also marks each
action read / write / dangerous): **main**, ``tests/data/intent_eval.jsonl`` (plain requests,
slots, negation, quotes, several requests, paraphrases, follow-ups, stale confirmations), and
**adversarial** (issue 34), ``tests/data/intent_eval_adversarial.jsonl``: requests that are
negated (far from the verb, behind interjections and commas, taken back after), quoted, reported
(someone else's words), conditional or asked about, each with a model answer fooled into the
request, and positive controls that must still start. Each line is one conversation: its
``turns`` go through one ``Recognizer`` with a conversation store; ``expect`` labels what the
*last* turn should be recognised as; an optional ``confirm`` confirms the action of turn
``bound_to`` at that turn's revision after the last turn, and ``expect_confirm`` says whether
that confirmation must be accepted or refused (stale).

Two modes: **rules** (no fallback) and **rules + generative**, where a scripted proposer
answers with the line's ``proposal`` (what a model said for the last turn, wrong on purpose in
places: negated and quoted requests, bad slots, hallucinated intents, broken confidences).

Figures, per mode:

- *exact match*: the last turn's decision, intent, slots, missing and invalid slot names,
  candidates (each when labelled) — and the confirmation outcome — all as labelled;
- *false execution*: the last turn is ``matched`` (admission would start its action) although
  its label is not that action with those slots, or a confirmation is accepted that must be
  refused; reported for all actions and for ``dangerous`` ones (target: 0);
- *clarification rate*: last turns recognised ``clarify``;
- *cost per utterance*: model calls, estimated model tokens (prompt + answer characters / 4,
  the prompt built by ``agent.intent_model.intent_request``) and recognition time (all turns of
  the line; rules compiled once per mode, before the first line).

Targets (``--check``): 0 false executions of dangerous actions on the main set; 0 false
executions of any action on the adversarial set.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import math
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agentloom.agent.intent_model import intent_request
from agentloom.config.intents import IntentConfig
from agentloom.intent import (
    ConversationKey,
    InMemoryConversationStore,
    IntentRegistry,
    IntentSpec,
    Recognition,
    Recognizer,
)

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
SETS = {"main": "intent_eval.jsonl", "adversarial": "intent_eval_adversarial.jsonl"}
TARGET_DANGEROUS_FALSE_EXECUTIONS = 0
TARGET_ADVERSARIAL_FALSE_EXECUTIONS = 0


@dataclass
class EvalSet:
    registry: IntentRegistry
    risks: dict[str, str]
    today: dt.date
    lines: list[dict[str, Any]]
    _recognizers: dict[bool, tuple[Recognizer, ScriptedModel]] = field(default_factory=dict)

    def recognizer(self, *, generative: bool) -> tuple[Recognizer, ScriptedModel]:
        """One recognizer per mode (rules compiled once), each line in its own conversation;
        the scripted model answers with the current line's proposal."""
        if generative not in self._recognizers:
            model = ScriptedModel(None)
            self._recognizers[generative] = (Recognizer(
                self.registry, proposer=model if generative else None,
                conversations=InMemoryConversationStore(), today=lambda: self.today), model)
            self._recognizers[generative][0].recognize_rules("")  # compile the rules now
        return self._recognizers[generative]


def load(data: Path = DATA, *, which: str = "main") -> EvalSet:
    """The labelled set ``which`` (a key of ``SETS``) of the folder ``data``."""
    raw = yaml.safe_load((data / "intent_eval.yaml").read_text(encoding="utf-8"))
    registry = IntentRegistry.from_config(
        {k: IntentConfig.model_validate(v) for k, v in raw["intents"].items()})
    lines = [json.loads(line) for line in (data / SETS[which]).read_text(encoding="utf-8")
             .splitlines() if line.strip()]
    return EvalSet(registry, dict(raw["risks"]), dt.date.fromisoformat(raw["today"]), lines)


_NULL = {"intent": None, "slots": {}, "confidence": 0.9}


class ScriptedModel:
    """A ``Proposer`` answering every question with the current line's scripted ``proposal``."""

    def __init__(self, proposal: Mapping[str, Any] | None) -> None:
        self.proposal: Mapping[str, Any] = proposal or _NULL
        self.calls = 0
        self.chars = 0

    def script(self, proposal: Mapping[str, Any] | None) -> None:
        self.proposal, self.calls, self.chars = proposal or _NULL, 0, 0

    async def propose(self, text: str, intents: Sequence[IntentSpec]) -> Mapping[str, Any]:
        self.calls += 1
        prompt = intent_request(text, intents)
        self.chars += sum(len(m.content or "") for m in prompt.messages)
        self.chars += len(json.dumps(self.proposal))
        return dict(self.proposal)


@dataclass
class Outcome:
    line: dict[str, Any]
    result: Recognition
    exact: bool
    false_execution: bool
    dangerous_false_execution: bool
    calls: int
    chars: int
    seconds: float
    problems: list[str] = field(default_factory=list)


def _same_slots(got: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    if set(got) != set(want):
        return False
    for key, value in want.items():
        other = got[key]
        if isinstance(value, float) or isinstance(other, float):
            if not (isinstance(other, int | float) and not isinstance(other, bool)
                    and math.isclose(float(other), float(value))):
                return False
        elif other != value:
            return False
    return True


def _compare(result: Recognition, expect: Mapping[str, Any]) -> list[str]:
    problems = []
    if result.decision != expect["decision"]:
        problems.append(f"decision {result.decision} != {expect['decision']}")
    if "intent" in expect and expect["decision"] != "no_match" and result.intent != expect["intent"]:
        problems.append(f"intent {result.intent} != {expect['intent']}")
    if expect["decision"] in ("matched", "clarify") and "slots" in expect \
            and not _same_slots(result.slots, expect["slots"]):
        problems.append(f"slots {dict(result.slots)} != {expect['slots']}")
    if "missing" in expect and sorted(result.missing) != sorted(expect["missing"]):
        problems.append(f"missing {list(result.missing)} != {expect['missing']}")
    if "invalid" in expect and sorted(p.slot for p in result.invalid) != sorted(expect["invalid"]):
        problems.append(f"invalid {[p.slot for p in result.invalid]} != {expect['invalid']}")
    if "candidates" in expect and sorted(result.candidates) != sorted(expect["candidates"]):
        problems.append(f"candidates {list(result.candidates)} != {expect['candidates']}")
    return problems


async def run_line(ev: EvalSet, line: dict[str, Any], *, generative: bool) -> Outcome:
    recognizer, scripted = ev.recognizer(generative=generative)
    scripted.script(line.get("proposal"))
    model = scripted if generative else None
    key = ConversationKey("eval", "eval", f"{line['id']}/{time.monotonic_ns()}")
    results: list[Recognition] = []
    started = time.perf_counter()
    for text in line["turns"]:
        results.append(await recognizer.recognize(text, conversation=key))
    seconds = time.perf_counter() - started
    last, expect = results[-1], line["expect"]
    problems = _compare(last, expect)
    wanted = expect["decision"] == "matched" and last.intent == expect.get("intent") \
        and _same_slots(last.slots, expect.get("slots", {}))
    false_execution = last.decision == "matched" and not wanted
    dangerous = false_execution and ev.risks.get(last.action or "") == "dangerous"
    if "confirm" in line:
        bound = results[line["confirm"]["bound_to"]]
        accepted = bound.decision == "matched" and bound.revision is not None and \
            await recognizer.is_current(key, action=bound.action or "", revision=bound.revision)
        if accepted != (line["expect_confirm"] == "accepted"):
            problems.append(f"confirmation {'accepted' if accepted else 'refused'} != "
                            f"{line['expect_confirm']}")
        if accepted and line["expect_confirm"] == "refused":
            false_execution = True
            dangerous = dangerous or ev.risks.get(bound.action or "") == "dangerous"
    return Outcome(line, last, not problems, false_execution, dangerous,
                   model.calls if model else 0, model.chars if model else 0, seconds, problems)


async def evaluate(ev: EvalSet, *, generative: bool) -> dict[str, Any]:
    outcomes = [await run_line(ev, line, generative=generative) for line in ev.lines]
    n = len(outcomes)
    by_category: dict[str, list[int]] = {}
    for o in outcomes:
        counts = by_category.setdefault(o.line["category"], [0, 0])
        counts[0] += o.exact
        counts[1] += 1
    return {
        "mode": "rules + generative" if generative else "rules",
        "utterances": n,
        "exact_match": sum(o.exact for o in outcomes) / n,
        "false_execution_rate": sum(o.false_execution for o in outcomes) / n,
        "false_executions": sum(o.false_execution for o in outcomes),
        "dangerous_false_executions": sum(o.dangerous_false_execution for o in outcomes),
        "dangerous_false_execution_rate": sum(o.dangerous_false_execution for o in outcomes) / n,
        "clarification_rate": sum(o.result.decision == "clarify" for o in outcomes) / n,
        "model_calls_per_utterance": sum(o.calls for o in outcomes) / n,
        "est_tokens_per_utterance": sum(o.chars for o in outcomes) / 4 / n,
        "us_per_utterance": sum(o.seconds for o in outcomes) / n * 1e6,
        "by_category": {k: {"exact": v[0], "of": v[1]} for k, v in sorted(by_category.items())},
        "misses": [{"id": o.line["id"], "problems": o.problems} for o in outcomes if not o.exact],
    }


def table(reports: list[dict[str, Any]], *, by_category: bool) -> str:
    rows = [("", *(r["mode"] for r in reports))]
    for label, key, fmt in [
        ("utterances", "utterances", "{}"), ("exact match", "exact_match", "{:.1%}"),
        ("false execution rate", "false_execution_rate", "{:.1%}"),
        ("false executions (all)", "false_executions", "{}"),
        ("false executions (dangerous)", "dangerous_false_executions", "{}"),
        ("clarification rate", "clarification_rate", "{:.1%}"),
        ("model calls / utterance", "model_calls_per_utterance", "{:.2f}"),
        ("est. model tokens / utterance", "est_tokens_per_utterance", "{:.0f}"),
        ("recognition µs / utterance", "us_per_utterance", "{:.0f}"),
    ]:
        rows.append((label, *(fmt.format(r[key]) for r in reports)))
    if by_category:
        for category in reports[0]["by_category"]:
            rows.append((f"  exact: {category}", *(
                f"{r['by_category'][category]['exact']}/{r['by_category'][category]['of']}"
                for r in reports)))
    width = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(row, width, strict=True)) for row in rows)


def passes(which: str, reports: list[dict[str, Any]]) -> bool:
    """Whether a set's reports meet its target (see the module docstring)."""
    if which == "adversarial":
        return all(r["false_executions"] <= TARGET_ADVERSARIAL_FALSE_EXECUTIONS for r in reports)
    return all(r["dangerous_false_executions"] <= TARGET_DANGEROUS_FALSE_EXECUTIONS for r in reports)


_TARGETS = {"main": "0 false executions of dangerous actions",
            "adversarial": "0 false executions"}


async def main_async(args: argparse.Namespace) -> int:
    chosen = list(SETS) if args.set == "all" else [args.set]
    results: dict[str, dict[str, Any]] = {}
    texts = []
    for which in chosen:
        ev = load(Path(args.data), which=which)
        reports = [await evaluate(ev, generative=False), await evaluate(ev, generative=True)]
        ok = passes(which, reports)
        results[which] = {"reports": reports, "pass": ok}
        texts.append(f"== {which} set ({SETS[which]}) ==\n"
                     + table(reports, by_category=args.by_category)
                     + f"\ntarget: {_TARGETS[which]} — {'PASS' if ok else 'FAIL'}")
    ok = all(r["pass"] for r in results.values())
    text = "\n\n".join(texts)
    if args.json:
        print(json.dumps({"sets": results, "pass": ok}, indent=2))
        print(text, file=sys.stderr)
    else:
        print(text)
        if args.misses:
            for which, result in results.items():
                for r in result["reports"]:
                    for miss in r["misses"]:
                        print(f"[{which} / {r['mode']}] {miss['id']}: {'; '.join(miss['problems'])}")
    return 1 if args.check and not ok else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(DATA),
                        help="folder of intent_eval.yaml and the sets' .jsonl files")
    parser.add_argument("--set", choices=[*SETS, "all"], default="all",
                        help="which labelled set to run (default: all)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--by-category", action="store_true")
    parser.add_argument("--misses", action="store_true", help="list every line not matched exactly")
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
