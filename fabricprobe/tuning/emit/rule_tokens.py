"""The token stream of Open MPI's count-prefixed rules files (coll/tuned's classic file and han's
dynamic file), read one token at a time by the strict readers of emit/openmpi.py and
emit/openmpi_han.py: a count that does not match what follows fails as Open MPI's reader would."""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T", int, str)


class Tokens(Generic[T]):
    def __init__(self, tokens: list[T], kind: str) -> None:
        self.tokens, self.kind, self.pos = tokens, kind, 0  # kind: "numbers" or "tokens", for the message

    def take(self) -> T:
        if self.pos >= len(self.tokens):
            raise ValueError("file ends early: a count does not match its rules")
        self.pos += 1
        return self.tokens[self.pos - 1]

    def done(self) -> None:
        """Every token was read; raises ValueError when some are left over."""
        if self.pos != len(self.tokens):
            raise ValueError(f"trailing {self.kind}: a count does not match its rules")
