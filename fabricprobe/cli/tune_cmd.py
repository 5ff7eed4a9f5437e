"""`fabricprobe tune-sweep` (measure every library algorithm) and `fabricprobe tune FILE` (choose,
write the tuning files, and with --verify prove they apply and re-measure before/after)."""

from __future__ import annotations

import argparse
from typing import Any

from fabricprobe.choices import choice_list, list_items
from fabricprobe.cli.parser import HelpFormatter
from fabricprobe.cli.sweep_cmd import DENSITIES, density_for, parse_comm_sizes
from fabricprobe.console import error_line
from fabricprobe.errors import EXIT_OK, EXIT_WRONG, UsageError
from fabricprobe.inputs import MAX_ITERATIONS, MAX_SECONDS, launcher_args_type, path_type, real_type, whole_type
from fabricprobe.sizes import format_size
from fabricprobe.tuning.emit.registry import FORMATS
from fabricprobe.tuning.measure.before_after import MIN_REPS as DEFAULT_REPS
from fabricprobe.tuning.plan.own import TUNE_COLLECTIVES


def add_parser(sub: Any) -> None:
    s = sub.add_parser(
        "tune-sweep",
        formatter_class=HelpFormatter,
        help="measure the library's default, every algorithm it has forced one at a time, and fabricprobe's own",
        description="Measure the library's default and every algorithm it has, each forced through the\n"
        "library's own settings, on every communicator size in --comm-sizes. With --switch mpit\n"
        "(the default where the library allows it: Open MPI, MPICH) one launch measures them all,\n"
        "switching the algorithm at run time through the MPI tool interface; an algorithm it\n"
        "cannot switch, or that fails or hangs there, gets a launch of its own. With --switch\n"
        "launch (Intel MPI's only way) each (collective, algorithm) is a launch of its own.\n"
        "fabricprobe's hand-written algorithms (--algorithms) run beside the default;\n"
        "sparse_allreduce's at every --density. Where Open MPI's han serves the job (several\n"
        "nodes, asked first in a short job), han's own settings are measured too: the\n"
        "collective handed to tuned with each of its algorithms (flat_*), han's inter-node and\n"
        "node-local modules, its segment sizes (docs/tuning.md, On several nodes).\n"
        "Run it directly, not under mpiexec. Then: fabricprobe tune FILE.",
    )
    s.add_argument(
        "-n",
        "--ranks",
        type=whole_type("-n", 2, 65536),
        required=True,
        help="ranks per job (the largest communicator size)",
    )
    s.add_argument(
        "-o", "--output", type=path_type(), default="fabricprobe-tuning.h5", metavar="FILE", help="results file"
    )
    s.add_argument("--collectives", default=",".join(TUNE_COLLECTIVES), metavar="LIST", help="collectives to tune")
    s.add_argument("--comm-sizes", metavar="LIST", help="communicator sizes (default: 2, 4, 8, ... and -n)")
    s.add_argument("--only", metavar="LIST", help="only these library algorithms (and the default)")
    s.add_argument(
        "--algorithms",
        default="all",
        metavar="LIST",
        help="fabricprobe's own algorithms to measure beside the library's: all, none, or names",
    )
    s.add_argument(
        "--ranks-per-node",
        metavar="K|LIST",
        help="virtual topology: nodes of K consecutive ranks, or node sizes such as 2,2 (default: the hardware's)",
    )
    s.add_argument(
        "--density",
        default=None,
        metavar="LIST",
        help=f"sparse_allreduce: fractions of entries sent (default {DENSITIES})",
    )
    s.add_argument("--sizes", metavar="LIST", help="message sizes (default: 8 B to 4 MiB by ×4)")
    s.add_argument(
        "--iters",
        type=whole_type("--iters", 1, MAX_ITERATIONS),
        default=100,
        metavar="N",
        help="first batch of timed iterations",
    )
    s.add_argument(
        "--max-time",
        type=real_type("--max-time", 0, MAX_SECONDS, lo_open=True),
        default=0.5,
        metavar="SECONDS",
        help="time budget per point",
    )
    s.add_argument(
        "--point-timeout",
        type=real_type("--point-timeout", 0, MAX_SECONDS),
        default=120.0,
        metavar="SECONDS",
        help="a point (and a switch) that takes longer ends its job: the algorithm then gets a launch of its own",
    )
    s.add_argument(
        "--mpiexec",
        metavar="PATH",
        help="launcher (default: srun inside a Slurm allocation, else the library's mpiexec, beside Python or on PATH)",
    )
    s.add_argument(
        "--mpiexec-args", default="", metavar="ARGS", type=launcher_args_type(), help="extra launcher arguments, quoted"
    )
    s.add_argument(
        "--switch",
        choices=("mpit", "launch"),
        help="how an algorithm is forced: mpit (at run time, one launch) or launch (one per algorithm); "
        "default: mpit where the library allows it",
    )
    s.add_argument(
        "--resume",
        action="store_true",
        help="finish an interrupted tune-sweep of FILE: what it measured is kept, the rest is measured",
    )
    s.add_argument(
        "--job-timeout",
        type=real_type("--job-timeout", 0, MAX_SECONDS, lo_open=True),
        default=900,
        metavar="SECONDS",
        help="limit per launched job (per algorithm)",
    )
    s.add_argument(
        "--budget",
        type=real_type("--budget", 0, 1, lo_open=True),
        metavar="F",
        help="measure in rounds only what could change the choice, up to this fraction (0 < F ≤ 1) of the "
        "exhaustive sweep's measurement time (docs/tuning.md); dense collectives only",
    )
    s.set_defaults(handler=run_sweep)

    j = sub.add_parser(
        "tune-sweep-job",
        formatter_class=HelpFormatter,
        # no help=: internal, so argparse leaves it out of the list of subcommands
        description="Started by `fabricprobe tune-sweep` under mpiexec or srun: runs the sweeps of\n"
        "its job file, switching the library's algorithms at run time (docs/tuning.md).",
    )
    j.add_argument("spec", metavar="JOB", help="the job file tune-sweep wrote")
    j.add_argument("-o", "--output", type=path_type(), required=True, metavar="FILE", help="results file")
    j.set_defaults(handler=run_job)

    t = sub.add_parser(
        "tune",
        formatter_class=HelpFormatter,
        help="choose the fastest algorithms and write the library's tuning files",
        description="From a tune-sweep file, choose the fastest library algorithm per collective,\n"
        "communicator size and message-size range (the default is kept wherever the\n"
        "difference is inside the measured noise), and write the tuning files and the\n"
        "lines that load them. --verify launches the library with the files, proves with\n"
        "fingerprints that the chosen algorithm runs on both sides of every boundary,\n"
        "and re-measures default against tuned. Formats: docs/tuning.md.",
    )
    t.add_argument("file", metavar="FILE", help="results file written by fabricprobe tune-sweep")
    t.add_argument("-o", "--output", type=path_type(), default="tuning", metavar="DIR", help="directory for the files")
    t.add_argument(
        "--emit",
        default="auto",
        metavar="LIST",
        help=f"comma-separated: {', '.join(FORMATS)}; auto = the measured library's formats + fabricprobe",
    )
    t.add_argument("--collectives", metavar="LIST", help="only these collectives")
    t.add_argument("--dtype", default="float32", help="datatype whose measurements decide")
    t.add_argument(
        "--min-gain",
        type=real_type("--min-gain", 0, 0.99),
        default=None,
        metavar="FRACTION",
        help="a winner must be this much faster than the default (time), beyond both confidence intervals; "
        "default 0.05 with --verify (the before/after then decides), 0.20 without (docs/tuning.md)",
    )
    t.add_argument("--verify", action="store_true", help="prove the files apply, then re-measure before/after")
    t.add_argument(
        "--reps",
        type=whole_type("--reps", 1, 1000),
        default=None,
        metavar="N",
        help=f"before/after repetitions with --verify (default {DEFAULT_REPS}; 6 or more give a 95%% interval "
        "of the speedup)",
    )
    t.add_argument("--mpiexec", metavar="PATH", help="launcher for --verify")
    t.add_argument(
        "--mpiexec-args", default="", metavar="ARGS", type=launcher_args_type(), help="extra launcher arguments, quoted"
    )
    t.set_defaults(handler=run_tune)


