"""``agentloom run --stream``: the model's text and reasoning written as they arrive.

``DeltaPrinter`` takes the ``model.delta`` events of a run (``RunHandle.events(deltas=True)``)
and writes each piece at once: a block per call Attempt and kind, opened by a label
(``main: `` for text, ``main (reasoning): `` — dimmed on a terminal — for reasoning; a retried
Attempt says so), its text escaped by ``terminal.printable`` (newlines kept). Any other event
of the live view ends the open block with a newline first. Pieces a slow terminal missed are
marked ``[… N pieces dropped]``. What is recorded is the complete response, not these pieces.

Owns: writing the pieces. Does not own: the events (``agent.events``), the rest of the live
view (``cli.render``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console

from agentloom.cli.terminal import printable

__all__ = ["DeltaPrinter"]

_DIM, _RESET = "\x1b[2m", "\x1b[0m"


class DeltaPrinter:
    """Writes ``model.delta`` pieces to ``console``'s file as they come, flushed each time."""

    def __init__(self, console: Console) -> None:
        self._file = console.file
        self._styled = console.is_terminal and not console.no_color
        self._block: tuple[Any, Any, Any] | None = None
        self._open = False  # something written since the last newline

    def piece(self, data: Mapping[str, Any]) -> None:
        """Write one ``model.delta`` payload."""
        kind = data.get("kind")
        key = (data.get("operation_id"), data.get("attempt"), kind)
        out: list[str] = []
        if key != self._block:
            self.end()
            self._block = key
            label = printable(data.get("role") or "model")
            if kind == "reasoning":
                label += " (reasoning)"
            attempt = data.get("attempt")
            if isinstance(attempt, int) and attempt > 1:
                label += f" (attempt {attempt}, from the start)"
            out.append(f"{label}: ")
        dropped = data.get("dropped")
        if isinstance(dropped, int) and dropped > 0:
            out.append(f"[… {dropped} pieces dropped] ")
        text = printable(data.get("text") or "")
        out.append(f"{_DIM}{text}{_RESET}" if self._styled and kind == "reasoning" else text)
        written = "".join(out)
        self._file.write(written)
        self._file.flush()
        self._open = not written.endswith("\n")

    def end(self) -> None:
        """End the open block (before any other line of the live view)."""
        if self._block is not None and self._open:
            self._file.write("\n")
            self._file.flush()
        self._block, self._open = None, False
