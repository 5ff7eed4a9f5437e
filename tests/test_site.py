"""The site path without a cluster: what Slurm's environment means (an allocation, a step, a rank),
how tune-sweep launches inside an allocation, the launcher found by vendor on PATH, the placement
cross-check, the lab's Slurm configuration and job environment, and the build-mismatch warning.
The same paths run for real in tests/site (nox -s site: Debian's Open MPI 4.1 and MPICH 4.0 under
Slurm in the fabric lab)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from fabricprobe.engine import jobs
from fabricprobe.lab import launch, slurm
from fabricprobe.lab.config import LabConfig
from fabricprobe.lab.network import LabError
from fabricprobe.mpienv import launcher as launcher_env
from fabricprobe.mpienv import provenance, slurm_env
from fabricprobe.mpienv.topology import check_placement
from fabricprobe.tuning.measure import launch as measure
from fabricprobe.tuning.verify import fingerprint

STEP = {"SLURM_JOB_ID": "7", "SLURM_STEP_ID": "0", "SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1"}
BATCH = {"SLURM_JOB_ID": "7", "SLURM_STEP_ID": "4294967291", "SLURM_PROCID": "0", "SLURM_NTASKS": "4"}


@pytest.fixture
def clean_env(monkeypatch):
    for key in list(os.environ):
        if key.startswith(("SLURM", "OMPI_", "PMI", "MPI_LOCALRANKID")):
            monkeypatch.delenv(key)
    return monkeypatch


def _set(monkeypatch, env: dict[str, str]) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)


def test_an_srun_task_is_a_rank_an_sbatch_shell_is_not(clean_env):
    _set(clean_env, STEP)
    assert slurm_env.in_step() and not slurm_env.in_allocation()
    assert launcher_env.env_rank() == 3 and launcher_env.env_size() == 4 and launcher_env.launched_by_mpiexec()
    for k in STEP:
        clean_env.delenv(k)
    # sbatch's batch step (and salloc's shell, which has no step id) hold the allocation, not a rank
    _set(clean_env, BATCH)
    for _ in range(2):
        assert slurm_env.in_allocation() and not slurm_env.in_step()
        assert launcher_env.env_rank() == 0 and launcher_env.env_size() is None
        assert not launcher_env.launched_by_mpiexec()
        clean_env.delenv("SLURM_STEP_ID", raising=False)  # Slurm 22.05's batch shell has none


def test_scheduler_provenance_and_srun_flags(clean_env):
    assert slurm_env.provenance() == {}
    _set(clean_env, {**STEP, "SLURM_JOB_NODELIST": "lab[0-1]", "SLURM_CPU_BIND": "quiet,cores"})
    prov = slurm_env.provenance()
    assert prov["scheduler"] == "slurm" and prov["job_id"] == "7" and prov["job_nodelist"] == "lab[0-1]"
    assert prov["cpu_bind"] == "quiet,cores"
    assert slurm_env.srun_flags("Open MPI", []) == ["--mpi=pmix"]
    assert slurm_env.srun_flags("MPICH", []) == ["--mpi=pmi2"]
    assert slurm_env.srun_flags("Open MPI", ["--mpi=pmi2"]) == []  # the user's choice stands
    clean_env.setenv("SLURM_MPI_TYPE", "pmix_v4")
    assert slurm_env.srun_flags("MPICH", []) == []  # so does the site's


def _fake(tmp_path: Path, name: str, says: str) -> str:
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\necho '{says}'\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_tune_sweep_launches_steps_inside_an_allocation(clean_env, tmp_path):
    srun = _fake(tmp_path, "srun", "slurm 22.05.8")
    clean_env.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    _set(clean_env, BATCH)
    base = launcher_env.launcher(None, "", 4, "Open MPI")
    assert base == [srun, "--mpi=pmix", "-n", "4"]
    assert measure.with_ranks(base, 2) == [srun, "--mpi=pmix", "-n", "2"]  # the per-size relaunch
    # outside an allocation, the library's own mpiexec; --mpiexec srun is honoured too
    for k in BATCH:
        clean_env.delenv(k)
    assert launcher_env.launcher(srun, "--cpu-bind=cores", 2, "MPICH") == [
        srun,
        "--mpi=pmi2",
        "--cpu-bind=cores",
        "-n",
        "2",
    ]


def test_a_smaller_step_fills_the_first_nodes_as_mpiexec_fills_slots(clean_env, tmp_path, monkeypatch):
    """Verification probes 2 ranks of a 4-rank allocation: they must sit on one node, as the 2-rank
    sub-communicator that tune-sweep measured did (srun alone spreads them over both)."""
    srun = str(tmp_path / "srun")
    assert slurm_env.step_nodes([srun, "--mpi=pmix"], 2) == []  # outside an allocation: srun's own choice
    _set(clean_env, {**BATCH, "SLURM_TASKS_PER_NODE": "2(x2)"})
    assert [slurm_env.step_nodes([srun], n) for n in (1, 2, 3, 4)] == [
        ["-N", "1"],
        ["-N", "1"],
        ["-N", "2"],
        ["-N", "2"],
    ]
    assert slurm_env.step_nodes([srun], 5) == []  # more than the allocation holds: srun says so itself
    clean_env.setenv("SLURM_TASKS_PER_NODE", "3,2(x2),1")
    assert slurm_env.tasks_per_node() == [3, 2, 2, 1]
    assert [slurm_env.step_nodes([srun], n) for n in (3, 4, 7, 8)] == [
        ["-N", "1"],
        ["-N", "2"],
        ["-N", "3"],
        ["-N", "4"],
    ]
    placements = (["-N", "2"], ["-N2"], ["--nodes=2"], ["--ntasks-per-node", "1"], ["-m", "cyclic"])
    for placed in (*placements, ["-w", "lab0"], ["-wlab0"]):
        assert slurm_env.step_nodes([srun, *placed], 2) == []  # the user's placement stands
    assert slurm_env.step_nodes(["/usr/bin/mpiexec"], 2) == []
    clean_env.setenv("SLURM_TASKS_PER_NODE", "garbled")
    assert slurm_env.step_nodes([srun], 2) == []
    # where the argv is built: a probe of 2 ranks and a sweep job relaunched on 2
    clean_env.setenv("SLURM_TASKS_PER_NODE", "2(x2)")
    seen = []
    monkeypatch.setattr(fingerprint, "run_launch", lambda argv, **kw: seen.append(argv) or _Done())
    fingerprint.probe([srun, "--mpi=pmix"], 2, "allreduce", 8, "smoke", {})
    assert seen[-1][:6] == [srun, "--mpi=pmix", "-N", "1", "-n", "2"]
    monkeypatch.setattr(jobs, "run_launch", lambda argv, **kw: seen.append(argv) or _Done())
    from fabricprobe.engine.config import SweepConfig
    from fabricprobe.tuning.plan.library import Variant

    config = SweepConfig(collectives=["allreduce"], sizes=[8]).check()
    measure.run_variant(
        [srun, "--mpi=pmix", "-n", "2"], str(tmp_path / "r.h5"), Variant("allreduce", "x", "", {}), config, 5
    )
    assert seen[-1][:6] == [srun, "--mpi=pmix", "-N", "1", "-n", "2"]


class _Done:
    returncode, stdout, stderr = 0, "ok\n", ""


@pytest.mark.process
def test_the_launcher_is_found_by_its_vendor(clean_env, tmp_path, monkeypatch):
    monkeypatch.setattr(launcher_env, "_launcher_candidates", lambda vendor: [hydra, ompi])
    hydra = _fake(tmp_path, "mpiexec.mpich", "HYDRA build details:")
    ompi = _fake(tmp_path, "mpiexec.openmpi", "mpiexec.openmpi (OpenRTE) 4.1.4")
    assert launcher_env.find_launcher("Open MPI") == ompi  # not the first on the list: it is MPICH's
    assert launcher_env.find_launcher("MPICH") == hydra
    assert launcher_env.find_launcher("Intel MPI") is None


def test_a_launchers_version_names_its_vendor():
    """Debian's Open MPI 4.1 prints OpenRTE, not Open MPI: the test suite's own launcher() took it for an
    unknown library (and planted sweeps of no vendor) until it asked the package's rule."""
    assert launcher_env.vendor_named_by("mpiexec.openmpi (OpenRTE) 4.1.4") == "Open MPI"
    assert launcher_env.vendor_named_by("mpiexec (Open MPI) 5.0.11") == "Open MPI"
    assert launcher_env.vendor_named_by("HYDRA build details:\n    Version: 5.0.2") == "MPICH"
    assert launcher_env.vendor_named_by("Intel(R) MPI Library for Linux* OS, Version 2021.13") == "Intel MPI"
    assert launcher_env.vendor_named_by("srun: option --version") is None


