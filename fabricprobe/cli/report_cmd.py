"""`fabricprobe report FILE`: tables per run and collective, or JSON / CSV / OMB-style exports."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from fabricprobe.choices import choice_list
from fabricprobe.cli.parser import HelpFormatter
from fabricprobe.engine.config import GROUPS, KNOWN
from fabricprobe.errors import UsageError
from fabricprobe.inputs import path_type, real_type

FORMATS = ("table", "json", "csv", "osu", "nccl-tests", "reframe-references")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        formatter_class=HelpFormatter,
        help="show or export the results in a file",
        description="Print every run in a results file as tables (one per collective series), or\n"
        "export it. JSON: {runs: [{provenance, config, points: [...]}]}; CSV: one row per\n"
        "point; osu: OMB's text, line for line; nccl-tests: the JSON nccl-tests -J writes, one\n"
        "document per case (-o F.json: F.json for one, F.0.json, F.1.json, ... for several;\n"
        "stdout: one document per line); reframe-references: the last run's medians as the references\n"
        "of fabricprobe's ReFrame checks (docs/reframe.md). Fields: docs/schema.md.",
    )
    p.add_argument(
        "file", metavar="FILE", help="results file written by fabricprobe sweep, or the tuning.json tune wrote"
    )
    p.add_argument("--run", metavar="ID", help="only this run (id, or -1 for the last)")
    p.add_argument(
        "--format", choices=FORMATS, default="table", metavar="FORMAT", help=f"output format: {', '.join(FORMATS)}"
    )
    p.add_argument("--collectives", metavar="LIST", help="only these collectives (comma-separated)")
    p.add_argument(
        "--summary",
        action="store_true",
        help="per collective: latency, peak busbw, n½, the winning algorithm per size range and the "
        "crossover sizes (table or json); of the last run unless --run or --all-runs says otherwise",
    )
    p.add_argument("--all-runs", action="store_true", help="with --summary: every run in the file, not the last")
    p.add_argument(
        "--tolerance",
        type=real_type("--tolerance", 0, 99),
        default=None,
        metavar="FRACTION",
        help="reframe-references: the least upper threshold (the run's own interval of the median when\n"
        "wider); a check fails above median × (1 + threshold) (default: 0.1)",
    )
    p.add_argument(
        "-o", "--output", type=path_type(), metavar="FILE", help="write the export to FILE instead of stdout"
    )
    p.set_defaults(handler=run)


def _write_atomically(path: str, text: str) -> None:
    """Exports are written whole or not at all, under the one output-path rule (store.outputs)."""
    from fabricprobe.store.outputs import write_text

    write_text(path, text, "export")


def _doctor(args: argparse.Namespace) -> int:
    """A doctor record: its report again (the table is the only form a doctor run has)."""
    from fabricprobe.console import make_console
    from fabricprobe.doctor import record
    from fabricprobe.doctor.render import render

    if args.format != "table" or args.summary or args.all_runs or args.collectives or args.output:
        raise UsageError(f"{args.file} is a doctor record: only its table report exists (fabricprobe report FILE)")
    _, m, meta = record.load(args.file, args.run)
    render(make_console(), m, meta["diagnosis"], meta["provenance"])
    return 0


def _tuning(args: argparse.Namespace) -> int:
    """tune's tuning.json: its tables (the only form it has here; the file itself is the JSON)."""
    from fabricprobe.console import make_console
    from fabricprobe.report.tuning import load_manifest, render_tuning

    if args.format != "table" or args.summary or args.all_runs or args.collectives or args.output or args.run:
        raise UsageError(f"{args.file} is tune's tuning.json: only its tables are shown (fabricprobe report FILE)")
    render_tuning(load_manifest(args.file), make_console())
    return 0


TOLERANCE = 0.1  # reframe-references' least upper threshold


