"""The hook-kind tests' harness: the pipeline tests' ``Harness`` (a kernel on a real store and a
counting tool), calling ``demo_echo`` with a text and reading a call's hook rows by hook id."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.pipeline.support import Harness


@dataclass
class HookSetup(Harness):
    async def call(self, text: str = "hi", **kw: Any) -> Any:  # type: ignore[override]
        return await super().call({"text": text}, **kw)

    def rows(self, operation_id: str) -> dict[str, dict[str, Any]]:
        return {r["hook_id"]: r for r in self.hook_rows(operation_id)}
