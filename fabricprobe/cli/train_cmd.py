"""`fabricprobe train NAME`: a minimal real trainer on fabricprobe's collectives (see docs/trainers.md)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from fabricprobe.choices import list_items
from fabricprobe.cli.parser import HelpFormatter
from fabricprobe.errors import UsageError
from fabricprobe.inputs import LARGEST, path_type, real_type, whole, whole_type
from fabricprobe.mpienv.init import THREAD_LEVELS


def _positive_int(option: str, hi: int = LARGEST):
    return whole_type(option, 1, hi)


def _hidden(text: str) -> tuple[int, ...]:
    return tuple(whole(t, "--hidden", 1, 1 << 16) for t in list_items(text, "--hidden"))


def add_parser(sub: Any) -> None:
    from trainers import TRAINERS
    from trainers.data import DATASETS

    p = sub.add_parser(
        "train",
        formatter_class=HelpFormatter,
        help="train a small DNN on the tuned collective",
        description="Train an MLP on real data with one of fabricprobe's trainers, under mpiexec:\n"
        "  mpiexec -n 2 fabricprobe train dp_sgd\n"
        "  mpiexec -n 2 fabricprobe train sparse_dp --density 0.01\n"
        "  mpiexec -n 3 fabricprobe train easgd --mode fcfs --tau 4\n"
        "  mpiexec -n 4 fabricprobe train hybrid --stages 2 --micro-batches 4\n"
        "Each run appends per-step loss, test accuracy, compute/communication/wait\n"
        "times, bytes sent and the provenance to the results file (/training/NNNN).",
    )
    p.add_argument("trainer", choices=TRAINERS, help="dp_sgd, easgd, sparse_dp or hybrid")
    p.add_argument(
        "-o", "--output", type=path_type(), default="fabricprobe.h5", metavar="FILE", help="results file (appended)"
    )
    p.add_argument("--dataset", choices=DATASETS, default="digits", help="digits (8×8), mnist5k (28×28) or synthetic")
    p.add_argument("--samples", type=_positive_int("--samples", 10**7), default=4000, help="synthetic dataset size")
    p.add_argument("--epochs", type=_positive_int("--epochs", 10**6), default=30, help="passes over the training set")
    p.add_argument(
        "--batch",
        type=_positive_int("--batch", 10**7),
        default=64,
        help="global batch (split across the computing ranks)",
    )
    p.add_argument("--lr", type=real_type("--lr", 0, 1e6, lo_open=True), default=0.1, help="learning rate")
    p.add_argument("--hidden", type=_hidden, default=(128, 64), metavar="LIST", help="hidden layer widths")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="parameter and gradient type")
    p.add_argument(
        "--seed", type=whole_type("--seed", 0, 2**32 - 1), default=0, help="initialisation and batch order seed"
    )
    p.add_argument(
        "--eval-every",
        type=_positive_int("--eval-every"),
        default=50,
        metavar="STEPS",
        help="test accuracy every N steps",
    )
    p.add_argument(
        "--target",
        type=real_type("--target", 0, 1),
        default=0.0,
        help="stop once the test accuracy reaches this (0: never)",
    )
    p.add_argument(
        "--allreduce",
        default="tuned",
        metavar="NAME",
        help="gradient allreduce: tuned ($FABRICPROBE_SELECTION), library, or a hand-written one",
    )
    p.add_argument(
        "--selection",
        default="",
        metavar="FILE",
        help="selection file for tuned (default: $FABRICPROBE_SELECTION), written by fabricprobe tune",
    )
    p.add_argument(
        "--ranks-per-node",
        metavar="K|LIST",
        help="virtual topology, as tuned with tune-sweep --ranks-per-node (default: the hardware's)",
    )
    p.add_argument(
        "--device",
        choices=("host", "cupy"),
        default="host",
        help="model, data and gradients in host memory or on a GPU (CuPy; direct if the MPI is CUDA-aware, "
        "else staged through host memory): dp_sgd, hybrid, easgd --mode sync",
    )
    p.add_argument(
        "--assume-cuda-aware",
        action="store_true",
        help="--device cupy: hand device buffers to the MPI although it does not say it is CUDA-aware",
    )
    p.add_argument(
        "--bucket-bytes",
        type=whole_type("--bucket-bytes", 0),
        default=0,
        metavar="BYTES",
        help="dp_sgd fusion buckets (0: one call)",
    )
    p.add_argument("--mode", default="sync", help="easgd: sync, fcfs or round_robin")
    p.add_argument("--tau", type=whole_type("--tau", 1, 10**6), default=4, help="easgd: communication period in steps")
    p.add_argument(
        "--alpha",
        type=real_type("--alpha", 0, 1),
        default=0.0,
        help="easgd: elastic coefficient α = ηρ (0: 0.9 / workers)",
    )
    p.add_argument(
        "--density",
        type=real_type("--density", 0, 1, lo_open=True),
        default=None,
        help=f"sparse_dp: fraction of the gradient sent (default {SPARSE_DP_DENSITY})",
    )
    p.add_argument(
        "--sparse-algorithm",
        default="topk_allgather",
        metavar="NAME",
        help="sparse_dp: sparse allreduce, or tuned (the selection's for the density and size)",
    )
    p.add_argument("--no-error-feedback", action="store_true", help="sparse_dp: drop what is not sent (ablation)")
    p.add_argument("--stages", type=whole_type("--stages", 1, 1 << 16), default=2, help="hybrid: pipeline stages")
    p.add_argument(
        "--micro-batches",
        type=whole_type("--micro-batches", 1, 1 << 16),
        default=4,
        help="hybrid: micro-batches per replica and step",
    )
    p.add_argument("--thread-level", choices=THREAD_LEVELS, default="single", help="MPI thread level to request")
    p.add_argument(
        "--progress",
        choices=("auto", "rich", "plain", "none"),
        default="auto",
        help="rank 0's progress: a live bar (rich; auto on a terminal), a line per evaluation (plain), or none",
    )
    p.set_defaults(handler=run)


SPARSE_DP_DENSITY = 0.01  # --density's default: trainers.core.Options.density (not imported here: start-up)


def sparse_density(args: argparse.Namespace) -> float:
    """--density for sparse_dp; given to another trainer, which never reads it: refused."""
    if args.density is not None and args.trainer != "sparse_dp":
        raise UsageError(f"--density: only sparse_dp reads it, not {args.trainer}")
    return SPARSE_DP_DENSITY if args.density is None else args.density


def _options(args: argparse.Namespace):
    from fabricprobe.mpienv.topology import parse_ranks_per_node
    from trainers.core import Options

    if not args.lr > 0:
        raise UsageError(f"invalid --lr {args.lr}: must be positive")
    if not 0 <= args.target <= 1:
        raise UsageError(f"invalid --target {args.target}: an accuracy between 0 and 1")
    return Options(
        dataset=args.dataset,
        epochs=args.epochs,
        batch=args.batch,
        lr=args.lr,
        hidden=args.hidden,
        seed=args.seed,
        eval_every=args.eval_every,
        dtype=args.dtype,
        samples=args.samples,
        allreduce=args.allreduce,
        selection=args.selection,
        ranks_per_node=tuple(parse_ranks_per_node(args.ranks_per_node)) if args.ranks_per_node is not None else (),
        device=args.device,
        bucket_bytes=args.bucket_bytes,
        tau=args.tau,
        alpha=args.alpha,
        mode=args.mode,
        density=sparse_density(args),
        sparse_algorithm=args.sparse_algorithm,
        error_feedback=not args.no_error_feedback,
        stages=args.stages,
        micro_batches=args.micro_batches,
        target=args.target,
    )


def build(name: str, comm, data, opts, device=None):
    from trainers.dp_sgd import DPSGD
    from trainers.easgd import EASGD
    from trainers.hybrid import Hybrid
    from trainers.sparse_dp import SparseDP

    if device is not None and device.kind != "host":
        return {"dp_sgd": DPSGD, "easgd": EASGD, "hybrid": Hybrid}[name](comm, data, opts, device)
    return {"dp_sgd": DPSGD, "easgd": EASGD, "sparse_dp": SparseDP, "hybrid": Hybrid}[name](comm, data, opts)


def run(args: argparse.Namespace) -> int:
    from fabricprobe.console import set_rank
    from fabricprobe.store.writer import check_output_path
    from trainers.data import load

    opts = _options(args)
    if opts.device != "host" and (args.trainer == "sparse_dp" or (args.trainer == "easgd" and opts.mode != "sync")):
        raise UsageError(
            f"--device {opts.device}: dp_sgd, hybrid and easgd --mode sync (sparse_dp selects top-k and keeps "
            "its error feedback on the host; async EASGD's non-blocking exchanges are not staged)"
        )
    from fabricprobe.mpienv.launcher import env_rank

    if env_rank() == 0:
        check_output_path(args.output)
    data = load(opts.dataset, dtype=opts.dtype, seed=opts.seed, samples=opts.samples)
    if opts.batch > data.y_train.size:
        raise UsageError(f"invalid --batch {opts.batch}: the training set has {data.y_train.size} samples")
    from fabricprobe.mpienv import provenance, topology
    from fabricprobe.mpienv.init import init_mpi
    from fabricprobe.mpienv.library import identify_library
    from trainers.device import open_device

    MPI = init_mpi(args.thread_level)
    comm = MPI.COMM_WORLD
    set_rank(comm.rank)
    topo = topology.detect(comm)
    if opts.ranks_per_node:  # before the trainer loads a selection: it is checked against this shape
        topo = topology.virtual(topo, topology.node_sizes(list(opts.ranks_per_node), comm.size))
    topology.set_active(comm, topo)
    device = open_device(
        opts.device,
        topo.local_rank[comm.rank],
        identify_library(MPI.Get_library_version()).vendor,
        args.assume_cuda_aware,
    )
    trainer = build(args.trainer, comm, data, opts, device)
    prov = provenance.collect(MPI, comm, topo, args.thread_level)
    return _train(args, comm, trainer, prov)


def _train(args, comm, trainer, prov) -> int:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from fabricprobe import tuned
    from fabricprobe.console import make_console
    from fabricprobe.sizes import format_size
    from trainers import core, record

    console = make_console(stderr=True)
    show = comm.rank == 0 and (args.progress == "rich" or (args.progress == "auto" and console.is_terminal))
    plain = comm.rank == 0 and (args.progress == "plain" or (args.progress == "auto" and not console.is_terminal))
    bar = Progress(
        TextColumn(f"[bold]{args.trainer}[/] {trainer.opts.dataset}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} steps  test acc {task.fields[acc]}"),
        TimeElapsedColumn(),
        console=console,
        disable=not show,
    )
    task = bar.add_task("train", total=None, acc="-")

    def progress(step: int, total: int, acc: float) -> None:
        bar.update(task, completed=step, total=total, acc=f"{acc:.3f}")
        if plain:
            print(f"[{step:>6}/{total}] {args.trainer}: test accuracy {acc:.4f}", file=sys.stderr, flush=True)

    comm.Barrier()
    t0 = time.perf_counter()
    with bar:
        log, final_acc = core.run(trainer, progress if comm.rank == 0 else None)
    wall = time.perf_counter() - t0
    logs = comm.gather(log, root=0)
    if comm.rank != 0:
        return 0
    steps, evals, per_rank, working = record.combine(logs, trainer.opts.batch)
    buckets = record.bucket_table(logs)
    used = record.algorithms_used(buckets)
    totals = record.summary(steps)
    attrs = {
        **prov,
        **trainer.opts.as_attrs(),
        **trainer.describe(),
        **trainer.device.describe(),
        **totals,
        "trainer": args.trainer,
        "dataset_source": trainer.data.source,
        "final_test_accuracy": final_acc,
        "wall_s": wall,
        "working_ranks": working,
        "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "") or os.environ.get("OMP_NUM_THREADS", ""),
        "status": "complete",
        "parameters": int(trainer.model.params.size),
        "algorithms_used": used,
        "selection_file": tuned.loaded_from() or "",
    }
    from fabricprobe.console import warn_line

    written, run_id = record.write(args.output, attrs, steps, evals, per_rank, buckets, say=warn_line)
    out = make_console()
    out.print(
        f"[bold]{args.trainer}[/] on {trainer.opts.dataset}, {comm.size} rank(s), {trainer.describe()['collective']}: "
        f"test accuracy [bold]{final_acc:.4f}[/] after {steps.size} steps in {wall:.1f} s; "
        f"compute {totals['compute_s']:.2f} s, communication {totals['comm_s']:.2f} s, waiting "
        f"{totals['wait_s']:.2f} s (communication + waiting {100 * totals['comm_fraction']:.0f}% of step time); "
        f"{totals['bytes_sent_per_step'] / 1024:.1f} KiB sent per rank and step"
    )
    if used:
        ran = "; ".join(f"{alg} at {', '.join(format_size(b) for b in sizes)}" for alg, sizes in used.items())
        out.print(f"gradient collective per bucket size: {ran}", markup=False, highlight=False)
    out.print(f"fabricprobe: training run {run_id} in {written}")
    return 0
