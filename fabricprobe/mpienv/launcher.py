"""What the launcher tells a process before MPI is initialised.

Argument errors are reported before MPI_Init (no MPI needed to reject bad input), so the
rank has to come from the launcher's environment: Open MPI/PMIx, MPICH/Intel MPI hydra (PMI),
Slurm.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

from fabricprobe.errors import UsageError
from fabricprobe.inputs import launcher_args

_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID")
_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")


def _vars(names: tuple[str, ...]) -> tuple[str, ...]:
    # An sbatch script has SLURM_PROCID=0 and SLURM_NTASKS=N but is the allocation's shell, not a
    # rank: Slurm's variables count only inside an srun step (measured with Slurm 22.05).
    from fabricprobe.mpienv.slurm_env import in_step

    return names if in_step() else tuple(n for n in names if not n.startswith("SLURM_"))


def env_rank() -> int:
    """This process's rank according to the launcher, 0 when not launched by one."""
    for var in _vars(_RANK_VARS):
        value = os.environ.get(var)
        if value is not None and value.isdigit():
            return int(value)
    return 0


def env_size() -> int | None:
    """The job size according to the launcher, None when not launched by one."""
    for var in _vars(_SIZE_VARS):
        value = os.environ.get(var)
        if value is not None and value.isdigit():
            return int(value)
    return None


def launched_by_mpiexec() -> bool:
    return env_size() is not None or any(v in os.environ for v in _vars(_RANK_VARS))


# Open MPI 5's launcher, on a loaded machine, now and then fails before any rank exists ("The PMIx
# server's listener thread failed to start", exit 213: it failed CI runs, in the tests' jobs and in
# tune's fingerprint probes). No rank ran, so launching again hides nothing; any other failure stands.
# Its cause: a session folder that a killed launcher left with the new launcher's pid
# (mpienv.session_dirs); after the last attempt the failure names those folders.
LAUNCH_ATTEMPTS = 3
LAUNCHER_START_FAILURES = ("The PMIx server's listener thread failed to start",)


def launcher_failed_to_start(output: str) -> bool:
    """Whether mpiexec's output says it failed before any rank existed (then launching again is safe)."""
    return any(t in (output or "") for t in LAUNCHER_START_FAILURES)


# How long an interrupted command waits for a launcher it asked to end (SIGTERM: Open MPI's prterun,
# hydra and srun each end their ranks) before it kills it; well inside Slurm's default KillWait (30 s).
LAUNCHER_GRACE_S = 10.0


# srun's words when the allocation it would start a step in is ending or gone (its time limit, or a
# scancel whose SIGTERM has not reached this process yet). Seen in the lab at a time limit: tune
# --verify's next probe failed so and tune, taking it for the rule's failure, renamed the files REJECTED
# and exited 1 before Slurm's SIGTERM arrived. The job is being ended: so is the command.
ALLOCATION_ENDED = ("Job/step already completing or completed", "Invalid job id specified")


def allocation_ended(output: str) -> str | None:
    """srun's line saying the allocation has ended, if the launch's output holds one."""
    for line in (output or "").splitlines():
        if "srun: error:" in line and any(words in line for words in ALLOCATION_ENDED):
            return line.strip()
    return None


def _stop_if_the_allocation_ended(out) -> None:
    said = allocation_ended((out.stderr or "") + "\n" + (out.stdout or ""))
    if said:
        from fabricprobe import interrupts

        raise interrupts.Interrupted(signal.SIGTERM, f"the job's allocation has ended ({said})")


def end_launcher(proc, grace_s: float = LAUNCHER_GRACE_S) -> None:
    """Ask a launcher this process started to end its ranks (SIGTERM), and kill it if it has not
    ended after grace_s: on an interrupt the ranks then mark their runs interrupted and exit, where a
    SIGKILL of the launcher (what subprocess.run does) left them running (mpienv.orphans ends what is
    left)."""
    import subprocess

    if proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_attached(argv: list[str]) -> int:
    """A launcher run with this terminal's streams (`lab run`), its status; interrupted, the launcher
    is asked to end its ranks first (end_launcher), not killed."""
    import subprocess

    proc = subprocess.Popen(argv)
    try:
        return proc.wait()
    except BaseException:
        end_launcher(proc)
        raise