def run_sweep(args: argparse.Namespace) -> int:
    from fabricprobe.cli.sweep_cmd import parse_densities
    from fabricprobe.console import make_console
    from fabricprobe.engine.config import SweepConfig
    from fabricprobe.mpienv.launcher import launched_by_mpiexec
    from fabricprobe.mpienv.topology import node_sizes, parse_ranks_per_node
    from fabricprobe.sizes import size_list
    from fabricprobe.tuning.measure.launch import default_comm_sizes
    from fabricprobe.tuning.measure.sweep import tune_sweep
    from fabricprobe.tuning.plan.own import chosen

    if launched_by_mpiexec():
        raise UsageError("tune-sweep launches its own mpiexec jobs: run it directly, not under mpiexec")
    if args.ranks < 2:
        raise UsageError("-n must be at least 2")
    collectives = choice_list(args.collectives, TUNE_COLLECTIVES, "collective")
    if args.budget is not None:
        collectives = budgeted_collectives(args.budget, collectives, args.collectives != ",".join(TUNE_COLLECTIVES))
    own = chosen(collectives, args.algorithms)
    ranks_per_node = parse_ranks_per_node(args.ranks_per_node) if args.ranks_per_node is not None else None
    if ranks_per_node:
        node_sizes(ranks_per_node, args.ranks)  # refused here, not in every job
    comm_sizes = parse_comm_sizes(args.comm_sizes) if args.comm_sizes is not None else default_comm_sizes(args.ranks)
    if any(c < 1 or c > args.ranks for c in comm_sizes):
        raise UsageError(f"--comm-sizes must lie between 1 and -n {args.ranks}")
    sizes = size_list(args.sizes) if args.sizes is not None else [8 << (2 * k) for k in range(10)] + [4 << 20]
    template = SweepConfig(
        sizes=sizes,
        iterations_small=args.iters,
        iterations_large=args.iters,
        max_time=args.max_time,
        point_timeout=args.point_timeout,
        ranks_per_node=ranks_per_node,
        densities=parse_densities(density_for(args.density, collectives)),
    ).check()
    console = make_console(stderr=True)

    only = list_items(args.only, "--only") if args.only is not None else None
    if args.budget is not None and args.resume:
        raise UsageError("--resume finishes an exhaustive tune-sweep; a --budget one starts again")
    if args.budget is not None:
        return _run_budgeted(args, collectives, comm_sizes, template, only, own, console)
    result = tune_sweep(
        args.ranks,
        args.output,
        collectives,
        comm_sizes,
        template,
        switch=args.switch,
        resume=args.resume,
        mpiexec=args.mpiexec,
        mpiexec_args=args.mpiexec_args,
        only=only,
        timeout=args.job_timeout,
        own=own,
        progress=lambda text: console.print(text, markup=False, highlight=False),
    )
    for fb in result.fallbacks:
        console.print(
            f"[yellow]{fb.collective}/{fb.variant}[/] measured in a launch of its own on "
            f"{','.join(map(str, fb.comm_sizes))} ranks: {fb.why}"
        )
    for fb in result.refused:
        console.print(
            f"[yellow]{fb.collective}/{fb.variant}[/] not run on {','.join(map(str, fb.comm_sizes))} ranks: the "
            f"library refuses it there ({fb.why.split(': ', 1)[-1]}); a launch of its own would too"
        )
    if args.resume and not result.launches:  # was "none of 0 jobs measured anything", exit 1
        raise UsageError(f"every tune-sweep job in {args.output} ran to its end; nothing to resume")
    return _report(result, args.output, console)


