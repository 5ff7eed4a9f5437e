"""List-valued options: parsing a comma-separated selection (the command line) and checking names against
what exists (the command line and stored configurations alike), with a "did you mean" hint."""

from __future__ import annotations

from typing import Iterable

from fabricprobe.errors import UsageError


def list_items(text: str, what: str) -> list[str]:
    """The items of a comma-separated option, stripped; an empty list or an empty item ("8,,16") is an
    error rather than something silently dropped."""
    items = [t.strip() for t in text.split(",")]
    if not any(items):
        raise UsageError(f"empty {what} list")
    if not all(items):
        raise UsageError(f"invalid {what} list {text!r}: an item is empty")
    return items


def choice_list(
    text: str, choices: Iterable[str], what: str, groups: dict[str, Iterable[str]] | None = None
) -> list[str]:
    """A comma-separated selection from `choices` (or named groups), order kept, duplicates dropped."""
    allowed = list(choices)
    groups = groups or {}
    out: list[str] = []
    for item in list_items(text, what):
        for name in list(groups[item]) if item in groups else [item]:
            check_choices([name], allowed, what, groups)
            if name not in out:
                out.append(name)
    return out


def check_choices(
    values: Iterable[str], choices: Iterable[str], what: str, groups: dict[str, Iterable[str]] | None = None
) -> None:
    """Raise UsageError naming the first value that is not one of `choices`."""
    allowed = list(choices)
    for name in values:
        if name not in allowed:
            import difflib  # for the error's hint only

            near = difflib.get_close_matches(name, allowed + list(groups or {}), n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise UsageError(f"unknown {what} {name!r} (choose from {', '.join(allowed)}){hint}")