def _run_once(argv: list[str], timeout: float | None, kwargs: dict):
    """subprocess.run(argv, capture_output=True, text=True), but an interrupt or a timeout asks the
    launcher to end its ranks (end_launcher) instead of killing it."""
    import subprocess

    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        end_launcher(proc)
        out, err = proc.communicate()  # what it printed before and while it ended (a probe group's lines)
        raise subprocess.TimeoutExpired(argv, timeout, out, err) from None
    except BaseException:
        end_launcher(proc)
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def run_launch(argv: list[str], timeout: float | None = None, **kwargs):
    """subprocess.run of an mpiexec command line (text, output captured), launched again only when
    mpiexec failed before any rank ran."""
    for _ in range(LAUNCH_ATTEMPTS):
        out = _run_once(argv, timeout, kwargs)
        _stop_if_the_allocation_ended(out)
        # under `script` (a terminal for the tests) mpiexec's stderr arrives in stdout
        if out.returncode == 0 or not launcher_failed_to_start((out.stderr or "") + (out.stdout or "")):
            return out
    return _with_cause(out, kwargs.get("env"))


def stream_launch(argv: list[str], on_line, timeout: float | None = None, **kwargs):
    """run_launch, with each line of stderr handed to on_line(line) as it arrives (a long job's progress,
    shown while it runs); stdout and stderr are also returned whole. subprocess.TimeoutExpired after
    `timeout` seconds, the launcher's session killed."""
    for _ in range(LAUNCH_ATTEMPTS):
        done = _stream_once(argv, on_line, timeout, kwargs)
        _stop_if_the_allocation_ended(done)
        if done.returncode == 0 or not launcher_failed_to_start(done.stderr + done.stdout):
            return done
    return _with_cause(done, kwargs.get("env"))


def _with_cause(out, env: dict[str, str] | None):
    """A launch that never started after every attempt, its stderr ending with the orphaned session
    folders that cause it where there are any (mpienv.session_dirs)."""
    from fabricprobe.mpienv.session_dirs import orphans_hint

    hint = orphans_hint(env)
    if hint:
        out.stderr = (out.stderr or "") + hint + "\n"
    return out


def _stream_once(argv: list[str], on_line, timeout: float | None, kwargs: dict):
    import subprocess
    import threading

    # In this process's session and process group, as subprocess.run starts it: a Ctrl-C of the caller
    # reaches the launcher too, and a caller killed with its session takes the job with it.
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    expired = threading.Event()

    def expire() -> None:  # the launcher ends its ranks on SIGTERM; SIGKILL if it does not end
        expired.set()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()

    timer = threading.Timer(timeout, expire) if timeout is not None else None
    if timer is not None:
        timer.start()
    err: list[str] = []
    try:
        for line in proc.stderr:
            err.append(line)
            on_line(line.rstrip("\n"))
        proc.wait()
        reader.join()
    finally:
        if timer is not None:
            timer.cancel()
        end_launcher(proc)  # the caller was interrupted: the job goes too
    if expired.is_set():
        raise subprocess.TimeoutExpired(argv, timeout)
    return subprocess.CompletedProcess(argv, proc.returncode, "".join(out), "".join(err))


# Where a library's launcher is found. A wheel puts mpiexec beside Python; a site library is on PATH,
# and where Debian installs Open MPI and MPICH side by side, `mpiexec` is whichever the alternatives
# system chose: the vendor's own name comes first (mpiexec.openmpi / mpiexec.mpich), and a candidate
# is taken only when its --version names the vendor (a tuning file measured through another
# library's launcher would be worthless).
_SUFFIX = {"Open MPI": ("openmpi",), "MPICH": ("mpich", "hydra"), "Intel MPI": ("hydra",)}
_VERSION_SAYS = {"Open MPI": ("Open MPI", "OpenRTE"), "MPICH": ("HYDRA",), "Intel MPI": ("Intel",)}


def _launcher_candidates(vendor: str) -> list[str]:
    import shutil
    import sys
    from pathlib import Path

    beside = Path(sys.executable).parent / "mpiexec"
    found = [str(beside)] if beside.exists() else []
    for name in [f"mpiexec.{s}" for s in _SUFFIX.get(vendor, ())] + ["mpiexec", "mpirun"]:
        path = shutil.which(name)
        if path and path not in found:
            found.append(path)
    return found


def launcher_matches(path: str, vendor: str) -> bool:
    """Whether `path --version` names `vendor` (vendor_named_by)."""
    import subprocess

    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return vendor_named_by(out.stdout + out.stderr) == vendor


def vendor_named_by(version_text: str) -> str | None:
    """The vendor a launcher's --version names, or None: Open MPI 5 prints "mpiexec (Open MPI)
    5.0.11", Open MPI 4.1 "mpiexec.openmpi (OpenRTE) 4.1.4", MPICH's hydra "HYDRA build details"
    (Intel MPI's is asked first: it is a hydra too)."""
    for vendor in ("Intel MPI", "Open MPI", "MPICH"):
        if any(word in version_text for word in _VERSION_SAYS[vendor]):
            return vendor
    return None


