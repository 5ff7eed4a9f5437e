"""A sweep from start to end, as `fabricprobe sweep` and any other caller runs it: MPI at the configured
thread level, the same options on every rank, then the run itself (engine/measurement.py: the results
file, topology, provenance, every point, the run's status kept true to what happened).

The measurement's modules are imported after MPI_Init, read from the file system by rank 0 alone and
broadcast (mpienv/shared_imports.py): at scale every rank's imports are file-system lookups at once
(docs/scale.md, "Start-up"). What this module imports, every rank reads before MPI starts: keep it short."""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from fabricprobe import interrupts
from fabricprobe.console import error_line, set_rank, warn_line
from fabricprobe.engine import faults
from fabricprobe.engine.config import SweepConfig, differing_fields
from fabricprobe.engine.setup_watch import SetupWatch
from fabricprobe.engine.watchdog import Watchdog
from fabricprobe.errors import StorageError, UsageError
from fabricprobe.memory import arena
from fabricprobe.mpienv import shared_imports
from fabricprobe.mpienv.init import first_collective, init_mpi
from fabricprobe.mpienv.launcher import env_rank, env_size

if TYPE_CHECKING:  # rank 0 writes: the other ranks never load h5py (issue 68)
    from fabricprobe.engine.measurement import SessionOutcome
    from fabricprobe.engine.switching import LibrarySwitch
    from fabricprobe.store import ResultsWriter

# What every rank imports once MPI has started, read by rank 0 for all (mpienv/shared_imports.py): the
# run and the timing loops' compiler (llvmlite: timing/compiled.py).
MEASURING = ("fabricprobe.engine.measurement", "fabricprobe.timing.compiled")


def run_sweep(
    config: SweepConfig,
    path: str,
    resume: bool = False,
    run_id: str | None = None,
    progress: str = "auto",
    warn: Callable[[str], None] = warn_line,
    switch: LibrarySwitch | None = None,
    skip: frozenset[str] = frozenset(),
) -> SessionOutcome:
    """Measure `config` into `path` on every rank (resume: finish run `run_id`, or the last, of path with its
    stored options; config then only gives the thread level, which must match). `switch` switches the
    library's algorithms a config with library_variants measures (tune-sweep's one launch). Raises
    UsageError, the same on every rank, for anything the user must change."""
    # The per-point watchdog starts with the first point; a rank that hangs before it (in MPI's
    # start-up, or in the topology's communicator splits, e.g. a rank launched with another MCA
    # environment) would hold the job forever. This one covers the set-up, with the same limit.
    if not resume:
        arena.check_applied(config.early_buffers)  # before MPI starts or a file is opened: nothing written
    setup = Watchdog(config.point_timeout, env_rank())
    # MPI_Init runs inside mpi4py's import with the interpreter held: there only a process can watch
    first = "mpi4py.MPI" not in sys.modules or not sys.modules["mpi4py.MPI"].Is_initialized()
    backstop = SetupWatch(config.point_timeout if first else 0, env_rank(), "the set-up (MPI start-up)")
    job = _Job(config, path, resume, run_id, progress, warn, setup, switch, skip, backstop)
    job.phase("MPI start-up")
    try:
        return _run(job)
    finally:
        setup.stop()
        backstop.stop()
        if job.asked is not None:
            job.asked.discard()  # a run refused before provenance read them leaves none running


@dataclass
class _Job:
    """One call of run_sweep: what it was asked, and rank 0's writer once the file is checked."""

    config: SweepConfig
    path: str
    resume: bool
    run_id: str | None
    progress: str
    warn: Callable[[str], None]
    setup: Watchdog
    switch: LibrarySwitch | None = None
    skip: frozenset[str] = frozenset()
    backstop: SetupWatch | None = None
    writer: ResultsWriter | None = None  # holds the file's lock from its opening to the end
    asked: Any = None  # rank 0: the library's build tools (mpienv/build.py Asked), started after MPI_Init

    def phase(self, label: str) -> None:
        """The set-up begins `label`: both watchdogs name it if it does not end in time."""
        text = f"the set-up ({label})"
        self.setup.arm(text)
        if self.backstop is not None:
            self.backstop.phase(text)

    def setup_done(self) -> None:
        self.setup.stop()
        if self.backstop is not None:
            self.backstop.stop()

    def open_writer(self) -> None:
        from fabricprobe.store import ResultsWriter

        self.writer = ResultsWriter(self.path)  # refuses a file another process writes; folds a killed run's journal


