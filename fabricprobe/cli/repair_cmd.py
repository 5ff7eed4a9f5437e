"""`fabricprobe repair FILE`: fold what a killed writer left, or salvage a damaged file (store.repair)."""

from __future__ import annotations

import argparse
from typing import Any

from fabricprobe.cli.parser import HelpFormatter
from fabricprobe.errors import EXIT_OK, EXIT_WRONG


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "repair",
        formatter_class=HelpFormatter,
        help="make a results file whole again, keeping every intact point",
        description="Fold the journal a killed sweep left beside FILE into it, or, when HDF5 cannot read\n"
        "FILE whole, copy every run, point and sample array that still reads (and the journal)\n"
        "into a new FILE, keeping the damaged one as FILE.damaged. Exit 0 when nothing was\n"
        "lost, 1 when some points or samples could not be read (listed).",
    )
    p.add_argument("file", help="results file (HDF5)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from fabricprobe.store.repair import repair

    report = repair(args.file)
    for offset, size in report.damaged_records:
        print(f"skipped a damaged journal record at byte {offset} ({size} bytes): its checksum or content fails")
    if report.torn_bytes:
        print(
            f"dropped an incomplete last journal record ({report.torn_bytes} bytes: a write cut short, never complete)"
        )
    if report.damaged:
        print(f"{args.file} was damaged and is rebuilt from what reads; the damaged file is {report.kept_as}")
    for what, items in (
        ("unreadable runs", report.lost_runs),
        ("points whose samples could not be read", report.lost_samples),
        ("unreadable point rows (run/row)", report.lost_rows),
        ("runs whose attributes failed their checksum (kept as read)", report.unchecked_runs),
    ):
        if items:
            print(f"{what}: {', '.join(items[:20])}" + (f" … ({len(items)})" if len(items) > 20 else ""))
    print(last_line(args.file, report))
    return EXIT_OK if report.lossless else EXIT_WRONG


def last_line(path: str, report: Any) -> str:
    """What repair kept and, when anything, what it could not: "intact" only when nothing was lost."""
    from fabricprobe.store.damage import point_spans

    kept = f"{report.runs} runs, {report.points} points ({report.journal_records} intact journal records)"
    if report.lossless and not report.damaged:
        return f"{path} is intact: {kept}"
    lost = []
    for run, indices in sorted(report.orphans.items()):
        lost.append(f"run {run}'s {len(indices)} point records (its start record is damaged: {point_spans(indices)})")
    if report.damaged_records:
        lost.append(f"{len(report.damaged_records)} damaged journal records (kept whole in {report.journal_kept_as})")
    if report.lost_runs:
        lost.append(f"{len(report.lost_runs)} unreadable runs")
    if report.lost_points:
        lost.append(f"{report.lost_points} unreadable point rows")
    if report.lost_samples:
        lost.append(f"the samples of {len(report.lost_samples)} points")
    if report.unchecked_runs:
        lost.append(f"the checked attributes of {len(report.unchecked_runs)} runs")
    line = f"{path} kept {kept}; " + (f"could not keep {'; '.join(lost)}" if lost else "nothing lost")
    if report.implausible:
        more = f" … ({len(report.implausible)})" if len(report.implausible) > 5 else ""
        line += f"; kept as they are, readers leave out: {', '.join(report.implausible[:5])}{more}"
    return line
