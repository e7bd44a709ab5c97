"""Issue #36, point 14 (part): a config error never suggests the very key it refuses.

``allow_private`` written under an HTTP MCP server printed ``unknown key 'allow_private'; did
you mean 'allow_private'?``: the tag of the ``transport: http`` member of ``mcp_servers`` and
the tag of the ``kind: http`` hook handler were the same, so the error's key path was matched to
the hook handler's model. Now the error lists the server's own keys and says where the key does
belong; a near miss still gets its suggestion, and no suggestion is ever the refused word.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloom.config import did_you_mean, load_config
from agentloom.errors import ConfigError

HEAD = "version: 1\nagents:\n  main:\n    model: {builtin: test}\n"


def _refusal(tmp_path: Path, text: str) -> str:
    config = tmp_path / "agentloom.yaml"
    config.write_text(HEAD + text, encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(config)
    return str(raised.value)


def test_i36_14_a_key_of_another_model_is_not_suggested_as_itself_but_placed(
        tmp_path: Path) -> None:
    message = _refusal(tmp_path, "mcp_servers:\n  docs:\n    transport: http\n"
                                 "    url: http://127.0.0.1:9/mcp\n    allow_private: true\n")
    assert "did you mean 'allow_private'" not in message, message
    assert ("mcp_servers.docs.allow_private: unknown key 'allow_private'; allowed keys at "
            "mcp_servers.docs: headers, oauth, protocol, timeout_s, transport, url; "
            "'allow_private' is a key of agents.<name>.hooks[].handler (kind: http), not of "
            "mcp_servers.docs") in message, message


def test_i36_14_the_http_hook_handler_still_takes_allow_private_and_suggests_it_for_a_typo(
        tmp_path: Path) -> None:
    hook = ("    hooks:\n      - timing: before\n        match: {capability: exec}\n"
            "        handler: {kind: http, url: 'http://127.0.0.1:9/hook', %s: true}\n")
    config = tmp_path / "ok" / "agentloom.yaml"
    config.parent.mkdir()
    config.write_text(HEAD + hook % "allow_private", encoding="utf-8")
    (entry,) = load_config(config).agents["main"].hooks
    assert entry.handler.allow_private is True  # type: ignore[union-attr]

    message = _refusal(tmp_path, hook % "allow_privat")
    assert "unknown key 'allow_privat'; did you mean 'allow_private'?" in message, message
    assert "agents.main.hooks[0].handler.allow_privat" in message, message


def test_i36_14_did_you_mean_never_offers_the_word_it_was_given() -> None:
    assert did_you_mean("allow_private", ["allow_private"]) == ""
    assert did_you_mean("allow_private", ["allow_private", "allow_privates"]) == \
        "did you mean 'allow_privates'? "
    assert did_you_mean("egres", ["egress"]) == "did you mean 'egress'? "