def run(args: argparse.Namespace) -> int:
    from fabricprobe.doctor.record import is_doctor_file
    from fabricprobe.report import export
    from fabricprobe.report.tuning import is_tuning_manifest
    from fabricprobe.store import load_runs, no_runs, select_run

    if args.tolerance is not None and args.format != "reframe-references":  # it was ignored in silence
        raise UsageError("--tolerance is the thresholds of --format reframe-references")
    if is_doctor_file(args.file):
        return _doctor(args)
    if is_tuning_manifest(args.file):
        return _tuning(args)
    if args.output and args.format not in ("table", "nccl-tests"):  # nccl-tests: each of its files, below
        from fabricprobe.store.outputs import check_file_output

        check_file_output(args.output, "export")  # refused before any work

    runs = every = load_runs(args.file)  # every run: a launch group's table needs its other launches
    if args.run is not None:
        runs = [select_run(runs, args.run, args.file)]
    elif not runs:
        raise no_runs(args.file)
    colls = choice_list(args.collectives, KNOWN, "collective", GROUPS) if args.collectives is not None else None
    if args.all_runs and (not args.summary or args.run is not None):  # it would be ignored in silence
        raise UsageError("--all-runs is for --summary without --run (the tables show every run already)")
    if args.summary:
        earlier = len(runs) - 1 if args.run is None and not args.all_runs else 0
        return _summary(args, runs[earlier:], colls, earlier)
    if args.format == "table":
        from fabricprobe.console import make_console
        from fabricprobe.report.launches import groups, render_launches
        from fabricprobe.report.tables import render_run

        if args.output:
            raise UsageError("-o/--output is for exports; choose --format json, csv or osu")
        console = make_console()
        for run in runs:
            render_run(run, console, colls)
        shown = {r.id for r in runs}
        for group in groups(every):  # a group any shown run belongs to, compared launch with launch
            if shown & {r.id for r in group}:
                render_launches(group, console)
        return 0
    if args.format == "nccl-tests":
        return _nccl_tests(args, runs, colls)
    if args.format == "reframe-references":
        from fabricprobe.report.reframe import to_references

        text = to_references(runs, TOLERANCE if args.tolerance is None else args.tolerance)
    else:
        text = {"json": export.to_json, "csv": export.to_csv, "osu": export.to_osu}[args.format](runs, colls)
    if args.output:
        _write_atomically(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def _nccl_tests(args: argparse.Namespace, runs: list, colls: list[str] | None) -> int:
    import json

    from fabricprobe.report.nccl_tests import nan_free, to_nccl_tests

    docs = [nan_free(d) for d in to_nccl_tests(runs, colls)]
    if not docs:
        raise UsageError(
            "nothing to export in nccl-tests' format: it has programs for allreduce, reduce, bcast, "
            "allgather, reduce_scatter and alltoall only"
        )
    if not args.output:
        sys.stdout.write("".join(json.dumps(d) + "\n" for d in docs))
        return 0
    stem, suffix = os.path.splitext(args.output)
    paths = [args.output] if len(docs) == 1 else [f"{stem}.{i}{suffix}" for i in range(len(docs))]
    from fabricprobe.store.outputs import check_file_output

    for path in paths:  # all refused or all written
        check_file_output(path, "export")
    for path, doc in zip(paths, docs):
        _write_atomically(path, json.dumps(doc, indent=1) + "\n")
    if len(paths) > 1:
        print(f"{len(paths)} nccl-tests documents: {paths[0]} … {paths[-1]}", file=sys.stderr)
    return 0


def _summary(args: argparse.Namespace, runs: list, colls: list[str] | None, earlier: int) -> int:
    """The summary of `runs` (the last one unless asked for more; `earlier`: the runs before it left out)."""
    if args.format not in ("table", "json"):
        raise UsageError("--summary is shown as a table or exported as json")
    if args.format == "json":
        import json

        from fabricprobe.report.bound import beyond, furthest
        from fabricprobe.report.export import json_safe
        from fabricprobe.report.summary import summarize
        from fabricprobe.store.schema import identity

        doc = {
            "runs": [
                {
                    "id": r.id,
                    "mpi_vendor": r.attrs.get("mpi_vendor"),
                    "nranks": r.attrs.get("nranks"),
                    "cases": [
                        s.as_dict()
                        for s in summarize([p for p in r.points if colls is None or p["collective"] in colls])
                    ],
                    "furthest_from_bound": [
                        {**identity(p)._asdict(), "median_s": p["median_s"], "percent_of_bound": pct}
                        for p, pct in furthest(r, colls)
                    ],
                    "faster_than_bound": [
                        {**identity(p)._asdict(), "median_s": p["median_s"], "percent_of_bound": pct}
                        for p, pct in beyond(r, colls)
                    ],
                }
                for r in runs
            ]
        }
        text = json.dumps(json_safe(doc), indent=1) + "\n"
        if args.output:
            _write_atomically(args.output, text)
        else:
            sys.stdout.write(text)
        return 0
    if args.output:
        raise UsageError("-o/--output is for exports; add --format json")
    from fabricprobe.console import make_console
    from fabricprobe.report.tables import render_summary

    console = make_console()
    for run in runs:
        render_summary(run, console, colls)
        console.print()
    if earlier:
        runs_word = "run" if earlier == 1 else "runs"
        console.print(f"{earlier} earlier {runs_word} in this file: --run ID for one, --all-runs for every one")
    return 0
