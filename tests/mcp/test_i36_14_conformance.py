"""Issue #36 (14): the official MCP conformance suite (``@modelcontextprotocol/conformance``,
pinned with Node 22 in ``tests/mcp/conformance/install.py``) runs its client scenarios against
AgentLoom's client through the adapter ``tests/mcp/conformance/client.py`` (the CLI: ``mcp
login --no-browser`` with its printed URL followed, ``mcp list``, ``mcp call``), and the outcome
must be the expected-failures baseline exactly: a scenario outside it that fails, or one in it
that passes, fails the test (so the baseline stays true). Skipped with a one-line reason where
npm cannot install the suite — except under ``CI=true``, where that fails.

Also here: the ``oauth`` keys the suite's scenarios need (``client_metadata_url`` for client
ID metadata documents, ``client_secret`` for a client registered beforehand) refused with the
key and the fix when they are malformed. The step-up (``auth/scope-step-up``: a call answered
403 ``insufficient_scope``, then ``mcp login`` asking for the larger scope) and CIMD
(``auth/basic-cimd``) are checked by the suite's own scenarios.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conformance.run import (  # one copy of ``install`` (run.py imports it as a sibling)
    BASELINE,
    ConformanceUnavailable,
    Suite,
    install,
    load_baseline,
    run,
    scenarios,
)
from typer.testing import CliRunner

from agentloom.cli.main import app


@pytest.fixture(scope="module")
def suite() -> Suite:
    try:
        return install()
    except ConformanceUnavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the MCP conformance suite: {exc}")
        pytest.skip(f"MCP conformance suite unavailable: {exc}")


def test_i36_14_baseline_names_the_rule_for_each_scenario_it_lists(suite: Suite) -> None:
    baseline = load_baseline()
    known = scenarios(suite)
    assert baseline, "the baseline lists the scenarios AgentLoom refuses"
    assert set(baseline) <= set(known), f"not scenarios of the pinned suite: {set(baseline) - set(known)}"
    for name, reason in baseline.items():
        assert len(reason) > 40, f"{name}: the reason must name the rule behind the refusal"


def test_i36_14_conformance_client_scenarios_match_the_baseline(suite: Suite) -> None:
    report = run()
    figures = report.figures()
    detail = {o.scenario: o.failed for o in report.outcomes if not o.ok}
    assert not report.unexpected, f"failed outside the baseline ({BASELINE}): " + json.dumps(
        {name: detail[name] for name in report.unexpected}, indent=1)
    assert not report.stale, f"pass now, remove them from {BASELINE}: {report.stale}"
    assert figures["baseline_not_run"] == [], figures
    # the scenarios the issue names pass: the handshake, a call, sign-in and CIMD, the step-up
    passed = {o.scenario for o in report.outcomes if o.ok}
    assert {"initialize", "tools_call", "auth/basic-cimd", "auth/scope-step-up",
            "auth/scope-retry-limit", "auth/metadata-default", "auth/pre-registration"} <= passed, figures
    print(f"MCP conformance: {figures}")


def test_i36_14_a_baseline_entry_that_passes_and_a_failure_outside_it_are_both_reported(
        suite: Suite, tmp_path: Path) -> None:
    """The comparison itself, on a real scenario: ``initialize`` passes, so a baseline listing it
    is stale; a baseline without ``sse-retry`` makes its failure unexpected."""
    baseline = tmp_path / "baseline.yml"
    baseline.write_text("client: [initialize]\nreasons:\n  initialize: a stale entry for the "
                        "test, with a reason long enough\n", encoding="utf-8")
    report = run(["initialize", "sse-retry"], baseline=baseline)
    assert report.stale == ["initialize"] and report.unexpected == ["sse-retry"], report.figures()
    baseline.write_text("client: [initialize]\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no reason given for initialize"):
        load_baseline(baseline)


def _config(folder: Path, oauth: str) -> Path:
    config = folder / "agentloom.yaml"
    config.write_text(
        "version: 1\nagents:\n  main: {model: {builtin: test}}\nsandbox: {backend: none}\n"
        "mcp_servers:\n  docs: {transport: http, url: \"http://127.0.0.1:9/mcp\", "
        f"oauth: {oauth}}}\n", encoding="utf-8")
    return config


@pytest.mark.parametrize(("oauth", "says"), [
    ('{client_metadata_url: "http://example.com/client.json"}', "must be an https:// URL"),
    ('{client_metadata_url: "https://example.com/"}', "must be an https:// URL with a path"),
    ('{client_id: abc, client_metadata_url: "https://example.com/c.json"}', "give one of client_id"),
    ("{}", "give one of client_id"),
    ("{client_id: abc, client_secret: s3cret}", "must be a reference to an environment variable"),
    ('{client_metadata_url: "https://example.com/c.json", client_secret: "${S}"}',
     "client_secret is the secret of client_id: give client_id too"),
])
def test_i36_14_client_metadata_url_refused_naming_the_key_and_the_fix(
        tmp_path: Path, oauth: str, says: str) -> None:
    result = CliRunner().invoke(app, ["mcp", "list", str(_config(tmp_path, oauth)), "--json"])
    assert result.exit_code == 2, result.output
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "CONFIG_INVALID"
    assert "mcp_servers.docs.oauth" in error["message"] and says in error["message"], error
