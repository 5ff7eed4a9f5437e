"""`fabricprobe plot FILE... -o out.png`: time and busbw against message size, per collective."""

from __future__ import annotations

import argparse
from typing import Any

from fabricprobe.choices import choice_list
from fabricprobe.cli.parser import HelpFormatter
from fabricprobe.engine.config import GROUPS, KNOWN
from fabricprobe.inputs import path_type


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "plot",
        formatter_class=HelpFormatter,
        help="plot time and busbw against message size",
        description="Draw, per collective, the median time and the busbw against message size (log\n"
        "axes), one line per algorithm — or per input when several are given — with a band\n"
        "from the fastest iteration to the 90th percentile. Needs the plot extra:\n"
        "pip install 'fabricprobe[plot]'.\n\n"
        "  fabricprobe plot fabricprobe.h5 -o sweep.png\n"
        "  fabricprobe plot eth.h5 opa.h5 --collectives allreduce -o fabrics.svg\n"
        "  fabricprobe plot fabricprobe-doctor.h5 -o pairs.png  # doctor: pair matrix",
    )
    p.add_argument(
        "inputs", nargs="+", metavar="FILE[:RUN][@ALGORITHM]", help="results to draw (default run: the last)"
    )
    p.add_argument(
        "-o", "--output", type=path_type(), required=True, metavar="FILE", help="image file: .png, .svg or .pdf"
    )
    p.add_argument("--collectives", metavar="LIST", help="only these collectives")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from fabricprobe.doctor import record

    if len(args.inputs) == 1 and record.is_doctor_file(args.inputs[0].split(":")[0]):
        return _doctor(args)
    from fabricprobe.report.compare import parse_side
    from fabricprobe.report.plots import plot

    colls = choice_list(args.collectives, KNOWN, "collective", GROUPS) if args.collectives is not None else None
    sides = [parse_side(text) for text in args.inputs]
    path = plot(sides, args.output, colls)
    print(f"wrote {path}")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    """A doctor record: the pair matrix of one run (FILE:RUN, default the last)."""
    from fabricprobe.doctor import record
    from fabricprobe.doctor.plot import heatmap

    path, _, run_id = args.inputs[0].partition(":")
    rid, m, meta = record.load(path, run_id or None)
    title = f"fabricprobe doctor {rid}: {meta['provenance'].get('lab') or meta['provenance'].get('topology', '')}"
    print(f"wrote {heatmap(m, args.output, title)}")
    return 0
