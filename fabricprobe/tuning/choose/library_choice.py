"""No rule for the algorithm the library runs anyway: where a rule's winner is what the library's own
decision picks at that communicator and message size (Open MPI's fixed decision, MPICH's selection
tree: Library.default_choice), the rule changes nothing the site runs, whatever the tune-sweep timed
(two launches of one code path differ only by noise and drift). Those sizes go back to the default
before any file is written, with or without --verify (docs/tuning.md, Decisive files)."""

from __future__ import annotations

from typing import Callable

from fabricprobe.sizes import format_size
from fabricprobe.tuning.choose.left import LeftToDefault
from fabricprobe.tuning.choose.rules import Range, Table, give_back
from fabricprobe.tuning.plan.library import DEFAULT

# (collective, communicator size, message size) -> the algorithm the library runs there, or None
Choice = Callable[[str, int, int], str | None]


def leave_library_choice(table: Table, choice: Choice, decided_by: str) -> list[LeftToDefault]:
    """Give back to the default, in `table`, every size whose rule names the algorithm `choice` says the
    library runs there anyway; the ranges are rebuilt. Sections another component served (Open MPI's
    han) are left alone: the library's decision there is not the one `choice` knows."""
    left: list[LeftToDefault] = []
    for coll, sections in table.rules.items():
        for n, ranges in sections.items():
            if n in table.served_elsewhere.get(coll, {}):
                continue
            rebuilt, gone = _section(coll, n, ranges, choice, decided_by)
            if gone:
                sections[n] = rebuilt
                left += gone
    return left


def _section(coll, n, ranges: list[Range], choice: Choice, decided_by) -> tuple[list[Range], list[LeftToDefault]]:
    gone: list[LeftToDefault] = []
    for r in ranges:
        same = [d.size for d in r.decisions if r.winner != DEFAULT and choice(coll, n, d.size) == r.winner]
        if same:
            reason = f"{decided_by} runs {r.winner} {_where(same, len(r.decisions))} anyway"
            gone.append(LeftToDefault(coll, n, r.span, r.winner, same, [reason]))
    if not gone:
        return ranges, []
    back = {(g.span, size) for g in gone for size in g.sizes}
    return give_back(ranges, lambda r, d: (r.span, d.size) in back), gone


def _where(sizes: list[int], measured: int) -> str:
    if len(sizes) == measured:
        return "there"
    shown = ", ".join(format_size(s) for s in sizes[:3])
    return f"at {shown}" + (f" and {len(sizes) - 3} more sizes" if len(sizes) > 3 else "")
