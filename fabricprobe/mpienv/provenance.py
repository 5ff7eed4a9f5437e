"""What every run records about where and how it ran (the `info` command prints the same)."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import sys
from typing import Any

from fabricprobe import lab as fabric_lab
from fabricprobe.mpienv import gpu_info, slurm_env
from fabricprobe.mpienv.init import provided_thread_level, startup_record
from fabricprobe.mpienv.library import library_info
from fabricprobe.mpienv.topology import Topology
from fabricprobe.timing import native
from fabricprobe.version import __version__

ENV_PREFIXES = (
    "OMPI_MCA_",
    "PRTE_MCA_",
    "PMIX_MCA_",
    "MPIR_CVAR_",
    "MPICH_",
    "I_MPI_",
    "UCX_",
    "FI_",
    "NCCL_",
    "HYDRA_",
    "MPI4PY_",
    "FABRICPROBE_",
)
_ENV_SKIP = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def mpi_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """MPI, fabric and NCCL settings from the environment (they change what is measured)."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in sorted(env.items()) if k.startswith(ENV_PREFIXES) and k not in _ENV_SKIP}


def _version(package: str) -> str:
    """The version of a package the run uses: the loaded module's own, else the installed one's
    (importlib.metadata: 20 ms of imports and a scan of the path, on rank 0 alone)."""
    found = getattr(sys.modules.get(package), "__version__", None)
    if isinstance(found, str):
        return found
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def loaded_version(package: str) -> str:
    """The version of a package this process loaded, "not loaded" if it loaded none: Numba, which only
    fabricprobe's own algorithms' kernels load (a sweep records it when it ends)."""
    module = sys.modules.get(package)
    return str(getattr(module, "__version__", "unknown")) if module is not None else "not loaded"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def transparent_hugepages() -> str:
    """The kernel's THP mode (always, madvise, never): it changes large-message copy speed."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            text = f.read()
    except OSError:
        return "unknown"
    start, end = text.find("["), text.find("]")
    return text[start + 1 : end] if 0 <= start < end else text.strip()


def built_for(MPI: Any) -> str:
    """The MPI mpi4py was compiled against (its mpi.h), e.g. "Open MPI 4.1.4"."""
    try:
        vendor, version = MPI.get_vendor()
    except AttributeError:
        return ""
    return f"{vendor} {'.'.join(map(str, version))}"


def build_mismatch(prov: dict[str, Any]) -> str:
    """A line when mpi4py was built for another library (or major.minor) than the one it loaded:
    a library path swapped under a built mpi4py, or a pip cache's mpi4py built for another MPI."""
    built = prov.get("mpi4py_built_for") or ""
    if not built:
        return ""
    running = f"{prov['mpi_vendor']} {prov['mpi_version']}"
    vendor_b, _, version_b = built.rpartition(" ")
    same = vendor_b == prov["mpi_vendor"] and version_b.split(".")[:2] == str(prov["mpi_version"]).split(".")[:2]
    if same:
        return ""
    return (
        f"mpi4py was built for {built} but loaded {running}: install mpi4py's binary wheel, which loads the "
        "library it finds (pip install --force-reinstall --only-binary=mpi4py mpi4py; docs/site.md), or "
        "rebuild it against the library you run"
    )


def collect(
    MPI: Any,
    comm: Any,
    topo: Topology,
    thread_requested: str,
    argv: list[str] | None = None,
    asked: Any = None,
) -> dict[str, Any]:
    """The provenance of a run on `comm` (call on every rank; values are rank 0's view). Ranks other
    than 0 get only what every rank uses (the library, the placement, oversubscription, the thread
    level): the rest (software versions, the library's build, the OS, CPU and environment, CUDA
    support) is asked by rank 0 alone, since at scale every rank asking is every rank's file-system
    lookups at once (docs/scale.md, "Start-up"). `asked`: the library's build tools rank 0 started
    earlier (build.Asked), else they are started here."""
    lib = library_info(MPI)
    nat = native.load(MPI)
    hw = topo.hardware
    lab = _lab_record()
    gpus = gpu_info.devices()
    rank_gpus = comm.allgather(gpus.get("gpu_device", -1))
    # Emulated hosts share one machine's cores: oversubscription is counted against the machine.
    oversubscribed = topo.oversubscribed or bool(lab and comm.size > int(lab.get("machine_cores") or comm.size))
    startup = startup_record(comm)
    shared = {
        **({"startup": startup} if startup else {}),
        "fabricprobe_version": __version__,
        "mpi_vendor": lib.vendor,
        "mpi_version": lib.version,
        "mpi_library_version": lib.version_string,
        "mpi_standard": lib.mpi_standard,
        "mpi4py_built_for": built_for(MPI),
        "placement_check": topo.placement,
        "thread_level_requested": thread_requested,
        "thread_level_provided": provided_thread_level(MPI),
        "nranks": comm.size,
        "nnodes": hw.nnodes,
        "hosts": list(topo.hosts),
        "rank_cpus": list(topo.cpus),
        "ranks_per_node": hw.ranks_per_node,
        "cores_per_node": list(hw.cores_per_node),
        "virtual_topology": topo.virtual,
        "rank_nodes": list(topo.node_of),
        "topology_ranks_per_node": topo.ranks_per_node,
        "oversubscribed": oversubscribed,
        "lab": lab["description"] if lab else "",
        "gpu": gpus,
        "rank_gpus": rank_gpus,
        "lab_spec": _json(lab) if lab else "",
        "topology": topo.describe(),
        "wtick_s": MPI.Wtick(),
        "wtime_is_global": bool(comm.Get_attr(MPI.WTIME_IS_GLOBAL) or False),
        "native_timer": nat is not None,
        "native_timer_unavailable": native.unavailable_reason() or "",
    }
    return shared | _asked_by_rank_0(lib, gpus, argv, asked) if comm.rank == 0 else shared


def _asked_by_rank_0(lib: Any, gpus: dict[str, Any], argv: list[str] | None, asked: Any) -> dict[str, Any]:
    aware, aware_how = gpu_info.cuda_aware(lib.vendor)
    built, built_how = gpu_info.library_built_with_cuda(lib.vendor, lib.version_string)
    from fabricprobe.mpienv import build  # its tools and subprocess: rank 0's alone

    mpi_build = (asked or build.Asked(lib.vendor, lib.version_string)).result()
    job = slurm_env.provenance()
    return {
        "mpi_build": _json(mpi_build) if mpi_build else "",
        "scheduler": job.get("scheduler", ""),
        "scheduler_job": _json(job) if job else "",
        "mpi4py_version": _version("mpi4py"),
        "numpy_version": _version("numpy"),
        "h5py_version": _version("h5py"),
        "numba_version": loaded_version("numba"),
        "python_version": platform.python_version(),
        "cuda_aware": aware,
        "cuda_aware_method": aware_how,
        "cuda_library": built,  # built with CUDA support, whatever it answers at run time
        "cuda_library_method": built_how,
        "cuda": gpu_info.summary(aware, built, gpus),
        "command_line": " ".join(argv if argv is not None else sys.argv),
        "cpu_model": cpu_model(),
        "transparent_hugepages": transparent_hugepages(),
        "os": platform.platform(),
        "environment": mpi_environment(),
    }


def _json(value: Any) -> str:
    import json  # only for what is there to write (a lab, a build, a scheduler's job): not on every rank

    return json.dumps(value)


def _lab_record() -> dict | None:
    """The fabric lab's record where a lab launched this rank (lab/state.py, only then imported)."""
    if not os.environ.get(fabric_lab.ENV_VAR):
        return None
    from fabricprobe.lab import state

    return state.from_environment()
