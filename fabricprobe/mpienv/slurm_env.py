"""What Slurm tells a process through its environment: whether it runs inside an allocation (salloc,
sbatch: tune-sweep then launches its jobs as steps with srun) or inside a step (srun: a rank), the
job's identity and placement for provenance, and the srun flags a library's ranks need to find each
other. Pure reads of os.environ; nothing here talks to the scheduler."""

from __future__ import annotations

import os
import re

# srun's PMI plugin per library: Open MPI 4.1/5.0 speak PMIx; MPICH (Debian's 4.0, built with hydra's
# simple PMI) speaks PMI-2's wire protocol, which Slurm's pmi2 plugin serves.
MPI_PLUGIN = {"Open MPI": "pmix", "MPICH": "pmi2", "Intel MPI": "pmi2"}

# recorded with every run launched by Slurm (absent variables are left out)
PROVENANCE_VARS = (
    "SLURM_CLUSTER_NAME",
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "SLURM_JOB_NODELIST",
    "SLURM_JOB_NUM_NODES",
    "SLURM_NTASKS",
    "SLURM_TASKS_PER_NODE",
    "SLURM_JOB_PARTITION",
    "SLURM_CPU_BIND",
    "SLURM_CPU_BIND_TYPE",
    "SLURM_DISTRIBUTION",
    "SLURM_MPI_TYPE",
    "SLURM_SUBMIT_HOST",
)


def in_allocation() -> bool:
    """Inside salloc or an sbatch script, but not inside one of its steps."""
    return "SLURM_JOB_ID" in os.environ and not in_step()


def in_step() -> bool:
    """A task of an srun step (a rank when srun launched MPI). An sbatch script runs in the "batch"
    step, which is the allocation's shell, not a rank."""
    step = os.environ.get("SLURM_STEP_ID")
    # Slurm numbers its own steps from 0xFFFFFFF0 up (batch 0xFFFFFFFB, extern 0xFFFFFFFC, interactive
    # ...): those are not srun steps. Slurm 22.05's batch shell has no SLURM_STEP_ID at all.
    return step is not None and step.isdigit() and int(step) < 0xFFFFFFF0 and "SLURM_PROCID" in os.environ


def srun_flags(vendor: str, user_args: list[str]) -> list[str]:
    """--mpi=PLUGIN for the library, unless the user gave one (or the site set SLURM_MPI_TYPE)."""
    if any(a.startswith("--mpi") for a in user_args) or os.environ.get("SLURM_MPI_TYPE"):
        return []
    plugin = MPI_PLUGIN.get(vendor)
    return [f"--mpi={plugin}"] if plugin else []


# srun options with which the user (or --mpiexec-args) already placed the tasks
PLACEMENT_OPTIONS = ("-N", "--nodes", "-w", "--nodelist", "-m", "--distribution", "--ntasks-per-node")


def tasks_per_node() -> list[int]:
    """The allocation's task slots per node, in node order, from SLURM_TASKS_PER_NODE ("2(x3),1" is
    [2, 2, 2, 1]); [] when absent or not in that form."""
    found: list[int] = []
    for part in os.environ.get("SLURM_TASKS_PER_NODE", "").split(","):
        match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if match is None:
            return []
        found += [int(match[1])] * int(match[2] or 1)
    return found


def step_nodes(prefix: list[str], n: int) -> list[str]:
    """["-N", K] for an srun step of n tasks inside an allocation: the K first nodes that n tasks fill
    slot by slot, as mpiexec fills a host file. Without it srun spreads a smaller step over every node
    of the allocation (measured in the lab: `srun -n 2` in a 2 × 2 allocation ran one task per node),
    so a tuning rule measured on the 2 ranks of one node (tune-sweep's sub-communicator) would be
    verified on two. [] for other launchers, outside an allocation, or when the user placed the tasks."""
    if not prefix or os.path.basename(prefix[0]) != "srun" or not in_allocation():
        return []
    # "--nodes=2", and a short option with its value attached ("-N2") as srun accepts it
    if any(a.split("=")[0] in PLACEMENT_OPTIONS or a[:2] in PLACEMENT_OPTIONS for a in prefix[1:]):
        return []
    filled = 0
    for count, slots in enumerate(tasks_per_node(), start=1):
        filled += slots
        if filled >= n:
            return ["-N", str(count)]
    return []


def provenance() -> dict[str, str]:
    """{"scheduler": "slurm", job id, node list, binding, ...} when Slurm launched this process, else {}."""
    if "SLURM_JOB_ID" not in os.environ:
        return {}
    found = {v[len("SLURM_") :].lower(): os.environ[v] for v in PROVENANCE_VARS if v in os.environ}
    return {"scheduler": "slurm", **found}


def node_and_local_rank() -> tuple[str, int] | None:
    """(node name, local rank) as Slurm placed this task, None outside a step."""
    if not in_step():
        return None
    node, local = os.environ.get("SLURMD_NODENAME"), os.environ.get("SLURM_LOCALID")
    if node is None or local is None or not local.isdigit():
        return None
    return node, int(local)
