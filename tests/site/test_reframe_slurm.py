"""fabricprobe's ReFrame check as a site runs it nightly: ReFrame's Slurm scheduler (`squeue`: the lab
has no accounting database for `sacct`) and `srun` launcher, on a Slurm lab of 2 hosts whose links
run at 1 Gbit/s. A good run's references pass an unchanged lab, and a link slowed 100 times (10 Mbit/s)
fails them. Run by `nox -s site` with Open MPI 4.1 (MPICH 4.0's lab hosts share memory:
lab.launch.own_ipc); elsewhere it says why it does not run.

No verdict depends on this machine's load: the unchanged lab passes references that allow 100 times
the good run's medians, and the slowed link fails references that allow 10% more, at a size (256 KiB,
past the link's 32 KiB token bucket) where the slowed link alone makes a call about 100 times slower
than the good run's. (With the link at 60% and a tolerance of 0.3, as before, the verdict rested on a
1.05-1.10 against 1.80 ratio measured on an idle machine.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("reframe.core.builtins")

from test_slurm_lab import REASON  # noqa: E402  the same conditions: a site MPI, root, Slurm

from fabricprobe.lab import state  # noqa: E402
from fabricprobe.reframe import CHECKS  # noqa: E402
from fabricprobe.store.reader import load_runs  # noqa: E402

NAME = f"fpr{os.getpid() % 10000}"
SUBNET = "10.215.34.0/24"
GENEROUS, TIGHT = "99", "0.1"  # references: up to 100 times and 1.1 times the good run
SIZES = "sizes=256K"
OPTIONS = "options=--iters 10 --warmup 1 --max-time 1 --no-bound-probe"  # the probe would cross the slowed link
SETTINGS = """
site_configuration = {
    "systems": [{
        "name": "lab", "descr": "fabricprobe's Slurm lab", "hostnames": [".*"],
        "partitions": [{"name": "lab", "scheduler": "squeue", "launcher": "srun",
                        "access": ["-p lab"], "environs": ["fp"], "max_jobs": 1}],
    }],
    "environments": [{"name": "fp"}],
}
"""


def _reason() -> str | None:
    if REASON is not None:
        return REASON
    from fabricprobe.lab.launch import own_ipc
    from fabricprobe.mpienv.library import library_of_this_python

    library = library_of_this_python()
    if not own_ipc(library.vendor, library.version):  # its traffic would not cross the slowed link
        return f"{library.vendor} {library.version}'s lab hosts share memory (lab.launch.own_ipc)"
    return None


pytestmark = pytest.mark.skipif(_reason() is not None, reason=str(_reason()))


def _fp(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "fabricprobe", *args], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"fabricprobe {' '.join(args)}: {out.stdout[-3000:]}{out.stderr[-3000:]}"
    return out.stdout


@pytest.fixture(scope="module")
def site():
    """The lab, and a folder outside /tmp (each lab node has a /tmp of its own) holding ReFrame's
    settings and a bin folder with the lab's sbatch, squeue and scancel, which ReFrame finds on PATH."""
    work = Path(tempfile.mkdtemp(prefix="fabricprobe-rfm-", dir="/var/tmp"))
    _fp("lab", "up", "--name", NAME, "--subnet", SUBNET, "--hosts", "2", "--ranks-per-host", "1", "--rate", "1gbit",
        "--scheduler", "slurm")  # fmt: skip
    (work / "bin").mkdir()
    for program in ("sbatch", "squeue", "scancel"):
        (work / "bin" / program).symlink_to(state.directory(NAME) / "bin" / program)
    (work / "settings.py").write_text(SETTINGS)
    try:
        yield work
    finally:
        _fp("lab", "down", "--name", NAME)
        shutil.rmtree(work, ignore_errors=True)


def _reframe(work: Path, *variables: str) -> subprocess.CompletedProcess:
    """fabricprobe's check, one rank on each host, through sbatch and srun."""
    argv = [str(Path(sys.executable).parent / "reframe"), "-C", str(work / "settings.py"), "-c", CHECKS, "-r"]
    argv += ["--prefix", str(work / "rfm"), "-S", "collectives=allreduce", "-S", SIZES, "-S", OPTIONS]
    argv += ["-S", "num_tasks=2", "-S", "num_tasks_per_node=1", *[x for v in variables for x in ("-S", v)]]
    env = {**os.environ, "PATH": os.pathsep.join([str(work / "bin"), os.environ["PATH"]]), "HOME": str(work)}
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=work, timeout=600)


def test_the_check_passes_an_unchanged_lab_and_fails_a_link_slowed_100_times(site):
    good = _reframe(site)
    assert good.returncode == 0 and "PASSED" in good.stdout, good.stdout[-3000:]
    [h5] = (site / "rfm" / "output").rglob("sweep.h5")
    refs = {}
    for name, tolerance in (("generous", GENEROUS), ("tight", TIGHT)):
        refs[name] = site / f"{name}.json"
        _fp("report", str(h5), "--format", "reframe-references", "-o", str(refs[name]), "--tolerance", tolerance)
    (run,) = load_runs(str(h5))
    assert run.attrs["scheduler"] == "slurm" and run.attrs["nnodes"] == 2 and run.attrs["nranks"] == 2
    assert set(json.loads(refs["tight"].read_text())["references"]) == {"allreduce_262144B_float32_n2"}
    unchanged = _reframe(site, f"references_file={refs['generous']}")
    assert unchanged.returncode == 0 and "PASSED" in unchanged.stdout, unchanged.stdout[-3000:]
    _fp("lab", "slow", "--name", NAME, f"{NAME}1", "10mbit")
    slowed = _reframe(site, f"references_file={refs['tight']}")
    assert slowed.returncode != 0 and "performance error" in slowed.stdout, slowed.stdout[-3000:]
