"""The README's site path as written, from nothing (issue 69): `module load` of the site's MPI (Debian's
Open MPI 4.1 or MPICH 4.0, as a site's module would give it: tests/site_modules.py, read by Debian's
Lmod), a fresh virtual environment, `pip install mpi4py .` with an empty pip cache and no compiler
(CC, CXX and MPICC are `false`: a source build would fail), `fabricprobe info`, the one-node `mpirun`
sweep, the summary, and the one-node tune lines. The srun and salloc lines run in the lab's Slurm
(test_slurm_lab.py). The install's seconds are said in a warning, so CI's log shows them. Then the
other family's launcher starting the same environment: `info` names the library and what to set."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

import pytest
import site_modules
from readme_paths import MEASURE, TUNE, blocks
from site_readers import LMOD_INIT

from fabricprobe.store.reader import load_runs

ROOT = Path(__file__).resolve().parents[2]
MPI = os.environ.get("FABRICPROBE_SITE_MPI", "")
VENDOR = {"openmpi": "Open MPI", "mpich": "MPICH"}
OTHER = {"openmpi": "/usr/bin/mpirun.mpich", "mpich": "/usr/bin/mpirun.openmpi"}
# the README's shapes for this 2-core machine, and its sweeps shortened
SHAPE = {("-n", "8"): "2"}
SHORT = {
    "sweep": "--collectives allreduce,bcast --sizes 8,64K --iters 20 --max-time 0.05 --progress none",
    "tune-sweep": "--collectives allreduce --sizes 8,64K",
}
CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _reason() -> str | None:
    if MPI not in VENDOR:
        return "the README's site path runs under `nox -s site` (FABRICPROBE_SITE_MPI=openmpi|mpich)"
    missing = [p for p in (str(LMOD_INIT), *site_modules.LAUNCHERS[MPI].values(), OTHER[MPI]) if not Path(p).exists()]
    return f"needs Debian's {', '.join(missing)} (nox -s site installs them)" if missing else None


REASON = _reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=str(REASON))


def _as_here(line: str) -> str | None:
    """A README line for this machine: the session's library for `module load`, the shapes and sweeps
    shortened; None for a line of a Slurm allocation."""
    words = line.split("#", 1)[0].split()
    if not words or words[0] in ("srun", "salloc"):
        return None
    if words[:2] == ["module", "load"]:
        return f"module load {MPI}"
    words = [SHAPE.get((words[i - 1], w), w) if i else w for i, w in enumerate(words)]
    for command, extra in SHORT.items():
        if command in words:
            words += extra.split()
    return " ".join(words)


def _script(modules: Path) -> str:
    readme = [line for block in (blocks(MEASURE)[0], blocks(TUNE)[0]) for line in block.splitlines()]
    lines = [s for s in map(_as_here, readme) if s]
    steps = [f'echo "@@ {i} $(date +%s.%N)"; {line}' for i, line in enumerate(lines)]
    return "\n".join(
        [
            "set -e",
            f". {LMOD_INIT}",
            f"module use {modules}",
            "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",  # the README: as root
            *steps,
            f'echo "@@ {len(steps)} $(date +%s.%N)"',
            f'{OTHER[MPI]} -n 2 fabricprobe info > other-launcher.txt 2>&1 || echo "other launcher: exit $?"',
        ]
    )


def _environment(work: Path) -> dict[str, str]:
    """A login shell's environment: no virtual environment, module or MPI variable of the test's own, an
    empty pip cache, and no compiler."""
    keep = {
        k: v for k, v in os.environ.items() if k.startswith(("PIP_INDEX", "PIP_EXTRA", "PIP_TRUSTED", "LANG", "LC_"))
    }
    return {
        **keep,
        "HOME": str(work / "home"),
        "PATH": CLEAN_PATH,
        "PIP_CACHE_DIR": str(work / "pip-cache"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "CC": "false",
        "CXX": "false",
        "MPICC": "false",
        "TERM": "dumb",
    }


@pytest.fixture(scope="module")
def walked():
    work = Path(tempfile.mkdtemp(prefix="fabricprobe-readme-", dir="/var/tmp"))
    (work / "home").mkdir()
    clone = work / "fabricprobe"
    shutil.copytree(ROOT, clone, ignore=shutil.ignore_patterns(".nox", ".venv*", "*.h5", "__pycache__", ".git"))
    modules = site_modules.install(work / "site", MPI)
    out = subprocess.run(
        ["bash", "-c", _script(modules)],
        capture_output=True,
        text=True,
        cwd=clone,
        env=_environment(work),
        timeout=1500,
    )
    yield out, clone
    shutil.rmtree(work, ignore_errors=True)


def _marks(stdout: str) -> dict[int, float]:
    return {int(i): float(t) for i, t in re.findall(r"^@@ (\d+) ([\d.]+)$", stdout, re.M)}


def test_the_readme_site_path_runs_as_written_without_a_compiler(walked):
    out, clone = walked
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    assert "Building wheel for mpi4py" not in out.stdout + out.stderr  # the binary wheel (a build fails: CC=false)
    marks = _marks(out.stdout)
    install_s = marks[3] - marks[2]  # line 2: pip install mpi4py .
    to_summary_s = marks[6] - marks[0]  # module load .. report --summary
    said = f"README site path ({VENDOR[MPI]}): install {install_s:.0f} s, first summary {to_summary_s:.0f} s"
    warnings.warn(said, stacklevel=1)
    (run,) = load_runs(str(clone / "fabric.h5"))
    assert run.status == "complete" and run.attrs["mpi_vendor"] == VENDOR[MPI] and run.attrs["nranks"] == 2


def test_info_names_the_library_the_wheel_loaded(walked):
    out, _ = walked
    info = out.stdout[out.stdout.index("@@ 3 ") : out.stdout.index("@@ 4 ")]
    assert f"MPI library   {VENDOR[MPI]}" in info
    assert f"binary wheel, {'Open MPI' if MPI == 'openmpi' else 'MPICH'} ABI" in info


def test_the_summary_and_the_tuning_files_come_from_the_readme_lines(walked):
    out, clone = walked
    summary = out.stdout[out.stdout.index("@@ 5 ") : out.stdout.index("@@ 6 ")]
    assert "allreduce" in summary
    assert (clone / "tuning" / "tuning.json").exists()


def test_the_other_familys_launcher_is_named_with_what_to_set(walked):
    """Debian's mpirun.mpich starting ranks that loaded Open MPI (or mpirun.openmpi, MPICH's): each rank
    alone; `info` says so once, from the launcher's rank 0, and exits 1."""
    out, clone = walked
    assert "other launcher: exit 1" in out.stdout
    said = (clone / "other-launcher.txt").read_text()
    warning = [line for line in said.splitlines() if line.startswith("fabricprobe: warning:")]
    assert len(warning) == 1, said
    assert f"but mpi4py loaded {VENDOR[MPI]}" in warning[0] and "MPI4PY_LIBMPI" in warning[0]
