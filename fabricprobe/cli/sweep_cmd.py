"""`fabricprobe sweep`: measure the MPI library's collectives and point-to-point tests."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from fabricprobe import collectives
from fabricprobe.choices import choice_list, list_items
from fabricprobe.cli.parser import HelpFormatter, RenamedOption
from fabricprobe.console import warn_line
from fabricprobe.engine.config import FULL, GROUPS, KNOWN, MAX_LAUNCHES, ORDERS, PAIRS, QUICK, SEED_MAX, SweepConfig
from fabricprobe.engine.gpudirect import GPUDIRECT
from fabricprobe.errors import INTERRUPTED_STATUSES, UsageError
from fabricprobe.inputs import (
    MAX_ITERATIONS,
    MAX_RANKS,
    MAX_SECONDS,
    launcher_args_type,
    path_type,
    real,
    real_type,
    whole_list,
    whole_type,
)
from fabricprobe.memory import BUFFER_KINDS, arena
from fabricprobe.mpienv.datatypes import DTYPES, OPS
from fabricprobe.mpienv.init import THREAD_LEVELS
from fabricprobe.sizes import parse_size, size_list, size_range
from fabricprobe.specs import SPECS, family
from fabricprobe.specs.base import OMB_WINDOW
from fabricprobe.specs.rma import SYNCS
from fabricprobe.timing.loops import MODES

DEFAULT_OUTPUT = "fabricprobe.h5"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "sweep",
        formatter_class=HelpFormatter,
        help="measure collectives and point-to-point tests (under mpiexec)",
        description="Measure the MPI library's collectives and point-to-point latency/bandwidth over a range of\n"
        "message sizes, validate every result, and append a run to an HDF5 results file.\n\n"
        "  mpiexec -n 4 fabricprobe sweep -b 8 -e 4M -f 2 --collectives allreduce,bcast\n"
        "  mpiexec -n 2 fabricprobe sweep --quick",
    )
    p.add_argument(
        "-o",
        "--output",
        type=path_type(),
        metavar="FILE",
        help=f"results file; runs are appended (default: {DEFAULT_OUTPUT})",
    )
    p.add_argument(
        "--resume",
        metavar="FILE",
        help="finish an interrupted run in FILE, skipping completed points (the run's stored options are used)",
    )
    p.add_argument("--run", metavar="ID", help="with --resume: the run to finish (default: the last one)")
    p.add_argument(
        "--quick", action="store_true", help="short sweep: 8 B to 4 MiB by ×4, fewer iterations, 0.3 s per point"
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="take every measurement option from FILE: a run's configuration as JSON (as stored in a "
        "results file and shown by `report --format json`)",
    )

    g = p.add_argument_group("what to measure")
    g.add_argument(
        "--collectives",
        default="default",
        metavar="LIST",
        help=f"comma-separated: {', '.join(n for n in KNOWN if not (SPECS[n].nonblocking or SPECS[n].persistent))}; "
        "each collective's non-blocking form i<name> (iallreduce, ...: its overlap with computation measured too) "
        "and persistent form <name>_persistent (allreduce_persistent, ...); or groups default (the first six "
        "collectives, barrier, point-to-point and kernels: what a DNN runs), all (everything but the sparse "
        "tests), collectives, pt2pt, kernels, sparse",
    )
    g.add_argument(
        "--density",
        default=None,
        metavar="LIST",
        help=f"sparse tests: fractions of the elements each rank contributes (0 < d ≤ 1; default {DENSITIES})",
    )
    g.add_argument(
        "--algorithms",
        default="library",
        metavar="LIST",
        help="comma-separated algorithms, or all (library = the MPI library's own)",
    )
    g.add_argument("-d", "--dtypes", default="float32", metavar="LIST", help=f"comma-separated: {', '.join(DTYPES)}")
    g.add_argument("--ops", default="sum", metavar="LIST", help=f"reduction ops, comma-separated: {', '.join(OPS)}")
    g.add_argument("--in-place", choices=("no", "yes", "both"), default="no", help="use MPI_IN_PLACE")
    g.add_argument(
        "--root",
        type=whole_type("--root", 0, MAX_RANKS),
        default=0,
        help="root rank of the rooted collectives: reduce, bcast, gather, scatter, their v, non-blocking "
        "and persistent forms",
    )
    g.add_argument(
        "--comm-sizes",
        metavar="LIST",
        help="also measure the collectives on the first k ranks for each k listed (e.g. 2,4,8), so "
        "one job gives results for every communicator size below it",
    )
    g.add_argument(
        "--library-variant",
        metavar="NAME",
        default="",
        help=argparse.SUPPRESS,  # internal: tune-sweep's launches record the library's points as library:NAME
    )
    g.add_argument(
        "--ranks-per-node",
        metavar="K|LIST",
        help="virtual topology: nodes of K consecutive ranks, or explicit node sizes such as 3,3,2 "
        "(default: the hardware's nodes)",
    )

    s = p.add_argument_group("message sizes (nccl-tests style; K, M, G are binary)")
    s.add_argument("-b", "--minbytes", metavar="SIZE", help="smallest size (default 8)")
    s.add_argument("-e", "--maxbytes", metavar="SIZE", help="largest size (default 4M)")
    s.add_argument("-f", "--stepfactor", metavar="N", help="multiply the size by N each step (default 2)")
    s.add_argument("-i", "--stepbytes", metavar="SIZE", help="add SIZE each step instead")
    s.add_argument("--sizes", metavar="LIST", help="explicit comma-separated sizes instead of a range")

    t = p.add_argument_group("timing")
    t.add_argument(
        "--mode",
        default="barrier",
        metavar="LIST",
        help="barrier: untimed barrier between calls (OMB/IMB comparable); loop: back-to-back calls "
        "(nccl-tests comparable); window: call i starts at t0 + i·w on every rank's synchronized clock "
        "(ReproMPI; the latest rank's end minus the window's start); or a list, e.g. barrier,window,loop",
    )
    t.add_argument(
        "--iters",
        type=whole_type("--iters", 1, MAX_ITERATIONS),
        metavar="N",
        help=f"first batch of timed iterations (default {FULL['iterations_small']} up to 8 KiB, "
        f"{FULL['iterations_large']} above; OMB's defaults)",
    )
    t.add_argument(
        "--warmup",
        type=whole_type("--warmup", 0, MAX_ITERATIONS),
        metavar="N",
        help=f"warm-up iterations (default {FULL['warmup_small']} / {FULL['warmup_large']})",
    )
    t.add_argument(
        "--max-time",
        type=real_type("--max-time", 0, MAX_SECONDS, lo_open=True),
        metavar="SECONDS",
        help=f"time budget per point for repeating noisy points (default {FULL['max_time']:g})",
    )
    t.add_argument(
        "--ci-target",
        type=real_type("--ci-target", 0, 0.99),
        metavar="FRACTION",
        help=f"repeat until the median's 95%% CI is within ± this fraction (default {FULL['ci_target']:g}; "
        "0 = exactly --iters iterations)",
    )
    t.add_argument(
        "--min-iters",
        type=whole_type("--min-iters", 1, MAX_ITERATIONS),
        default=10,
        metavar="N",
        help="fewest timed iterations per point",
    )
    t.add_argument(
        "--timer",
        choices=("auto", "native", "python"),
        default="auto",
        help="native: C calls from a compiled loop (what C benchmarks time); python: mpi4py calls",
    )
    t.add_argument("--thread-level", choices=THREAD_LEVELS, default="single", help="MPI thread level to request")
    t.add_argument(
        "--window-size",
        dest="window",
        type=whole_type("--window-size", 1, 1 << 20),
        default=OMB_WINDOW,
        metavar="N",
        help="messages per window in bw, bibw and the one-sided bandwidth tests (OMB's -W/--window-size; "
        "not --mode window, a timing mode)",
    )
    t.add_argument(
        "--window",
        dest="window",
        type=whole_type("--window", 1, 1 << 20),
        action=RenamedOption,
        renamed_to="--window-size",
    )
    t.add_argument(
        "--pairs",
        default="intra,inter",
        metavar="LIST",
        help="point-to-point pairs: intra (two ranks of one node), inter (the first ranks of two nodes), "
        "all (ranks r and r+n/2 at once); kinds the topology lacks are skipped",
    )
    t.add_argument(
        "--rma-sync",
        default="flush",
        metavar="LIST",
        help=f"one-sided tests' synchronization (OMB's -s), each measured: {', '.join(SYNCS)} (default: flush, "
        "OMB's; every test with flush is timed natively, the rest through mpi4py)",
    )
    t.add_argument(
        "--hugepages",
        action="store_true",
        help="put buffers of 2 MiB and more on 2 MiB-aligned transparent huge pages (default: 4 KiB "
        "pages, as OMB and a plain C malloc get)",
    )
    t.add_argument(
        "--early-buffers",
        type=whole_type("--early-buffers", 0, arena.MAX_MIB),
        default=0,
        metavar="MIB",
        help="OMB's buffer setting: each rank maps and writes MIB MiB at its start, before fabricprobe's "
        "imports write theirs, and takes its message buffers from them, as OMB makes its buffers right after "
        "MPI_Init (why it matters, with the measured difference: docs/performance.md). Give at least the send "
        "and receive buffers of the largest point (2 × the message for latency and allreduce, more for "
        "allgather and alltoall); what did not fit is made late and the report says how much was needed. "
        "Default 0: buffers are made when a point needs them",
    )
    t.add_argument(
        "--order",
        choices=ORDERS,
        help="the points' order: fixed (communicator sizes outermost, sizes rising, algorithms innermost) "
        "or random (each size's block of algorithms shuffled, from --seed); default fixed, random with --launches",
    )
    t.add_argument(
        "--seed",
        type=whole_type("--seed", 0, SEED_MAX),
        default=-1,
        metavar="N",
        help="seed of the random order (default: drawn at the start and recorded with the run)",
    )
    t.add_argument(
        "--no-bound-probe",
        action="store_true",
        help="skip the short point-to-point probe (latency 8 B, and bw 1 MiB when a row is over 64 B) that "
        "gives each collective row its %% of bound when the sweep measures no point-to-point test",
    )
    t.add_argument(
        "--point-timeout",
        type=real_type("--point-timeout", 0, MAX_SECONDS),
        default=120.0,
        metavar="SECONDS",
        help="watchdog: abort the job when one point runs longer (0 = off)",
    )

    k = p.add_argument_group(
        "several launches", "Run this outside mpiexec: it launches the jobs (docs/methodology.md)."
    )
    k.add_argument(
        "--launches",
        type=whole_type("--launches", 1, MAX_LAUNCHES),
        metavar="K",
        help="launch the sweep K times, each launch a run in the file with its points in a random order; the "
        "report shows the spread between launches beside the spread within one",
    )
    k.add_argument("-n", "--ranks", type=whole_type("-n", 1, MAX_RANKS), metavar="N", help="ranks per launch")
    k.add_argument(
        "--mpiexec",
        metavar="PATH",
        help="launcher (default: srun inside a Slurm allocation, else the library's mpiexec, beside Python or on PATH)",
    )
    k.add_argument(
        "--mpiexec-args", default="", metavar="ARGS", type=launcher_args_type(), help="extra launcher arguments, quoted"
    )

    d = p.add_argument_group("device buffers (docs/gpu.md)")
    d.add_argument(
        "--buffer",
        choices=BUFFER_KINDS,
        default="host",
        help="where the buffers live: host (numpy), cupy or numba (GPU memory; the gpu extra)",
    )
    d.add_argument(
        "--gpudirect",
        choices=tuple(GPUDIRECT),
        default="both",
        help="device buffers: on = handed straight to a CUDA-aware MPI; off = staged through pinned "
        "host memory, whole and pipelined in chunks (copies timed); both",
    )
    d.add_argument(
        "--stage-chunk",
        default="1M",
        metavar="SIZE",
        help="chunk of the pipelined staging (default 1M); pipelined points need two chunks or more",
    )
    d.add_argument(
        "--assume-cuda-aware",
        action="store_true",
        help="run GPUDirect points although the library does not say it is CUDA-aware (recorded)",
    )

    v = p.add_argument_group("validation and output")
    v.add_argument(
        "--no-validate", action="store_true", help="skip result validation (it runs outside the timed region)"
    )
    v.add_argument(
        "--check-iters",
        type=whole_type("--check-iters", 1, 1000),
        default=1,
        metavar="N",
        help="validated calls per point",
    )
    v.add_argument(
        "--progress",
        choices=("auto", "rich", "plain", "none"),
        default="auto",
        help="rank 0's progress display on stderr (plain = one line per point)",
    )
    v.add_argument("--quiet", action="store_true", help="do not print the summary after the sweep")
    p.set_defaults(handler=run)
    # What --config replaces: every option of the groups above but the display ones (and --quick).
    for group in (g, s, t, d, v):
        for a in group._group_actions:
            # early_buffers: the process's, not the file's; SUPPRESS: an old spelling (RenamedOption)
            if a.dest not in ("progress", "quiet", "early_buffers") and a.default is not argparse.SUPPRESS:
                _DEFAULTS[a.dest] = a.default
                _OPTION_NAMES[a.dest] = max(a.option_strings, key=len)
    _DEFAULTS["quick"] = False
    _OPTION_NAMES["quick"] = "--quick"


_DEFAULTS: dict[str, Any] = {}  # measurement option dest -> default, filled when the parser is built
_OPTION_NAMES: dict[str, str] = {}  # dest -> the option's name on the command line (--window-size for window)


def _sizes(args: argparse.Namespace, quick: bool) -> list[int]:
    ranged = any(x is not None for x in (args.minbytes, args.maxbytes, args.stepfactor, args.stepbytes))
    if args.sizes is not None:
        if ranged:
            raise UsageError("give either --sizes or a range (-b/-e/-f/-i), not both")
        return size_list(args.sizes)
    if not ranged:
        return list((QUICK if quick else FULL)["sizes"])
    pick = lambda value, default: default if value is None else value  # noqa: E731 - "" is refused, not 8
    return size_range(pick(args.minbytes, "8"), pick(args.maxbytes, "4M"), args.stepfactor, args.stepbytes)


def parse_comm_sizes(text: str) -> list[int]:
    return sorted(set(whole_list(text, "--comm-sizes", 1, MAX_RANKS)))


def parse_densities(text: str) -> list[float]:
    out = []
    for item in list_items(text, "--density"):
        value = real(item, "--density", 0, 1, lo_open=True)
        if value not in out:
            out.append(value)
    if not out:
        raise UsageError("empty --density list")
    return out


DENSITIES = "0.001,0.01,0.1"  # --density's default: the sparse tests' fractions of the elements sent


def density_for(given: str | None, chosen: list[str]) -> str:
    """--density as given, or its default; given where no sparse test is measured, it would be
    ignored in silence: refused."""
    if given is not None and not set(chosen) & set(family("sparse")):
        raise UsageError(f"--density {given}: only the sparse tests read it, and none is measured")
    return DENSITIES if given is None else given


def build_config(args: argparse.Namespace) -> SweepConfig:
    """The sweep configuration from the command line; raises UsageError on bad input."""
    if args.config:
        given = [_OPTION_NAMES[d] for d in _DEFAULTS if getattr(args, d) != _DEFAULTS[d]]
        if given:
            raise UsageError(
                f"--config takes every measurement option from {args.config}; leave out {', '.join(given)}"
            )
        return SweepConfig.from_file(args.config)
    base = QUICK if args.quick else FULL
    algorithm_names = collectives.choices(list_items(args.algorithms, "algorithm"))  # "all": every one
    algorithms = choice_list(args.algorithms, algorithm_names, "algorithm", {"all": algorithm_names})
    chosen = choice_list(args.collectives, KNOWN, "collective", GROUPS)
    return SweepConfig(
        collectives=chosen,
        densities=parse_densities(density_for(args.density, chosen)),
        algorithms=algorithms,
        sizes=_sizes(args, args.quick),
        dtypes=choice_list(args.dtypes, DTYPES, "datatype"),
        ops=choice_list(args.ops, OPS, "op"),
        modes=choice_list(args.mode, MODES, "mode"),
        in_place={"no": [False], "yes": [True], "both": [False, True]}[args.in_place],
        iterations_small=base["iterations_small"] if args.iters is None else args.iters,
        iterations_large=base["iterations_large"] if args.iters is None else args.iters,
        warmup_small=base["warmup_small"] if args.warmup is None else args.warmup,
        warmup_large=base["warmup_large"] if args.warmup is None else args.warmup,
        max_time=args.max_time if args.max_time is not None else base["max_time"],
        ci_target=args.ci_target if args.ci_target is not None else base["ci_target"],
        min_iterations=args.min_iters,
        validate=not args.no_validate,
        check_iters=args.check_iters,
        timer=args.timer,
        thread_level=args.thread_level,
        window=args.window,
        pairs=choice_list(args.pairs, PAIRS, "pair kind"),
        rma_syncs=choice_list(args.rma_sync, SYNCS, "one-sided synchronization"),
        ranks_per_node=_ranks_per_node(args.ranks_per_node),
        comm_sizes=parse_comm_sizes(args.comm_sizes) if args.comm_sizes is not None else None,
        library_variant=args.library_variant,
        root=args.root,
        point_timeout=args.point_timeout,
        hugepages=args.hugepages,
        early_buffers=args.early_buffers,
        buffer=args.buffer,
        gpudirect=args.gpudirect,
        stage_chunk=parse_size(args.stage_chunk),
        assume_cuda_aware=args.assume_cuda_aware,
        quick=args.quick,
        order=args.order or ("random" if args.launches else "fixed"),
        bound_probe=not args.no_bound_probe,
        seed=args.seed,
    ).check()


def run(args: argparse.Namespace) -> int:
    from fabricprobe.engine.session import run_sweep

    if args.launches is not None:
        return _launches(args)
    launch_options = (("-n", args.ranks), ("--mpiexec", args.mpiexec), ("--mpiexec-args", args.mpiexec_args))
    given = [option for option, value in launch_options if value]
    if given:
        raise UsageError(f"{', '.join(given)} go with --launches K (this sweep runs under its own launcher)")
    if args.resume and args.output:
        raise UsageError("--resume continues a run in its own file; do not combine it with -o/--output")
    if args.run and not args.resume:
        raise UsageError("--run selects the run to resume; it needs --resume FILE")
    config = build_config(args)
    outcome = run_sweep(
        config,
        args.resume or args.output or DEFAULT_OUTPUT,
        resume=bool(args.resume),
        run_id=args.run,
        progress=args.progress,
    )
    if outcome.is_root and outcome.exit_code not in INTERRUPTED_STATUSES:
        if not args.quiet:  # rank 0 alone reads the run back and draws it (the report, rich); --quiet: nothing
            from fabricprobe.console import make_console
            from fabricprobe.report.tables import render_end_of_sweep
            from fabricprobe.store import load_runs, select_run

            render_end_of_sweep(select_run(load_runs(outcome.path), outcome.run_id, outcome.path), make_console())
        if outcome.failed:
            warn_line(f"{outcome.failed} point(s) failed validation or raised errors; exit status 1")
        print(f"fabricprobe: results in {outcome.path} (run {outcome.run_id})", file=sys.stderr, flush=True)
    return outcome.exit_code


def _launches(args: argparse.Namespace) -> int:
    """sweep --launches K: launch the sweep K times from here (engine/launches.py), then report the
    spread between launches."""
    from fabricprobe.console import make_console
    from fabricprobe.engine.launches import run_launches
    from fabricprobe.mpienv.launcher import launched_by_mpiexec, launcher
    from fabricprobe.mpienv.library import library_of_this_python
    from fabricprobe.report.launches import group_of, render_launches
    from fabricprobe.store import check_output_path, load_runs

    if launched_by_mpiexec():
        raise UsageError("--launches K launches the sweep K times itself: run it outside mpiexec/srun, with -n N")
    if args.resume:
        raise UsageError("--launches makes new runs; finish an interrupted one with --resume alone")
    if args.ranks is None:
        raise UsageError("--launches K needs -n N, the ranks of each launch")
    config = build_config(args)
    path = args.output or DEFAULT_OUTPUT
    check_output_path(path)
    base = launcher(args.mpiexec, args.mpiexec_args, args.ranks, library_of_this_python().vendor)
    outcome = run_launches(config, path, args.launches, base)
    for x in outcome.launches:
        if x.error:
            warn_line(f"launch {x.index + 1} (seed {x.seed}) ended with status {x.returncode}: {x.error}")
    runs = load_runs(path) if os.path.exists(path) else []
    mine = [r for r in runs if r.config.get("launch_group") == outcome.group]
    if mine and not args.quiet:
        render_launches(group_of(runs, mine[0]), make_console())
    print(
        f"fabricprobe: {len(mine)} launch(es) of group {outcome.group} in {path} "
        f"(runs {', '.join(r.id for r in mine) or 'none'})",
        file=sys.stderr,
        flush=True,
    )
    return outcome.exit_code


def _ranks_per_node(text: str | None) -> list[int] | None:
    """--ranks-per-node's node sizes (None: the hardware's); the topology module is imported only if asked."""
    if text is None:
        return None
    from fabricprobe.mpienv.topology import parse_ranks_per_node

    return parse_ranks_per_node(text)
