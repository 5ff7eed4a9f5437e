from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from mpirun import launcher  # noqa: E402

from fabricprobe.mpienv.session_dirs import orphaned_session_dirs  # noqa: E402

# h5py's first import asks platform.processor(), which runs `uname -p`: imported here, so that the unit
# test that happens to import the store first is not failed for starting a process (below).
__import__("h5py")

# The suite's jobs keep their launcher session folders in a TMPDIR of their own, and the folders that
# its killed jobs leave are removed after each test: a new mpiexec given the pid of such a folder fails
# before any rank runs (fabricprobe.mpienv.session_dirs; it made CI red).
JOBS_TMPDIR = Path(tempfile.mkdtemp(prefix="fabricprobe-tests-jobs-"))
os.environ["TMPDIR"] = str(JOBS_TMPDIR)

# The Open MPI 5 wheel's libfabric components (btl/ofi, mtl/ofi) probe every provider at MPI_Init and
# fail on a machine with no fabric NIC: osu_init read 1,228 ms at n = 2 here, 18-42 ms without them.
# Nothing in the suite runs over OFI (one node: shared memory; the lab: TCP), so every job the suite
# launches leaves them out, unless the caller chose otherwise. It halved test_launches and
# test_onelaunch_mpi (285 s -> 142 s).
os.environ.setdefault("OMPI_MCA_btl", "^ofi")
os.environ.setdefault("OMPI_MCA_mtl", "^ofi")

# Ctrl-C as a terminal sends it: a shell without job control starts a background command (`pytest &`,
# `nohup .ci/run &`) with SIGINT ignored, and its children inherit that, so the interrupted-tune tests
# saw `tune` finish with 0 (2026-11-29, a full run started so). The suite's processes get the default.
signal.signal(signal.SIGINT, signal.default_int_handler)


# `process`: the test starts a process (an mpiexec job, fabricprobe, a lab, a stand-in launcher); `mpi`
# tests do. The unit tests are the rest, and `nox -s quick` runs them with FABRICPROBE_TESTS_UNIT=1, under
# which starting a process fails the test: a test that needs one must say so.
UNIT_ONLY = os.environ.get("FABRICPROBE_TESTS_UNIT") == "1"


def pytest_configure(config):
    config.addinivalue_line("markers", "process: starts a process (an mpiexec job, fabricprobe, a lab)")
    if config.pluginmanager.hasplugin("xdist"):  # which tests share a worker: tests/xdist_groups.py
        from xdist_groups import GroupsPlugin

        config.pluginmanager.register(GroupsPlugin(), "fabricprobe-xdist-groups")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("mpi"):
            item.add_marker(pytest.mark.process)


@pytest.fixture(autouse=True)
def _unit_tests_start_no_process(request, monkeypatch):
    if UNIT_ONLY and not request.node.get_closest_marker("process"):

        def refuse(*args, **kwargs):
            pytest.fail(f"{request.node.nodeid} starts a process ({args[:1]}): mark it pytest.mark.process")

        monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    yield


@pytest.fixture(autouse=True)
def _no_orphaned_session_folders():
    yield
    for folder in orphaned_session_dirs(JOBS_TMPDIR):
        shutil.rmtree(folder, ignore_errors=True)


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(JOBS_TMPDIR, ignore_errors=True)


def pytest_report_header(config):
    found = launcher()
    return f"mpiexec: {found.mpiexec} ({found.vendor})" if found else "mpiexec: none (MPI tests skipped)"


@pytest.fixture(scope="session")
def sweep_file(tmp_path_factory) -> Path:
    """One real sweep for the tests that only read one (report, exports, titles): 2 ranks, the default
    collectives, tests and kernels at 8 B and 64 KiB. Read it; never write to it."""
    from mpirun import run_mpi

    path = tmp_path_factory.mktemp("shared") / "sweep.h5"
    args = ["sweep", "-o", str(path), "--sizes", "8,64K", "--iters", "30", "--warmup", "2", "--max-time", "0.2"]
    out = run_mpi(2, [*args, "--progress", "none", "--quiet"])
    assert out.returncode == 0, out.stderr
    return path


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A path for a results file inside the test's own directory."""
    return tmp_path / "results.h5"
