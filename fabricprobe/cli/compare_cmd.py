"""`fabricprobe compare A B`: matching points side by side, with a verdict per collective."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from fabricprobe.choices import choice_list
from fabricprobe.cli.parser import HelpFormatter
from fabricprobe.engine.config import GROUPS, KNOWN


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        formatter_class=HelpFormatter,
        help="compare two runs point by point",
        description="Match the points of two runs (files, runs in one file, or algorithms in one run)\n"
        "and show both medians, B's speedup over A, and whether they differ beyond the drift\n"
        "between launches (docs/reports.md): two algorithms of one launch, beyond both 95%\n"
        "intervals; launch groups (sweep --launches K, or FILE:* for every run of a file),\n"
        "Welch's t on the launch medians; a single launch on a side, beyond the drift floor\n"
        "two launches of one sweep show.\n\n"
        "  fabricprobe compare ethernet.h5 omnipath.h5\n"
        "  fabricprobe compare r.h5:1 r.h5:2\n"
        "  fabricprobe compare 'a.h5:*' 'b.h5:*'   # every run of each file, as launches\n"
        "  fabricprobe compare r.h5@library r.h5@ring   # library vs hand-written\n"
        "  fabricprobe compare t.h5@library:baseline t.h5@library:tuned\n\n"
        "A run made by sweep --launches K stands for its group: each point's median over the\n"
        "launches, held against the spread between them (--one-launch: the run alone).",
    )
    p.add_argument("a", metavar="A", help="FILE[:RUN][@ALGORITHM] (RUN: id, -1 for the last, * for every run)")
    p.add_argument("b", metavar="B", help="FILE[:RUN][@ALGORITHM]")
    p.add_argument("--collectives", metavar="LIST", help="only these collectives")
    p.add_argument(
        "--one-launch",
        action="store_true",
        help="a run of a launch group (sweep --launches) stands for itself, not for its group's median "
        "over launches and between-launch interval",
    )
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from fabricprobe.console import make_console
    from fabricprobe.report.bound import bound_of, fabric_of, withheld
    from fabricprobe.report.compare import compare, parse_side, verdicts
    from fabricprobe.report.export import json_safe
    from fabricprobe.report.labels import run_window, title
    from fabricprobe.report.units import gbps, usec
    from fabricprobe.sizes import format_size

    wanted = choice_list(args.collectives, KNOWN, "collective", GROUPS) if args.collectives is not None else None
    comp = compare(parse_side(args.a, args.one_launch), parse_side(args.b, args.one_launch), wanted)
    lines = verdicts(comp)
    fabrics = {"a": fabric_of(comp.a.run), "b": fabric_of(comp.b.run)}

    def of_bound(side: str, point: dict) -> float:
        """The point's % of its own run's bound (report/bound.py), NaN where it has none or beats it
        (`withheld_bound` says why)."""
        found = bound_of(point, fabrics[side])
        percent = found.percent_of(point["median_s"]) if found else math.nan
        return math.nan if withheld(percent) else percent

    def withheld_bound(side: str, point: dict) -> str:
        found = bound_of(point, fabrics[side])
        return withheld(found.percent_of(point["median_s"])) if found else ""

    if args.format == "json":
        doc = {
            "a": args.a,
            "b": args.b,
            "a_launches": max(len(comp.a.group), 1),  # several: each row's median over the launches
            "b_launches": max(len(comp.b.group), 1),
            "mismatches": comp.mismatches,
            "difference_rule": comp.rule_line(),
            "verdicts": lines,
            "only_a": len(comp.only_a),
            "only_b": len(comp.only_b),
            "rows": [
                dict(
                    **r.key,
                    a_median_s=r.a["median_s"],
                    b_median_s=r.b["median_s"],
                    b_speedup_over_a=r.speedup,
                    a_busbw_gbps=r.a["busbw_gbps"],
                    b_busbw_gbps=r.b["busbw_gbps"],
                    significant=r.significant,
                    a_percent_of_bound=of_bound("a", r.a),
                    b_percent_of_bound=of_bound("b", r.b),
                    a_bound_withheld=withheld_bound("a", r.a),
                    b_bound_withheld=withheld_bound("b", r.b),
                )
                for r in comp.rows
            ],
        }
        sys.stdout.write(json.dumps(json_safe(doc), indent=1) + "\n")
        return 0
    console = make_console()
    for side, name in ((comp.a, "A"), (comp.b, "B")):
        at = side.run.attrs
        console.print(
            f"[bold]{name}[/] = {side.label}: {at.get('mpi_vendor', '?')} {at.get('mpi_version', '')}, "
            f"{at.get('nranks', '?')} ranks on {at.get('topology', '?')}"
            + (f", {at['lab']}" if at.get("lab") else "")
            + (" [yellow](oversubscribed)[/]" if at.get("oversubscribed") else "")
        )
    for text in comp.mismatches:
        console.print(f"[yellow]mismatch:[/] {text}")
    console.print(f"different: {comp.rule_line()}", markup=False, highlight=False)
    groups: dict[tuple, list] = {}
    for r in comp.rows:
        groups.setdefault(tuple((k, v) for k, v in r.key.items() if k != "bytes"), []).append(r)
    for key, rows in groups.items():
        k = dict(key)
        timers = [p["timer"] for r in rows for p in (r.a, r.b)]
        heading = title(f"[bold]{k['collective']}[/]", k, timers, run_window(comp.a.run.config))
        t = Table(title=heading, title_justify="left", show_edge=False, pad_edge=False)
        columns = ("size", "A median µs", "B median µs", "B's speedup (A / B)", "A busbw", "B busbw")
        for col in (*columns, "A % bound", "B % bound", "different"):
            t.add_column(col, justify="right")
        for r in rows:
            colour = "" if not r.significant else ("green" if r.speedup > 1 else "red")
            ratio = f"[{colour}]{r.speedup:.2f}[/]" if colour else f"{r.speedup:.2f}"
            t.add_row(
                format_size(r.key["bytes"]),
                usec(r.a["median_s"]),
                usec(r.b["median_s"]),
                ratio,
                gbps(r.a["busbw_gbps"]),
                gbps(r.b["busbw_gbps"]),
                *(_pct(of_bound(side, p)) for side, p in (("a", r.a), ("b", r.b))),
                "yes" if r.significant else "no",
            )
        console.print(t)
        console.print()
    for coll, text in lines.items():
        console.print(f"[bold]{coll}[/]: {text}")
    if comp.only_a or comp.only_b:
        console.print(f"unmatched points: {len(comp.only_a)} only in A, {len(comp.only_b)} only in B")
    return 0


def _pct(value: float) -> str:
    """A % of bound as every report prints it (report/bound.py: never above 100%)."""
    from fabricprobe.report.bound import shown

    return shown(value) if math.isfinite(value) else "-"
