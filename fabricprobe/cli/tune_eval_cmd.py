"""`fabricprobe tune-eval EXHAUSTIVE [ECONOMICAL ...]`: how close tunings from budgeted tune-sweeps come
to the exhaustive one (tuning.evaluate)."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from fabricprobe.cli.parser import HelpFormatter
from fabricprobe.errors import EXIT_OK, UsageError
from fabricprobe.inputs import real_type


def add_parser(sub: Any) -> None:
    e = sub.add_parser(
        "tune-eval",
        formatter_class=HelpFormatter,
        help="regret of budgeted tune-sweeps' tunings against an exhaustive tune-sweep",
        description="At every point of the exhaustive tune-sweep's grid, the regret of a tuning is\n"
        "time(the algorithm it runs there) / time(the fastest there) - 1, both from the\n"
        "exhaustive file: mean, p95 and max with bootstrap 95% intervals, and what the\n"
        "budgeted sweep spent as fractions of the exhaustive's points, measurement time\n"
        "and wall time. --replay runs the budgeted search on the exhaustive file's own\n"
        "measurements at each budget (no MPI). Method: docs/tuning.md.",
    )
    e.add_argument("exhaustive", metavar="EXHAUSTIVE", help="results file of a tune-sweep without --budget")
    e.add_argument("economical", nargs="*", metavar="ECONOMICAL", help="results files of tune-sweep --budget")
    e.add_argument("--replay", metavar="LIST", help="budgets to replay on the exhaustive file, e.g. 0.1,0.25")
    e.add_argument("--collectives", metavar="LIST", help="judge these collectives only (default: all measured)")
    e.add_argument("--dtype", default="float32", help="datatype whose measurements decide")
    e.add_argument(
        "--min-gain",
        type=real_type("--min-gain", 0, 0.99),
        default=0.05,
        metavar="FRACTION",
        help="as fabricprobe tune's",
    )
    e.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    e.set_defaults(handler=run_eval)


def _budgets(text: str | None) -> list[float]:
    if not text:
        return []
    try:
        values = [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise UsageError(f"--replay {text!r}: expected fractions such as 0.1,0.25") from None
    if not values or any(not 0 < v <= 1 for v in values):
        raise UsageError(f"--replay {text!r}: budgets are fractions in (0, 1]")
    return values


def _ci(value: tuple[float, float, float]) -> str:
    v, lo, hi = value
    return f"{v:.1%} [{lo:.1%}, {hi:.1%}]"


def run_eval(args: argparse.Namespace) -> int:
    from rich.table import Table

    from fabricprobe.choices import choice_list
    from fabricprobe.console import make_console
    from fabricprobe.tuning.economy.evaluate import evaluate
    from fabricprobe.tuning.economy.replay import DENSE

    if args.json:
        from fabricprobe.store.outputs import check_file_output

        check_file_output(args.json, "--json")  # refused before any work
    if not 0 <= args.min_gain < 1:
        raise UsageError(f"--min-gain must be a fraction in [0, 1) (got {args.min_gain:g})")
    budgets = _budgets(args.replay)
    collectives = choice_list(args.collectives, DENSE, "collective") if args.collectives is not None else None
    rows = evaluate(args.exhaustive, args.economical, budgets, args.dtype, args.min_gain, collectives)
    t = Table(
        title=f"[bold]regret against[/] {args.exhaustive} (95% bootstrap intervals over its grid points)",
        title_justify="left",
        show_edge=False,
    )
    for col in ("tuned from", "points", "measurement", "wall", "mean regret", "p95 regret", "max regret"):
        t.add_column(col, justify="left" if col == "tuned from" else "right")
    for row in rows:
        t.add_row(
            row.source,
            f"{row.points:.0%}",
            f"{row.measurement:.0%}",
            "" if math.isnan(row.wall) else f"{row.wall:.0%}",
            _ci(row.regret["mean"]),
            _ci(row.regret["p95"]),
            _ci(row.regret["max"]),
        )
    make_console().print(t)
    if args.json:
        from fabricprobe.store.outputs import write_text

        write_text(args.json, json.dumps([r.as_dict() for r in rows], indent=1) + "\n", "--json")
    return EXIT_OK