def run_job(args: argparse.Namespace) -> int:
    from fabricprobe.tuning.sweep_job import read_spec, run

    return run(read_spec(args.spec), args.output)


def budgeted_collectives(budget: float, collectives: list[str], asked: bool) -> list[str]:
    """--budget: a fraction in (0, 1]; the sparse allreduce (no library algorithm, its candidates all
    measured in one job) is refused when asked for and left out of the default list."""
    from fabricprobe.tuning.plan.own import SPARSE

    if not 0 < budget <= 1:  # NaN fails too
        raise UsageError(f"--budget must be a fraction in (0, 1] (got {budget:g})")
    if SPARSE in collectives and asked:
        raise UsageError(f"--budget tunes collectives with library algorithms; measure {SPARSE} without it")
    return [c for c in collectives if c != SPARSE]


def _run_budgeted(args, collectives, comm_sizes, template, only, own, console) -> int:
    from fabricprobe.tuning.economy.budgeted import measure_budgeted

    result = measure_budgeted(
        args.ranks,
        args.output,
        collectives,
        comm_sizes,
        template,
        args.budget,
        switch=args.switch,
        mpiexec=args.mpiexec,
        mpiexec_args=args.mpiexec_args,
        only=only,
        timeout=args.job_timeout,
        own=own,
        progress=lambda text: console.print(text, markup=False, highlight=False),
    )
    return _report(result, args.output, console)


