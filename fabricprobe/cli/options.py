"""Parsing of list-valued options shared by the subcommands."""

from __future__ import annotations

import difflib
from typing import Iterable

from fabricprobe.errors import UsageError


def choice_list(text: str, choices: Iterable[str], what: str, groups: dict[str, Iterable[str]] | None = None) -> list[str]:
    """A comma-separated selection from `choices` (or named groups), order kept, duplicates dropped."""
    allowed = list(choices)
    groups = groups or {}
    out: list[str] = []
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise UsageError(f"empty {what} list")
    for item in items:
        expanded = list(groups[item]) if item in groups else [item]
        for name in expanded:
            if name not in allowed:
                near = difflib.get_close_matches(name, allowed + list(groups), n=1)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                raise UsageError(f"unknown {what} {name!r} (choose from {', '.join(allowed)}){hint}")
            if name not in out:
                out.append(name)
    return out
