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
    if report.damaged_records:
        print(
            f"{len(report.damaged_records)} damaged journal records skipped, every intact one after them kept; "
            f"the journal is kept whole as {report.journal_kept_as}"
        )
    if report.torn_bytes:
        print(
            f"dropped an incomplete last journal record ({report.torn_bytes} bytes: a write cut short, never complete)"
        )
    if not report.damaged:
        print(
            f"{args.file} is intact: {report.runs} runs, {report.points} points "
            f"({report.journal_records} journal records folded)"
        )
        return EXIT_OK if report.lossless else EXIT_WRONG
    print(
        f"{args.file} was damaged and is rebuilt: {report.runs} runs, {report.points} points kept "
        f"({report.journal_records} from the journal); the damaged file is {report.kept_as}"
    )
    for what, items in (
        ("unreadable runs", report.lost_runs),
        ("points whose samples could not be read", report.lost_samples),
        ("unreadable point rows (run/row)", report.lost_rows),
    ):
        if items:
            print(f"{what}: {', '.join(items[:20])}" + (f" … ({len(items)})" if len(items) > 20 else ""))
    return EXIT_OK if report.lossless else EXIT_WRONG