def _report(result, output: str, console) -> int:
    """A tune-sweep's outcome: each failed job (a one launch's own failures are its fallbacks, already
    printed), the points whose validation failed, and exit 1 when nothing was measured right."""
    from fabricprobe.tuning.measure.onelaunch import ONE_LAUNCH

    failed = [launch for launch in result.launches if launch.returncode != 0 and launch.variant is not ONE_LAUNCH]
    for launch in failed:
        sizes = ",".join(map(str, launch.comm_sizes))
        console.print(
            f"[yellow]{launch.collective}/{launch.variant.name} on {sizes} ranks failed "
            f"(exit {launch.returncode}):[/] {launch.stderr_tail}"
        )
    if result.wrong:
        shown = ", ".join(result.wrong[:5]) + (f" and {len(result.wrong) - 5} more" if len(result.wrong) > 5 else "")
        console.print(f"[bold red]{len(result.wrong)} points failed validation:[/] {shown}")
    if result.ok_points == 0:
        error_line(f"{result.vendor}: none of {len(result.launches)} jobs measured anything (their errors are above)")
        return EXIT_WRONG
    console.print(
        f"{result.vendor}: {result.summary}{f', {len(failed)} failed' if failed else ''} in "
        f"{result.seconds:.0f} s; {result.ok_points} points measured into {output}; next: "
        f"fabricprobe tune {output}"
    )
    return EXIT_OK


class ConsoleReporter:
    """How `fabricprobe tune` shows what the tuning workflow decides: one screen (a line per phase, the
    verdict, the load lines); every table goes to tuning.json, shown by `fabricprobe report
    tuning.json` (docs/tuning.md)."""

    STYLES = {"": None, "warning": "yellow", "error": "bold red", "command": None, "verdict": "bold"}

    def __init__(self) -> None:
        from fabricprobe.console import make_console

        self.console = make_console()
        self._status = None  # a terminal's transient progress line

    def _done(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def progress(self, text: str) -> None:
        if not self.console.is_terminal:  # a log keeps every step
            self.line(text)
        elif self._status is None:
            self._status = self.console.status(text, spinner="line")
            self._status.start()
        else:
            self._status.update(text)

    def line(self, text: str, style: str = "") -> None:
        self._done()
        # a command to paste is never broken into lines (the terminal may fold it; a copy is one line)
        wrap = {"soft_wrap": True} if style == "command" else {}
        self.console.print(text, markup=False, highlight=False, style=self.STYLES[style], **wrap)

    def rules(self, table, source: str) -> None:
        from fabricprobe.tuning.plan.library import DEFAULT

        ranges = [r for sections in table.rules.values() for rs in sections.values() for r in rs]
        chosen = sum(1 for r in ranges if r.winner != DEFAULT)
        self.line(
            f"{source} ({table.vendor}, {table.dtype}): {chosen} of {len(ranges)} message-size ranges have an "
            "algorithm faster than the library's default beyond the noise"
        )

    def selection(self, selection, source: str) -> None:
        own = selection.own_winners()
        if own:
            self.line(f"fabricprobe's own algorithm beats the library's best in {len(own)} ranges (fabricprobe.tuned)")

    def verification(self, checks) -> None:
        from fabricprobe.tuning.verify.checks import ERROR, MISMATCH, summary

        counts = ", ".join(f"{k} {v}" for k, v in summary(checks).items())
        self.line(f"verification: {len(checks)} fingerprints: {counts}")
        for c in checks:
            if c.status in (MISMATCH, ERROR):
                self.line(
                    f"  {c.status}: {c.collective} on {c.comm_size} ranks at {format_size(c.size)}: expected "
                    f"{c.expected}; {c.detail}",
                    "error",
                )

    def before_after(self, rows: list[dict]) -> None:
        if not rows:  # no rule left to compare with the default
            return
        verdicts: dict[str, int] = {}
        for r in rows:
            verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
        self.line(f"before/after: {len(rows)} sizes: " + ", ".join(f"{v} {k}" for k, v in verdicts.items()))


def run_tune(args: argparse.Namespace) -> int:
    from fabricprobe.tuning.workflow import TuneOptions, tune

    if args.min_gain is not None and not 0 <= args.min_gain < 1:  # NaN fails too
        raise UsageError(f"--min-gain must be a fraction in [0, 1) (got {args.min_gain:g})")
    verify_only = (("--reps", args.reps), ("--mpiexec", args.mpiexec), ("--mpiexec-args", args.mpiexec_args))
    given = [option for option, value in verify_only if value]
    if given and not args.verify:
        raise UsageError(f"{', '.join(given)}: only --verify launches anything; add --verify or leave them out")
    reps = DEFAULT_REPS if args.reps is None else args.reps
    opts = TuneOptions(
        file=args.file,
        output=args.output,
        emit=None if args.emit == "auto" else choice_list(args.emit, FORMATS, "format"),
        collectives=choice_list(args.collectives, TUNE_COLLECTIVES, "collective")
        if args.collectives is not None
        else None,
        dtype=args.dtype,
        min_gain=args.min_gain,
        verify=args.verify,
        reps=reps,
        mpiexec=args.mpiexec,
        mpiexec_args=args.mpiexec_args,
    )
    return tune(opts, ConsoleReporter())