def _run(job: _Job) -> SessionOutcome:
    faults.hang_holding_the_interpreter_if_asked("mpi_init", env_rank())
    MPI = init_mpi(job.config.thread_level)
    comm = MPI.COMM_WORLD
    first_collective(comm)  # before anything else communicates (osu_init's figure and the next)
    set_rank(comm.rank)
    _the_job_launched(comm)
    job.phase("the options agreed between ranks")
    _same_everywhere(comm, {"config": job.config.to_dict(), "output": job.path, "resume_run": job.run_id})
    if comm.rank == 0:  # the library's build tools run while rank 0 reads and opens the file (provenance reads them)
        from fabricprobe.mpienv import build
        from fabricprobe.mpienv.library import library_info

        lib = library_info(MPI)
        job.asked = build.Asked(lib.vendor, lib.version_string)
    job.phase("the measurement's modules, read by rank 0 for every rank")
    shared_imports.share(comm, MEASURING)
    from fabricprobe.engine.measurement import measure

    try:
        with _interrupts_end_the_run(job):
            outcome = measure(job, MPI, comm)
    except StorageError:
        if job.writer is not None:  # mark the run if a small record still fits; the error stands either way
            from fabricprobe.store.schema import STATUS_ABORTED

            with contextlib.suppress(StorageError):
                job.writer.update_run({"status": STATUS_ABORTED, "status_reason": "results could not be written"})
            with contextlib.suppress(StorageError):
                job.writer.close()
        raise
    except BaseException:
        if job.writer is not None:
            with contextlib.suppress(StorageError):
                job.writer.close()
        raise
    if job.writer is not None:
        job.writer.close()
    return outcome


def _interrupts_end_the_run(job: _Job):
    """Ctrl-C, SIGTERM or SIGHUP: rank 0 marks the run "interrupted", and every rank exits 128 + the
    signal's number at once (fabricprobe.interrupts: a thread on the signal wake-up descriptor).

    Python runs signal handlers only between bytecodes of the main thread, which may be inside a
    compiled timed batch for seconds, and Open MPI's launcher follows the SIGTERM it forwards on Ctrl-C
    with SIGKILL 0.2 s later (measured): a handler there never ran, and runs were left "running".
    Nothing is lost: every completed point is already in the journal."""

    def mark(signum: int) -> None:
        if job.writer is not None and not faults.interrupt_unmarked():
            from fabricprobe.mpienv import provenance  # both loaded by then: the writer is the run's
            from fabricprobe.store.schema import STATUS_INTERRUPTED

            reason = {"status_reason": f"interrupted by {interrupts.name(signum)}", "ended": provenance.utc_now()}
            job.writer.update_run({"status": STATUS_INTERRUPTED, **reason})

    return interrupts.on_interrupt(mark, say=error_line)


def _the_job_launched(comm: Any) -> None:
    """Refuse to measure in a world that is not the job this process was launched in: a launcher killed
    in its first moments (SIGKILL of mpiexec in its first 0.3 s, 6 of 6 trials) leaves ranks that
    come up as singletons, each of which wrote a bogus 1-rank run into the results file; so do ranks
    that loaded a library of another family than their launcher's (docs/site.md)."""
    launched = env_size()
    if launched is not None and launched != comm.size:
        from mpi4py import MPI

        from fabricprobe.mpienv import library_check
        from fabricprobe.mpienv.library import library_info

        apart = library_check.mismatch(library_info(MPI).vendor, library_check.loaded_library(), comm.size)
        set_rank(env_rank())  # every rank is rank 0 of its own world: the launcher's rank 0 says it, once
        raise UsageError(
            f"{apart}; nothing is measured or recorded"
            if apart
            else f"this rank was launched as one of {launched} but MPI started it in a world of {comm.size} "
            "(its launcher died or could not be reached); nothing is measured or recorded"
        )


def _same_everywhere(comm: Any, what: dict[str, Any]) -> None:
    views = comm.allgather(what)
    for rank, view in enumerate(views):
        diff = differing_fields(views[0], view)
        if diff:
            raise UsageError(
                f"options differ between ranks: rank {rank} has different {', '.join(diff)} than rank 0; "
                "start every rank with the same command line"
            )
