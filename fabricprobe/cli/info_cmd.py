"""`fabricprobe info`: the provenance every run stores, as a panel."""

from __future__ import annotations

import argparse
import json
from typing import Any

from fabricprobe.cli.parser import HelpFormatter
from fabricprobe.console import set_rank
from fabricprobe.mpienv.init import THREAD_LEVELS, init_mpi


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "info",
        formatter_class=HelpFormatter,
        help="show the MPI library, ranks, hosts and settings",
        description="Print the provenance that every sweep stores: MPI library and version, thread\n"
        "levels, ranks, hosts, cores, oversubscription, timer and MPI environment.\n"
        "Run it under mpiexec to see the job's layout.",
    )
    p.add_argument("--thread-level", choices=THREAD_LEVELS, default="single", help="MPI thread level to request")
    p.add_argument("--json", action="store_true", help="print JSON instead of a panel")
    p.set_defaults(handler=run)


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return "\n".join(f"{k}={v}" for k, v in value.items()) or "(none)"
    if isinstance(value, list):
        return (
            ", ".join(map(str, value)) if len(value) <= 16 else f"{', '.join(map(str, value[:16]))}, … ({len(value)})"
        )
    return str(value)


def run(args: argparse.Namespace) -> int:
    from rich.panel import Panel
    from rich.table import Table

    from fabricprobe.console import make_console
    from fabricprobe.mpienv import provenance, topology

    MPI = init_mpi(args.thread_level)
    comm = MPI.COMM_WORLD
    set_rank(comm.rank)
    topo = topology.detect(comm)
    prov = provenance.collect(MPI, comm, topo, args.thread_level)
    if comm.rank != 0:
        return 0
    if args.json:
        print(json.dumps(prov, indent=1))
        return 0
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in prov.items():
        table.add_row(key, _value(value))
    console = make_console()
    console.print(Panel(table, title="fabricprobe info", expand=False))
    mismatch = provenance.build_mismatch(prov)
    if mismatch:
        console.print(f"[yellow]warning:[/] {mismatch}")
    return 0
