"""`fabricprobe info`: which MPI library, launcher, hosts and GPU support, on one screen; the
provenance every run stores behind --all and --json."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from typing import Any

from fabricprobe.cli.parser import HelpFormatter
from fabricprobe.console import set_rank
from fabricprobe.mpienv.init import THREAD_LEVELS, init_mpi
from fabricprobe.text import as_text


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "info",
        formatter_class=HelpFormatter,
        help="which MPI library, launcher, hosts and GPU support",
        description="Say which MPI library mpi4py loaded (and from which file), whether it is the "
        "launcher's, the job's hosts and GPU support, on one screen; --all prints everything a sweep "
        "stores about where and how it ran. Run it under mpirun or srun to see the job's layout.",
    )
    p.add_argument("--thread-level", choices=THREAD_LEVELS, default="single", help="MPI thread level to request")
    p.add_argument("--all", action="store_true", help="every fact a run stores (its provenance), as a panel")
    p.add_argument("--json", action="store_true", help="every fact a run stores, as JSON")
    p.set_defaults(handler=run)


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return "\n".join(f"{k}={v}" for k, v in value.items()) or "(none)"
    if isinstance(value, list):
        return (
            ", ".join(map(str, value)) if len(value) <= 16 else f"{', '.join(map(str, value[:16]))}, … ({len(value)})"
        )
    return str(value)


def hosts_line(hosts: list[str], shown: int = 3) -> str:
    """ "2 nodes: a (32 ranks), b (32 ranks)", the first `shown` hosts named."""
    counts = Counter(hosts)
    named = ", ".join(f"{h} ({n} rank{'s' * (n != 1)})" for h, n in list(counts.items())[:shown])
    more = f", … {len(counts) - shown} more" if len(counts) > shown else ""
    return f"{len(counts)} node{'s' * (len(counts) != 1)}: {named}{more}"


def launcher_line(started: Any, launched: int | None, world: int) -> str:
    if started is None:
        return "none (this process alone: run it under mpirun or srun to see the job)"
    if launched is not None and launched != world:
        return f"{started.name}, {launched} ranks launched, {world} in MPI's world"
    return f"{started.name}, {world} rank{'s' * (world != 1)}"


def answer(prov: dict[str, Any], library: str, mpi4py_build: str, started: str) -> list[tuple[str, str]]:
    """The one-screen answer: what a user acts on first."""
    return [
        ("MPI library", f"{prov['mpi_vendor']} {prov['mpi_version']} (MPI {prov['mpi_standard']})"),
        ("loaded from", library),
        ("mpi4py", f"{prov['mpi4py_version']}, {mpi4py_build}"),
        ("launcher", started),
        ("hosts", hosts_line(list(prov["hosts"]))),
        ("GPU support", str(prov["cuda"])),
        ("thread level", f"{prov['thread_level_provided']} (asked: {prov['thread_level_requested']})"),
    ]


def run(args: argparse.Namespace) -> int:
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table

    from fabricprobe.console import make_console, warn_line
    from fabricprobe.mpienv import library_check, provenance, topology
    from fabricprobe.mpienv.launcher import env_rank, env_size

    MPI = init_mpi(args.thread_level)
    comm = MPI.COMM_WORLD
    set_rank(comm.rank)
    topo = topology.detect(comm)
    prov = provenance.collect(MPI, comm, topo, args.thread_level)
    library = library_check.loaded_library()
    apart = library_check.mismatch(prov["mpi_vendor"], library, comm.size)
    if comm.rank != 0 or (apart and env_rank() != 0):  # ranks started alone: the launcher's rank 0 speaks
        return 0
    if args.json:
        print(json.dumps(prov, indent=1))
        return 0
    console = make_console()
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(overflow="fold")
    if args.all:
        for key, value in prov.items():
            table.add_row(key, escape(as_text(_value(value))))
        console.print(Panel(table, title="fabricprobe info", expand=False))
    else:
        job = launcher_line(library_check.launcher(), env_size(), comm.size)
        for key, value in answer(prov, library, library_check.mpi4py_build(MPI), job):
            table.add_row(key, escape(as_text(value)))
        console.print(table)
        console.print("everything a run stores about where it ran: fabricprobe info --all (or --json)")
    for line in (apart, provenance.build_mismatch(prov)):
        if line:
            warn_line(line)
    return 1 if apart else 0
