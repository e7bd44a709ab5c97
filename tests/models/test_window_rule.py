"""One window / output-limit rule (#13 item 7): the agent loop's budget takes W and O from
``models.budget.resolve_descriptor``, the one place the rule lives."""

from __future__ import annotations

import pytest

from agentloom.agent.compaction import Budget
from agentloom.errors import ConfigError
from agentloom.models.budget import platform_output_reserve, resolve_descriptor


@pytest.mark.parametrize(("window", "output_limit"), [(32_000, None), (2_000, None), (2_000, 200), (7, None)])
def test_13_7_the_loop_budget_is_the_descriptor_of_the_configured_values(
    window: int, output_limit: int | None
) -> None:
    d = resolve_descriptor(None, configured_window=window, configured_output_limit=output_limit,
                           model=None)
    assert Budget.of(window, output_limit) == Budget(window, d.output_limit or 0)
    assert Budget.of(window).output_reserve == platform_output_reserve(window)


def test_13_7_an_output_limit_without_room_for_input_is_one_config_error() -> None:
    with pytest.raises(ConfigError, match=r"^agents\.<agent>\.model\.output_limit=2000 leaves no "
                       r"room for input in a window of 2000; set it below 2000$"):
        Budget.of(2_000, 2_000)
    with pytest.raises(ConfigError, match=r"^model 'm': agents\.<agent>\.model\.output_limit=2000"):
        resolve_descriptor(None, configured_window=2_000, configured_output_limit=2_000, model="m")
    with pytest.raises(ConfigError, match="must be a positive integer"):
        Budget.of(0)
