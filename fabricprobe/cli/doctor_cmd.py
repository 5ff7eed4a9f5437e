"""`fabricprobe doctor`: is this fabric normal, and if not, which link or rank is not (docs/doctor.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from fabricprobe.cli.parser import HelpFormatter
from fabricprobe.errors import UsageError
from fabricprobe.inputs import path_type, real_type, whole, whole_type
from fabricprobe.sizes import parse_size

DEFAULT_OUTPUT = "fabricprobe-doctor.h5"
MAX_BYTES = 1 << 30


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "doctor",
        formatter_class=HelpFormatter,
        help="find the slow link or the slow rank (under mpiexec or srun)",
        description="Measure each pair of nodes through one of their ranks and every pair of ranks within\n"
        "each node (at most N + k rounds of disjoint pairs at N nodes × k ranks, each node's link\n"
        "carrying one pair at a time; --every-pair: all N·k−1 rounds) at a small and a large size,\n"
        "time every rank's reductions in a ring, and name the links, ranks and pairs slower than\n"
        "their peers by more than the threshold and the peers' noise. Appends a run to an HDF5\n"
        "record; `fabricprobe plot FILE -o x.png` draws the pair matrix,\n"
        "`fabricprobe doctor --show FILE` (or `report FILE`) prints a run again.\n\n"
        "  mpiexec -n 8 fabricprobe doctor\n"
        "  srun -N 4 --ntasks-per-node 2 fabricprobe doctor --confirm -o doctor.h5",
    )
    p.add_argument(
        "-o",
        "--output",
        type=path_type(),
        default=DEFAULT_OUTPUT,
        metavar="FILE",
        help="doctor record; runs are appended",
    )
    p.add_argument(
        "--sizes", default="8,1M", metavar="SMALL,LARGE", help="ping-pong sizes: latency, bandwidth (bytes, K, M)"
    )
    p.add_argument("--iterations", default="50,10", metavar="S,L", help="timed round trips per pair at each size")
    p.add_argument("--ring-size", default="4M", metavar="BYTES", help="chunk each rank sends and reduces per ring step")
    p.add_argument(
        "--ring-reps", type=whole_type("--ring-reps", 1, 10**5), default=4, help="ring passes timed (after one warm-up)"
    )
    p.add_argument(
        "--threshold",
        type=real_type("--threshold", 0, 100, lo_open=True),
        default=0.15,
        help="slower than the class by more than this fraction (and than 3σ of its noise) = suspect",
    )
    p.add_argument(
        "--confirm", action="store_true", help="measure the suspect pairs again, alone and 3× longer, before reporting"
    )
    p.add_argument(
        "--every-pair",
        action="store_true",
        help="measure every pair of ranks across nodes too (N·k−1 rounds: for small jobs; docs/doctor.md)",
    )
    p.add_argument("--show", metavar="FILE", help="print a recorded run again (no MPI, no measuring)")
    p.add_argument("--run", metavar="ID", help="with --show: the run (default: the last)")
    p.set_defaults(handler=run)


def _two(text: str, what: str, parse) -> tuple[int, int]:
    parts = text.split(",")
    if len(parts) != 2:
        raise UsageError(f"invalid {what} {text!r}: expected two values, e.g. 8,1M")
    return parse(parts[0]), parse(parts[1])


def _count(text: str) -> int:
    return whole(text, "--iterations", 1, 100000)


def options(args: argparse.Namespace):
    from fabricprobe.doctor.workflow import DoctorOptions

    small, large = _two(args.sizes, "--sizes", parse_size)
    if not 1 <= small < large <= MAX_BYTES:
        raise UsageError(f"invalid --sizes {args.sizes}: need 1 B ≤ small < large ≤ 1 GiB")
    si, li = _two(args.iterations, "--iterations", _count)
    ring = parse_size(args.ring_size)
    if not 4 <= ring <= MAX_BYTES:
        raise UsageError(f"invalid --ring-size {args.ring_size}: 4 B to 1 GiB")
    if not 1 <= args.ring_reps <= 1000:
        raise UsageError(f"invalid --ring-reps {args.ring_reps}: 1 to 1000")
    if not 0 < args.threshold < 10:
        raise UsageError(f"invalid --threshold {args.threshold}: a fraction above 0, e.g. 0.15")
    return DoctorOptions(
        args.output,
        small,
        large,
        si,
        li,
        ring,
        args.ring_reps,
        args.threshold,
        args.confirm,
        every_pair=args.every_pair,
    )


def run(args: argparse.Namespace) -> int:
    if args.show:
        from fabricprobe.console import make_console
        from fabricprobe.doctor import record
        from fabricprobe.doctor.render import render

        _, m, meta = record.load(args.show, args.run)
        render(make_console(), m, meta["diagnosis"], meta["provenance"])
        return 0
    if args.run:
        raise UsageError("--run goes with --show FILE")
    opts = options(args)  # the output is checked by rank 0 once MPI has started (doctor/workflow.py)
    from fabricprobe.doctor.workflow import run_doctor

    return run_doctor(opts, sys.argv)
