"""A site's MPI module, for Debian's libraries: what `module load openmpi` (or `mpich`) does on a
cluster — the library's folder first on LD_LIBRARY_PATH, its mpirun first on PATH — so the README's
site path runs here as written. noxfile.py's site sessions set the same environment (runpy), and
tests/site/test_readme_site_path.py loads the modulefile with Debian's Lmod.

The library folder holds links by the names a library's own install has: Debian's MPICH installs
libmpich.so.12 only, while MPICH from source, Intel MPI and Cray MPICH also have libmpi.so.12, the
name mpi4py's wheel looks for (docs/site.md, "mpi4py's wheel on a site's MPI")."""

from __future__ import annotations

import os
from pathlib import Path

DEBIAN_LIB = "/usr/lib/x86_64-linux-gnu"
LIBRARIES = {
    "openmpi": {"libmpi.so": f"{DEBIAN_LIB}/libmpi.so.40", "libmpi.so.40": f"{DEBIAN_LIB}/libmpi.so.40"},
    "mpich": {"libmpi.so": f"{DEBIAN_LIB}/libmpich.so.12", "libmpi.so.12": f"{DEBIAN_LIB}/libmpich.so.12"},
}
LAUNCHERS = {
    "openmpi": {"mpirun": "/usr/bin/mpirun.openmpi", "mpiexec": "/usr/bin/mpiexec.openmpi"},
    # hydra starts the hydra_pmi_proxy beside its own path
    "mpich": {
        "mpirun": "/usr/bin/mpirun.mpich",
        "mpiexec": "/usr/bin/mpiexec.mpich",
        "hydra_pmi_proxy": "/usr/bin/hydra_pmi_proxy",
    },
}


def _links(folder: Path, targets: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, target in targets.items():
        link = folder / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)
    return folder


def install(root: str | Path, mpi: str) -> Path:
    """Make ROOT/MPI/{bin,lib} and the modulefile ROOT/modules/MPI.lua; return ROOT/modules."""
    root = Path(root).resolve()
    bin_dir = _links(root / mpi / "bin", LAUNCHERS[mpi])
    lib_dir = _links(root / mpi / "lib", LIBRARIES[mpi])
    modules = root / "modules"
    modules.mkdir(parents=True, exist_ok=True)
    (modules / f"{mpi}.lua").write_text(
        f'prepend_path("PATH", "{bin_dir}")\nprepend_path("LD_LIBRARY_PATH", "{lib_dir}")\n'
    )
    return modules


def environment(root: str | Path, mpi: str) -> dict[str, str]:
    """The variables `module load MPI` sets, for a process that does not run Lmod (nox's sessions)."""
    install(root, mpi)
    root = Path(root).resolve()
    paths = {"PATH": root / mpi / "bin", "LD_LIBRARY_PATH": root / mpi / "lib"}
    return {name: os.pathsep.join(filter(None, [str(p), os.environ.get(name, "")])) for name, p in paths.items()}
