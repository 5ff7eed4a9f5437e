"""A library whose algorithm is switched inside the running job (tune-sweep's one launch): before every
point the sweep asks a LibrarySwitch for the communicator to measure it on, and the switch makes the
point's algorithm the one that runs there — the library's default for every point that is not one of
config.library_variants. The engine knows no library: how a switch is made (MPI_T control variables,
communicators made after the write) is the caller's (tuning.measure.mpit_switch)."""

from __future__ import annotations

from typing import Any, Protocol

from fabricprobe.collectives.algorithm import LIBRARY
from fabricprobe.engine.config import SweepConfig

LAUNCH = "launch"  # forced_by of a run whose library algorithm was forced for the whole launch


class LibrarySwitch(Protocol):
    method: str  # how a switched point's algorithm was forced, recorded per point (e.g. "mpit")

    def select(self, collective: str, variant: str, comm: Any) -> Any:
        """Make `variant` ("" = the library's default) the algorithm `collective` runs on `comm`'s ranks;
        the communicator to measure on (the same, or one made after the switch)."""

    def not_here(self, collective: str, variant: str, comm: Any) -> str:
        """Why `variant` is not measured on comm ("" when it is): it changes something that does not
        run there. The point is recorded not runnable with this reason, and nothing is switched."""

    def restore(self) -> None:
        """Back to the library's default everywhere, with what select() made released (every rank)."""

    def record(self) -> dict:
        """What the run stores about the switching (rank 0): variables, proofs."""


def variant_of(algorithm: str) -> str:
    """The switched library algorithm a point measures: library:ring -> ring; "" for anything else."""
    return algorithm.split(":", 1)[1] if algorithm.startswith(LIBRARY + ":") else ""


def forced_by(algorithm: str, config: SweepConfig, switch: LibrarySwitch | None) -> str:
    """How the point's library algorithm was forced: "launch" (a run with library_variant: the whole
    launch's environment), the switch's method for a switched point, "" where nothing was forced."""
    if config.library_variant and algorithm == LIBRARY:
        return LAUNCH
    if switch is not None and variant_of(algorithm):
        return switch.method
    return ""
