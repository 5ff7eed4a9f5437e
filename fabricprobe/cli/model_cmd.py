"""`fabricprobe model FILE`: the α-β-γ cost model fitted to a run, checked against it, and
extrapolated to machines you do not have."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from fabricprobe.choices import choice_list, list_items
from fabricprobe.cli.parser import HelpFormatter
from fabricprobe.costmodel.predict import modelled_collectives
from fabricprobe.errors import UsageError
from fabricprobe.inputs import is_digits
from fabricprobe.sizes import size_list

MAX_RANKS = 65536
DEFAULT_SCALES = "16x4,64x8,256x16,1024x64"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "model",
        formatter_class=HelpFormatter,
        help="fit the α-β-γ cost model to a run and extrapolate",
        description="Fit α and β (per link level) from a run's ping-pong points and γ from its reduce_local\n"
        "points; print every hand-written algorithm's predicted time beside the measured one,\n"
        "the predicted and measured crossover sizes, and predictions for larger machines.\n"
        "Model: docs/cost-model.md; every algorithm's formula: docs/algorithms.md.",
    )
    p.add_argument("file", metavar="FILE", help="results file written by fabricprobe sweep")
    p.add_argument("--run", metavar="ID", help="the run to model (default: the last one)")
    p.add_argument(
        "--collectives",
        default="allreduce,sparse_allreduce",
        metavar="LIST",
        help=f"collectives to model: {', '.join(modelled_collectives())}",
    )
    p.add_argument(
        "--scale",
        default=DEFAULT_SCALES,
        metavar="LIST",
        help=f"machines to predict, as NODESxRANKS_PER_NODE, up to {MAX_RANKS:,} ranks",
    )
    p.add_argument("--sizes", default="8,1K,64K,1M,16M,256M", metavar="LIST", help="sizes of the prediction tables")
    p.add_argument(
        "--software",
        action="store_true",
        help="include fabricprobe's Python per-message and per-reduction costs in the larger-machine "
        "predictions (default: the algorithms alone)",
    )
    p.add_argument(
        "--no-nic-sharing",
        action="store_true",
        help="do not assume the g concurrent inter-node flows of a node share its link",
    )
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(handler=run)


def parse_scales(text: str) -> list[tuple[int, int]]:
    out = []
    for item in list_items(text, "--scale"):
        nodes, sep, per_node = item.lower().partition("x")
        if not sep or not is_digits(nodes) or not is_digits(per_node) or int(nodes) < 1 or int(per_node) < 1:
            raise UsageError(f"invalid scale {item!r}: expected NODESxRANKS_PER_NODE such as 1024x64")
        if int(nodes) * int(per_node) > MAX_RANKS:
            raise UsageError(
                f"scale {item} has {int(nodes) * int(per_node):,} ranks; the model goes up to {MAX_RANKS:,}"
            )
        out.append((int(nodes), int(per_node)))
    if not out:
        raise UsageError("empty --scale list")
    return out


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from fabricprobe import collectives as registry
    from fabricprobe.console import make_console
    from fabricprobe.costmodel.analysis import at_scale, compare, run_shape
    from fabricprobe.costmodel.fit import fit_run
    from fabricprobe.costmodel.render import render, to_json
    from fabricprobe.costmodel.sparse_analysis import compare_sparse, crossover_at_scale
    from fabricprobe.store import load_runs, select_run

    colls = choice_list(args.collectives, modelled_collectives(), "collective")
    scales = parse_scales(args.scale)
    sizes = size_list(args.sizes)
    run_ = select_run(load_runs(args.file), args.run, args.file)
    fitted = fit_run(run_.points, f"run {run_.id} of {args.file}")
    if args.no_nic_sharing:
        fitted = replace(fitted, params=replace(fitted.params, nic_sharing=False))
    shape = run_shape(run_.attrs)
    dense = [c for c in colls if c != "sparse_allreduce"]
    # sub-communicator points (--comm-sizes) have another shape than the one modelled
    whole = [p for p in run_.points if p["nranks"] == int(run_.attrs.get("nranks", 0) or 0)]
    comparisons = compare(whole, fitted, *shape, collectives=dense)
    predictions = [
        at_scale(c, registry.names_for(c), n, g, fitted, sizes, software=args.software)
        for c in dense
        for n, g in scales
    ]
    sparse, sparse_scales = [], []
    if "sparse_allreduce" in colls:
        sparse = compare_sparse(run_.points, fitted, *shape)
        sparse_scales = [(n, g, crossover_at_scale(n, g, fitted, sizes, software=args.software)) for n, g in scales]
    if args.format == "json":
        sys.stdout.write(to_json(fitted, shape, comparisons, predictions, sparse, sparse_scales))
    else:
        render(make_console(), fitted, shape, comparisons, predictions, sparse, sparse_scales)
    return 0
