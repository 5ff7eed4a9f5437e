"""fabricprobe's ReFrame check (fabricprobe/reframe, the `reframe` extra; `nox -s reframe`): run by
ReFrame itself, it passes against a good run's references, fails when the fabric got slower than they
allow, and fails when a result is wrong, with ReFrame's local scheduler and mpiexec launcher.

No verdict here depends on this machine's speed or load: the fabric is planted (FABRICPROBE_FAULT_TIME,
every timed call reads exactly that long), so the good run's medians are known, the same fabric passes
its references at 10%, and a fabric 100 times slower fails them. (Measured references failed here under
load: an 8 B allreduce read 0.33 µs in one launch and 1.04 µs in the next, a 1 MiB one 624 µs and then
100 ms.) A real fabric slowed 100 times is caught through Slurm in the site session
(tests/site/test_reframe_slurm.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("reframe.core.builtins")  # tests/ on sys.path: a bare "reframe" is not enough

from mpirun import launcher, mpi_env, run_local  # noqa: E402

from fabricprobe.reframe import CHECKS  # noqa: E402

BIN = Path(sys.executable).parent
TOLERANCE = "0.1"
FABRIC_S = 1e-4  # the planted fabric: every call 100 µs
SLOWER = 100  # the degraded fabric: 100 times slower
SETTINGS = """
site_configuration = {
    "systems": [{
        "name": "fabricprobe_tests", "descr": "this machine", "hostnames": [".*"],
        "partitions": [{"name": "local", "scheduler": "local", "launcher": "mpiexec",
                        "environs": ["fp"], "max_jobs": 1}],
    }],
    "environments": [{"name": "fp", "env_vars": ENV}],
}
"""


def _reframe(
    tmp_path: Path, *variables: str, path_first: str = str(BIN), extra_env: dict | None = None
) -> subprocess.CompletedProcess:
    """`reframe -r` of fabricprobe's check in tmp_path, the given -S variables added."""
    found = launcher()
    env_vars = [["OMPI_ALLOW_RUN_AS_ROOT", "1"], ["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"]]
    settings = tmp_path / "settings.py"
    settings.write_text(SETTINGS.replace("ENV", json.dumps(env_vars)))
    options = ["-S", "launcher_options=--oversubscribe"] if found and found.vendor == "Open MPI" else []
    argv = [str(BIN / "reframe"), "-C", str(settings), "-c", CHECKS, "-r", "--prefix", str(tmp_path / "rfm")]
    argv += ["-S", "collectives=allreduce", *options, *[x for v in variables for x in ("-S", v)]]
    env = mpi_env({"PATH": os.pathsep.join([path_first, os.environ.get("PATH", "")]), "HOME": str(tmp_path)})
    env.update(extra_env or {})
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)


def _planted(seconds: float) -> dict:
    return {"FABRICPROBE_FAULT_TIME": repr(seconds)}


def _good_run(tmp_path: Path, sizes: str) -> Path:
    """A good run on the planted fabric, measured by the check itself, exported as references."""
    out = _reframe(tmp_path, f"sizes={sizes}", extra_env=_planted(FABRIC_S))
    assert out.returncode == 0, out.stdout[-3000:]
    [h5] = (tmp_path / "rfm" / "output").rglob("sweep.h5")
    refs = tmp_path / "good.json"
    done = run_local(["report", str(h5), "--format", "reframe-references", "-o", str(refs), "--tolerance", TOLERANCE])
    assert done.returncode == 0, done.stderr
    return refs


@pytest.mark.process
def test_the_check_passes_against_its_good_run_and_fails_when_slower(tmp_path):
    if launcher() is None:
        pytest.skip("no mpiexec")
    refs = _good_run(tmp_path, "8,1M")
    doc = json.loads(refs.read_text())
    assert set(doc["references"]) == {"allreduce_8B_float32_n2", "allreduce_1048576B_float32_n2"}
    assert all(value == pytest.approx(FABRIC_S * 1e6) for value, *_ in doc["references"].values())
    passed = _reframe(tmp_path, "sizes=8,1M", f"references_file={refs}", extra_env=_planted(FABRIC_S))
    assert passed.returncode == 0 and "PASSED" in passed.stdout, passed.stdout[-3000:]
    failed = _reframe(tmp_path, "sizes=8,1M", f"references_file={refs}", extra_env=_planted(FABRIC_S * SLOWER))
    assert failed.returncode != 0 and "performance" in failed.stdout.lower(), failed.stdout[-3000:]


@pytest.mark.process
def test_a_wrong_result_fails_the_sanity_check(tmp_path):
    if launcher() is None:
        pytest.skip("no mpiexec")
    # FABRICPROBE_FAULT_WRONG reaches the job through ReFrame's environment
    out = _reframe(tmp_path, "sizes=8", extra_env={"FABRICPROBE_FAULT_WRONG": "allreduce:1"})
    assert out.returncode != 0 and "sanity" in out.stdout.lower(), out.stdout[-3000:]