def test_placement_agrees_or_says_where_it_does_not():
    nodes = (0, 0, 1, 1)
    slurm_says = [[("slurm", "n0", 0)], [("slurm", "n0", 1)], [("slurm", "n1", 0)], [("slurm", "n1", 1)]]
    assert check_placement(nodes, slurm_says) == "slurm agrees"
    assert check_placement(nodes, [[] for _ in nodes]) == ""  # no launcher said anything
    # local ranks in another order on one node (Open MPI mapping by socket): the same membership
    swapped = [slurm_says[0], slurm_says[1], [("slurm", "n1", 1)], [("slurm", "n1", 0)]]
    assert check_placement(nodes, swapped) == "slurm agrees"
    by_socket = [[("open mpi", None, lrank)] for lrank in (0, 2, 4, 1, 3)]  # measured: 5 ranks, one node
    assert check_placement((0,) * 5, by_socket) == "open mpi agrees"
    # without node names, the local ranks still tell membership
    twice = [[("open mpi", None, lrank)] for lrank in (0, 1, 0, 0)]  # ranks 2 and 3 on two launcher nodes
    assert "ranks 2 and 3 share memory but are both local rank 0 to open mpi" in check_placement(nodes, twice)
    beyond = [[("open mpi", None, lrank)] for lrank in (0, 1, 2, 0)]  # the launcher's node holds 3
    assert "rank 2 is local rank 2 to open mpi" in check_placement(nodes, beyond)
    split = [slurm_says[0], [("slurm", "n2", 0)], slurm_says[2], slurm_says[3]]
    assert "disagrees" in check_placement(nodes, split)
    merged = [[("slurm", "n0", i)] for i in range(2)] + [[("slurm", "n0", i)] for i in range(2)]
    assert "slurm disagrees" in check_placement(nodes, merged)
    both = [[("slurm", f"n{r // 2}", r % 2), ("hydra", None, r % 2)] for r in range(4)]
    assert check_placement(nodes, both) == "slurm agrees; hydra agrees"