def find_launcher(vendor: str) -> str | None:
    """The mpiexec of the library in use: beside this Python (a wheel), else on PATH by the vendor's
    own name, else plain mpiexec/mpirun, each only when its --version names the vendor."""
    for path in _launcher_candidates(vendor):
        if launcher_matches(path, vendor):
            return path
    return None


# Where the launcher says this process runs: (source, node name or None, local rank). Slurm names
# the node (SLURMD_NODENAME) and the task's index on it (SLURM_LOCALID); Open MPI's launcher and
# PRRTE give the local rank (OMPI_COMM_WORLD_LOCAL_RANK) and PRRTE/PMIx the host (PMIX_HOSTNAME);
# MPICH's hydra the local rank (MPI_LOCALRANKID). topology.detect checks each against the
# shared-memory communicators.
_PLACEMENT = (
    ("slurm", "SLURMD_NODENAME", "SLURM_LOCALID"),
    ("open mpi", "PMIX_HOSTNAME", "OMPI_COMM_WORLD_LOCAL_RANK"),
    ("hydra", None, "MPI_LOCALRANKID"),
)


def placement() -> list[tuple[str, str | None, int]]:
    """Every launcher's claim about this process: [(source, node or None, local rank)]."""
    from fabricprobe.mpienv.slurm_env import in_step

    found = []
    for source, node_var, local_var in _PLACEMENT:
        if source == "slurm" and not in_step():
            continue
        local = os.environ.get(local_var, "")
        if local.isdigit():
            found.append((source, os.environ.get(node_var) if node_var else None, int(local)))
    return found


# What a failed job said, in the library's own words. A launcher's stderr ends in noise: MPICH's
# backtrace ("libmpich.so.12(+0x30c7c5) [0x7f29...]", 60 lines after "unknown key
# is_op_built_in=any / Assertion failed in csel.c"), hydra's and srun's banners, Open MPI's boxes.
_NOISE = re.compile(
    r"\(\+?0x[0-9a-f]+\)|\[0x[0-9a-f]+\]\s*$|^=+$|^-+$|BAD TERMINATION|^srun: (error|Job step)|"
    r"^\s*(PID|EXIT CODE|CLEANING UP|KILLED BY SIGNAL|YOUR APPLICATION)|^Abort\(\d+\): Internal error$",
    re.I,
)


def signal_name(number: int) -> str:
    """SIGKILL for 9: what ended a launcher whose return code was -number."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def failure_message(stderr: str, lines: int = 2) -> str:
    """fabricprobe's own error line if a rank printed one; else a Python exception's last line; else
    the first `lines` lines that are not a backtrace or a launcher banner (the library speaks first)."""
    text = [line.rstrip() for line in stderr.strip().splitlines() if line.strip()]
    own = [line for line in text if line.startswith("fabricprobe: error:")]
    if own:
        return own[0]
    if any(line.startswith("Traceback") for line in text):
        raised = [line for line in text if re.match(r"^[\w.]+(Error|Exception)\b", line)]
        if raised:
            return raised[-1]
    meaningful = [line.strip() for line in text if not _NOISE.search(line)]
    return " / ".join(meaningful[:lines]) if meaningful else " / ".join(text[-lines:])


def launcher(mpiexec: str | None, extra: str, n: int, vendor: str) -> list[str]:
    """The argv prefix that starts an n-rank job: `--mpiexec` when given; inside a Slurm allocation
    (salloc, sbatch) srun, each job a step of the allocation, with the PMI the library speaks
    (slurm.mpi_flag); else the library's own mpiexec (beside this Python, or on PATH by its vendor's
    name: find_launcher)."""
    from fabricprobe.mpienv import slurm_env

    args = launcher_args(extra)
    if mpiexec is None and slurm_env.in_allocation():
        import shutil

        path = shutil.which("srun")
        if path is None:
            raise UsageError("inside a Slurm allocation but srun is not on PATH; give --mpiexec")
        return [path, *slurm_env.srun_flags(vendor, args), *args, "-n", str(n)]
    path = mpiexec or find_launcher(vendor)
    if path is None:
        raise UsageError(
            f"no {vendor} mpiexec beside this Python or on PATH (mpiexec, or the vendor's mpiexec.NAME): give --mpiexec"
        )
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise UsageError(f"--mpiexec {path}: no such executable")
    if Path(path).name == "srun":
        return [path, *slurm_env.srun_flags(vendor, args), *args, "-n", str(n)]
    if vendor == "Open MPI" and "--oversubscribe" not in args and n > (os.cpu_count() or 1):
        args.append("--oversubscribe")
    return [path, *args, "-n", str(n)]
