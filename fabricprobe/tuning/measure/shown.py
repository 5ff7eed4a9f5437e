"""What a site's file keeps after `tune --verify`: a rule stays at a message size only where the
library was seen to apply it (every check of its range verified: the rule's fingerprint, told apart
from the default's) and the before/after showed it faster there (the 95% interval of the speedup
above 1). Every other size goes back to the library's default, with its reason, so the file a site
loads changes only what was shown to win (docs/tuning.md, Decisive files)."""

from __future__ import annotations

from fabricprobe.report.units import ratio
from fabricprobe.sizes import format_size
from fabricprobe.tuning.choose.left import LeftToDefault
from fabricprobe.tuning.choose.rules import Range, Table, give_back
from fabricprobe.tuning.measure.before_after import MIN_REPS
from fabricprobe.tuning.plan.library import DEFAULT
from fabricprobe.tuning.verify.checks import VERIFIED, Check

FASTER = "faster"  # before_after.verdict_of's verdict when the 95% interval lies above 1


def _row_reason(row: dict | None, size: int) -> str | None:
    """Why the before/after did not show the rule faster at `size`, or None when it did."""
    if row is None:
        return f"not re-measured at {format_size(size)}"
    if row["verdict"] == FASTER:
        return None
    at = f"{row['verdict']} at {format_size(size)} ({ratio(row['speedup'])}×"
    if row["ci_low"] is not None:
        return f"{at}, 95% CI {ratio(row['ci_low'])}–{ratio(row['ci_high'])})"
    if row["reps"] < row["planned"]:  # decided early: no ratio the repetitions left could give changes it
        return f"{at}, settled after {row['reps']} of {row['planned']} repetitions)"
    return f"{at}; {row['reps']} repetitions give no 95% interval: {MIN_REPS} do)"


def _check_reasons(checks: list[Check], collective: str, comm_size: int, r: Range) -> dict[int, str] | None:
    """{size: why the library was not seen to apply the rule there} for the range's checked sizes that
    were not verified; None when no size of the range was checked."""
    mine = [c for c in checks if c.collective == collective and c.comm_size == comm_size and r.covers(c.size)]
    if not mine:
        return None
    return {c.size: f"{c.status} at {format_size(c.size)}" for c in mine if c.status != VERIFIED}


def decisive(table: Table, checks: list[Check], rows: list[dict]) -> list[LeftToDefault]:
    """Give back to the default, in `table`, every size of a rule not proven applied (`checks`) or not
    shown faster (`rows`: before_after.speedups); the ranges are rebuilt from the sizes kept. Returns
    what was given back, one entry per rule."""
    by_key = {(r["collective"], r["comm_size"], r["size"]): r for r in rows}
    left: list[LeftToDefault] = []
    for coll, sections in table.rules.items():
        for n, ranges in sections.items():
            kept, gone = _split_section(coll, n, ranges, checks, by_key)
            left += gone
            if gone:
                sections[n] = kept
    return left


def _split_section(coll, n, ranges: list[Range], checks, by_key) -> tuple[list[Range], list[LeftToDefault]]:
    """One communicator size's ranges with the sizes not shown given to the default, and what went. A
    size goes where its own check was not verified or its before/after row not faster; the rebuilt
    ranges' ends are verified again by the caller (a range's inner sizes are proven by its ends)."""
    gone: list[LeftToDefault] = []
    back: set[tuple[str, int]] = set()
    for r in ranges:
        if r.winner == DEFAULT:
            continue
        unapplied = _check_reasons(checks, coll, n, r)
        why: dict[int, str] = {}
        for d in r.decisions:
            reason = "no size of its range was checked" if unapplied is None else unapplied.get(d.size)
            reason = reason or _row_reason(by_key.get((coll, n, d.size)), d.size)
            if reason:
                why[d.size] = reason
        if not r.decisions:  # a range with nothing measured in it cannot have been shown faster
            gone.append(LeftToDefault(coll, n, r.span, r.winner, [], ["nothing measured in the range"]))
        elif why:
            reasons = list(dict.fromkeys(why.values()))  # once each, in size order
            gone.append(LeftToDefault(coll, n, r.span, r.winner, sorted(why), reasons))
        back |= {(r.span, size) for size in why}
    if not gone:
        return ranges, []
    # a kept decision joins its range's winner (the range is what the file says)
    return give_back(ranges, lambda r, d: (r.span, d.size) in back), gone


def kept_rules(table: Table, rows: list[dict] | None) -> list[str]:
    """One line per rule the files keep, with its speedup: the before/after's where it ran (`rows`),
    else the tune-sweep's (the least over the range's sizes)."""
    by_key = {(r["collective"], r["comm_size"], r["size"]): r for r in rows or []}
    out = []
    for coll, sections in table.rules.items():
        for n, ranges in sorted(sections.items()):
            for r in ranges:
                if r.winner == DEFAULT:
                    continue
                shown = [by_key[k] for d in r.decisions if (k := (coll, n, d.size)) in by_key]
                out.append(f"{coll} on {n} ranks {r.span} {r.winner}: {_speedup(r, shown)}")
    return out


def _speedup(r: Range, shown: list[dict]) -> str:
    if not shown:
        return f"{r.speedup:.2f}× in the tune-sweep (the least over its sizes)"
    if len(shown) == 1 and shown[0]["ci_low"] is not None:
        row = shown[0]
        return f"{ratio(row['speedup'])}× (95% CI {ratio(row['ci_low'])}–{ratio(row['ci_high'])})"
    speedups = sorted(row["speedup"] for row in shown)
    lows = [row["ci_low"] for row in shown if row["ci_low"] is not None]
    interval = f"; 95% CIs from {ratio(min(lows))}" if lows else ""
    return f"{ratio(speedups[0])}–{ratio(speedups[-1])}× at {len(shown)} sizes{interval}"
