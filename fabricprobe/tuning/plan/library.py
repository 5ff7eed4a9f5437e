"""What a library offers for tuning, in common: its variants (the default, or one algorithm forced),
the names the libraries give a collective (from its spec), and the library's own tools, found beside
this Python's mpiexec or on PATH. Each library is a file of this package (openmpi.py, mpich.py,
intel.py); libraries.py finds the one in use."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from fabricprobe.errors import UsageError
from fabricprobe.specs import SPECS
from fabricprobe.specs.base import VendorNames

DEFAULT = "default"


def names(collective: str) -> VendorNames:
    """What the libraries call a collective (from its spec)."""
    vendor = SPECS[collective].vendor
    if vendor is None:
        raise KeyError(f"{collective} is not tuned: its spec names it for no library")
    return vendor


@dataclass(frozen=True)
class Variant:
    """One way to run a collective: the library's default, or one algorithm forced."""

    collective: str
    name: str  # "default", or the library's name for the algorithm
    ident: str  # the value that forces it (Open MPI id, MPICH name, Intel preset)
    env: dict = field(default_factory=dict, hash=False, compare=False)


def tool(name: str) -> str | None:
    """A library tool next to this Python's mpiexec, else on PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def run_tool(argv: list[str]) -> str:
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    # A wheel's tools (impi-rt's impi_info) find their libmpi only through the library path: add the
    # lib/ beside the tool's bin/, as the wheel's mpiexec does for the ranks it starts.
    lib = Path(argv[0]).resolve().parent.parent / "lib"
    if lib.is_dir():
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(lib), env.get("LD_LIBRARY_PATH", "")) if p)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"could not run {argv[0]}: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise UsageError(f"{' '.join(argv)} failed: {last}")
    return done.stdout


class Library:
    """A library's algorithms and how to force one (its variants' environment, read at MPI_Init) and,
    where it has the run-time equivalent, how to switch one inside a running job (tune-sweep's one
    launch, tuning.plan.switch): the MPI_T control variable behind each environment variable."""

    vendor = "unknown"
    switches_at_run_time = False  # whether its variants' settings have MPI_T control variables
    # A write applies only to communicators made after it (Open MPI: coll/tuned reads its forced
    # algorithm when a communicator is made); otherwise to the next call on any (MPICH).
    new_communicator = False
    # Environment settings that may stand for a whole launch without changing what the library's default
    # runs, for a variable that cannot be written at run time (Open MPI before 5.0.6: dynamic rules on
    # with every algorithm variable at 0 is the fixed decision, the default).
    launch_wide: dict[str, str] = {}

    def variants(self, collective: str) -> list[Variant]:
        raise NotImplementedError

    def default(self, collective: str) -> Variant:
        return Variant(collective, DEFAULT, "", {})

    hierarchy_component = ""  # the component the hierarchy variants change (Open MPI: "han")

    def hierarchy_variants(self, collective: str) -> list[Variant]:
        """Variants that change the library's hierarchical path on several nodes (Open MPI's han),
        measured where the job spans nodes; named here for finding a rule's winner by name."""
        return []

    def known_variants(self, collective: str) -> list[Variant]:
        """Every variant a rule may name: variants() and the hierarchy's, measured or not in this job."""
        seen = {v.name for v in self.variants(collective)}
        return self.variants(collective) + [v for v in self.hierarchy_variants(collective) if v.name not in seen]

    def read_at_init(self, variable: str) -> str:
        """Why a control variable that MPI_T says may be written changes nothing when written ("" when a
        write takes effect): the library reads it only at MPI_Init."""
        return ""

    def control_variable(self, env_name: str) -> str | None:
        """The MPI_T control variable that an environment variable of a variant sets (None: the library
        has no run-time equivalent: a launch per variant)."""
        return None

    def files_off(self, load_env: dict[str, str]) -> dict[str, str]:
        """Control variables whose writes give back the library's default, on communicators made after
        them (new_communicator), inside a job launched with the tuning files' environment `load_env`:
        {variable: value}, or {} where the default needs a launch of its own (tune --verify's
        before/after then launches once per side)."""
        return {}

    def why_files_stay(self, load_env: dict[str, str]) -> str:
        """Why nothing written inside a launch with these files gives the default back (files_off is
        {}): said in tuning.json's before_after_pairing, beside the launches it costs."""
        return "it reads its tuning files at MPI_Init only"

    def refuses(self, error: str) -> bool:
        """Whether a point's error is the library saying the algorithm does not run on that
        communicator (then a launch of its own would say the same, and none is made)."""
        return False

    default_decider = ""  # what the library's own choice of algorithm is called: "Open MPI's fixed decision"

    def default_choice(self, collective: str, nranks: int, nbytes: int, dtype: str, version: str) -> str | None:
        """The algorithm (a variant's name) the library's default runs for a call of `nbytes` on `nranks`
        ranks of one node, where its own decision is known for this `version`; None where it is not. A
        rule naming it changes nothing (choose/library_choice.py)."""
        return None

    def default_value(self, variable: str) -> str | None:
        """The name of the value `variable` has when nothing sets it, where known: read at start to check
        that names map to the values the library uses (MPICH's follow its description's order)."""
        return None
