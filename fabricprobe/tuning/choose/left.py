"""A rule's sizes given back to the library's default, and why: what `tune` lists as "left to the
default" on screen and in tuning.json, whichever step gave them back (the library runs that algorithm
there anyway: choose/library_choice.py; not seen to run, or not shown faster: measure/shown.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class LeftToDefault:
    """A rule's sizes given back to the default: the rule as chosen, the sizes, and why."""

    collective: str
    comm_size: int
    span: str  # the range as the tune-sweep chose it
    winner: str
    sizes: list[int]  # the measured sizes given back (all of the range's, or some)
    reasons: list[str]

    def line(self) -> str:
        return f"{self.collective} on {self.comm_size} ranks {self.span} {self.winner}: {'; '.join(self.reasons)}"

    def short(self) -> str:
        """The line with its first reason only (the screen's; tuning.json has them all)."""
        more = f" (+{len(self.reasons) - 1} in tuning.json)" if len(self.reasons) > 1 else ""
        return f"{self.collective} on {self.comm_size} ranks {self.span} {self.winner}: {self.reasons[0]}{more}"

    def as_dict(self) -> dict:
        return asdict(self) | {"line": self.line(), "short": self.short()}