def test_launcher_placement_reads_each_launchers_variables(clean_env):
    assert launcher_env.placement() == []
    _set(clean_env, {**STEP, "SLURMD_NODENAME": "lab1", "OMPI_COMM_WORLD_LOCAL_RANK": "1"})
    assert launcher_env.placement() == [("slurm", "lab1", 1), ("open mpi", None, 1)]


LAB = LabConfig("sl", 2, 2, 1e9, "10.213.0.0/24")


def test_the_lab_cluster_configuration(tmp_path, monkeypatch):
    real = tmp_path / "usr bin"
    real.mkdir()
    (real / "srun").write_text("#!/bin/sh\n")
    (real / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", str(real))
    text = slurm.config_text(LAB, "pmix")
    assert "SlurmctldHost=sl-head(10.213.0.254)" in text and "MpiDefault=pmix" in text
    assert "NodeName=sl0 NodeAddr=10.213.0.1 CPUs=2" in text and "NodeName=sl1 NodeAddr=10.213.0.2 CPUs=2" in text
    assert "PartitionName=lab Nodes=ALL Default=YES" in text
    assert f"AuthInfo=socket={slurm.folder('sl')}/munge.socket" in text  # the lab's own munged
    script = slurm.client_script(LAB, "srun", {"OMPI_MCA_pml": "ob1"})
    assert "export SLURM_CONF=" in script and "export OMPI_MCA_pml=ob1" in script
    assert "ip netns exec sl-sw" in script and script.rstrip().endswith(f"'{real}/srun' \"$@\"")


def test_each_host_has_its_own_ipc_namespace_except_for_mpich_4():
    """UCX judges shared memory reachable by IPC namespace, so hosts that share one talk through it and
    never cross their links; MPICH 4.0 over TCP in the lab hung in MPI_Finalize, so it keeps one."""
    assert launch.own_ipc("MPICH", "5.0.2") and launch.own_ipc("Open MPI", "4.1.4") and launch.own_ipc("Open MPI", "5")
    assert not launch.own_ipc("MPICH", "4.0.2")
    assert "unshare --uts --ipc -- sh" in launch.agent_script(LAB)
    assert "unshare --uts -- sh" in launch.agent_script(LAB, ipc=False)
    assert "unshare --uts --ipc -- sh" in launch.mpiexec_script(LAB, "Open MPI", "/x/mpiexec", "4.1.4")
    assert "unshare --uts -- sh" in launch.mpiexec_script(LAB, "MPICH", "/x/mpiexec", "4.0.2")
    assert slurm._in_namespace("sl0", "sl0", "true")[4:8] == ["unshare", "--uts", "--ipc", "--"]
    assert slurm._in_namespace("sl0", "sl0", "true", ipc=False)[4:7] == ["unshare", "--uts", "--"]


def test_a_wrapper_runs_slurms_own_program_even_with_the_labs_folder_on_path(tmp_path, monkeypatch):
    """ReFrame finds sbatch on PATH, so a site puts the lab's bin folder there: a wrapper that ran
    `sbatch` by name found itself and spun until ReFrame's 60 s ran out."""
    monkeypatch.setattr(slurm, "STATE_ROOT", tmp_path / "state")
    wrappers, links, real = tmp_path / "state" / "sl" / "bin", tmp_path / "links", tmp_path / "usr"
    for folder in (wrappers, links, real):
        folder.mkdir(parents=True)
    for program in (wrappers / "sbatch", real / "sbatch"):
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
    (links / "sbatch").symlink_to(wrappers / "sbatch")
    monkeypatch.setenv("PATH", os.pathsep.join(map(str, (links, wrappers, real))))
    assert slurm.real_program("sbatch") == str(real / "sbatch")
    monkeypatch.setenv("PATH", os.pathsep.join(map(str, (links, wrappers))))
    with pytest.raises(LabError, match="no sbatch on PATH other than a fabric lab's wrapper"):
        slurm.real_program("sbatch")


def test_each_node_has_its_own_tmp_but_shares_the_software_there(monkeypatch):
    """A checkout made with mktemp -d lives in /tmp: its Python must run on every node although each
    node's /tmp is its own (tests/site from /tmp/...: "execve(): /tmp/.../bin/python: No such file")."""
    line = slurm._private_tmp(Path("/run/lab"), "sl0", ["/tmp/tmp.ab c"])
    assert line.split(" && ") == [
        "mkdir -p /run/lab/tmp/sl0",
        "chmod 1777 /run/lab/tmp/sl0",
        "mkdir -p '/run/lab/tmp/sl0/tmp.ab c'",
        "mount --bind '/tmp/tmp.ab c' '/run/lab/tmp/sl0/tmp.ab c'",
        "mount --rbind /run/lab/tmp/sl0 /tmp",  # recursive: the shared folder comes along
    ]
    assert slurm._private_tmp(Path("/run/lab"), "sl0", []).endswith("&& mount --rbind /run/lab/tmp/sl0 /tmp")
    monkeypatch.setattr(slurm.sys, "prefix", "/tmp/tmp.X/.nox/site")
    monkeypatch.setattr(slurm.sys, "executable", "/usr/bin/python3")
    found = slurm.software_under_tmp()
    assert "/tmp/tmp.X" in found and not [p for p in found if not p.startswith("/tmp/")]
    monkeypatch.setattr(slurm.sys, "prefix", "/var/tmp/venv")
    assert "/tmp/tmp.X" not in slurm.software_under_tmp()


def test_lab_jobs_get_the_transport_of_the_library_version():
    assert launch.job_environment(LAB, "Open MPI", "4.1.4")["OMPI_MCA_btl"] == "tcp,self,vader"
    assert launch.job_environment(LAB, "Open MPI", "5.0.11")["OMPI_MCA_btl"] == "tcp,self,sm"
    assert launch.job_environment(LAB, "MPICH", "4.0.2")["UCX_NET_DEVICES"] == "lab0"
    srun = launch.run_argv(LAB, 3, ["sweep", "--quick"], "slurm")
    assert srun[0].endswith("/sl/bin/srun") and srun[1:7] == ["-N", "2", "--ntasks-per-node", "2", "-n", "3"]
    salloc = launch.run_argv(LAB, 4, ["tune-sweep", "-n", "4"], "slurm")
    assert salloc[0].endswith("/sl/bin/salloc") and "--mpiexec" not in salloc  # steps of the allocation
    assert "--mpiexec" in launch.run_argv(LAB, 4, ["tune-sweep", "-n", "4"])


def test_monitoring_joins_a_pml_include_list():
    env = fingerprint.monitoring_env({"OMPI_MCA_pml": "ucx"}, "/shared/x")
    assert env["OMPI_MCA_pml"] == "ucx,monitoring" and env["OMPI_MCA_pml_monitoring_enable_output"] == "3"
    assert env["OMPI_MCA_pml_monitoring_filename"] == "/shared/x/rank"
    assert fingerprint.monitoring_env({"OMPI_MCA_pml": "^cm"}, "/x")["OMPI_MCA_pml"] == "^cm"
    assert "OMPI_MCA_pml" not in fingerprint.monitoring_env({}, "/x")


CRASH = "error: [h:1] *** Process received signal *** / [h:1] Signal: Segmentation fault (11)"


@pytest.mark.parametrize(
    "answers, expected, launches",
    [
        ([CRASH, CRASH, "[[0, 1, 8, 1]]"], "[[0, 1, 8, 1]]", 3),  # the monitoring crashed twice, then ran
        ([CRASH] * 5, CRASH, 3),  # a crash that repeats is the verdict
        ([fingerprint.TIMED_OUT, "[[0, 1, 8, 1]]"], "[[0, 1, 8, 1]]", 2),  # a step held after a crash, once
        (["error: MPI_ERR_ARG", "[[0, 1, 8, 1]]"], "error: MPI_ERR_ARG", 1),  # any other failure stands at once
    ],
)
def test_a_crashed_monitoring_probe_is_launched_again(monkeypatch, tmp_path, answers, expected, launches):
    """Open MPI 4.1's pml monitoring now and then segfaults a job that does not crash again (the CI at
    af00386 failed on one): a crashed probe is repeated, each time with a fresh folder."""
    seen = []

    def fake(argv, env, timeout, method, folder):
        seen.append(folder)
        return answers[len(seen) - 1]

    monkeypatch.setattr(fingerprint, "_probe", fake)
    assert fingerprint.probe(["mpiexec"], 2, "allreduce", 8, "monitor", {}, scratch=str(tmp_path)) == expected
    assert len(seen) == launches and len(set(seen)) == launches
    assert list(tmp_path.iterdir()) == []  # every attempt's folder removed
    seen.clear()
    assert fingerprint.probe(["mpiexec"], 2, "allreduce", 8, "trace", {}) == answers[0]  # the trace: no repeat
    assert len(seen) == 1


def test_mpi4py_built_for_another_library_is_named():
    prov = {"mpi_vendor": "MPICH", "mpi_version": "4.0.2", "mpi4py_built_for": "Open MPI 4.1.4"}
    assert "built for Open MPI 4.1.4 but loaded MPICH 4.0.2" in provenance.build_mismatch(prov)
    assert provenance.build_mismatch({**prov, "mpi4py_built_for": "MPICH 4.0.3"}) == ""
    assert "built for MPICH 4.1" in provenance.build_mismatch({**prov, "mpi4py_built_for": "MPICH 4.1.0"})


def test_a_failed_job_shows_the_librarys_own_message():
    """MPICH 4.0 refusing a selection file at MPI_Init (Debian's 4.0.2, verbatim): the message, not
    the 60-line backtrace after it nor hydra's last line."""
    stderr = (Path(__file__).parent / "data" / "mpich-4.0-unknown-key.stderr").read_text()
    said = launcher_env.failure_message(stderr)
    assert said == "unknown key is_op_built_in=any / Assertion failed in file src/mpi/coll/src/csel.c at line 543: 0"
    assert measure.job_error(stderr).startswith("unknown key is_op_built_in=any")
    assert (
        launcher_env.failure_message("x\nfabricprobe: error: bad size\nsrun: error: task 0")
        == "fabricprobe: error: bad size"
    )
    traceback = 'Traceback (most recent call last):\n  File "a.py", line 1\nmpi4py.MPI.Exception: MPI_ERR_ARG\n'
    assert launcher_env.failure_message(traceback) == "mpi4py.MPI.Exception: MPI_ERR_ARG"
