"""Window mode's clocks: every rank's clock mapped onto rank 0's, so that call i can start on every rank
at the same global moment t0 + i·w (ReproMPI's windows; Hunold & Carpen-Amarie, TPDS 2016).

Barrier mode starts each call when the barrier lets each rank out, and a barrier lets ranks out at
different moments (the last to arrive leaves first in a dissemination barrier); that skew is inside
every sample. Windows start every rank together on a synchronized clock instead, and a call's time is
the latest rank's end minus the window's start.

The synchronization is Jones & Koenig's linear model (JK, 2012), rank 0 the reference: for each other
rank, in turn, `fitpoints` moments spread over `seconds` (and one more before each batch of timed
windows, `refresh`), each the offset of the exchange with the
shortest round trip among `exchanges` ping-pongs (offset = remote time − the midpoint of rank 0's
send and receive, exact when the two legs take equally long, off by at most half the round trip
otherwise), and a least-squares line through them: offset(t) = a + b·t on the rank's own clock, so
drift (b) is corrected too. The residual is measured the same way afterwards: the offset the model
leaves, per rank, at that moment.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

_TAG = 23


@dataclass(frozen=True)
class ClockModel:
    """This rank's clock against rank 0's: offset(t) = a + b·t seconds at local time t."""

    a: float = 0.0
    b: float = 0.0

    def to_global(self, local: float | np.ndarray) -> float | np.ndarray:
        return local - (self.a + self.b * local)

    def to_local(self, global_: float | np.ndarray) -> float | np.ndarray:
        return (global_ + self.a) / (1.0 - self.b)


def fit(times: np.ndarray, offsets: np.ndarray) -> ClockModel:
    """The least-squares line offset = a + b·t (one point: offset only)."""
    times, offsets = np.asarray(times, float), np.asarray(offsets, float)
    if times.size < 2 or np.ptp(times) == 0:
        return ClockModel(float(np.mean(offsets)), 0.0)
    b, a = np.polyfit(times, offsets, 1)
    return ClockModel(float(a), float(b))


def _offset_with(comm: Any, peer: int, exchanges: int, wtime: Callable[[], float], root: bool) -> tuple[float, float]:
    """One fitpoint between rank 0 (root) and `peer`: rank 0 gets (peer's time, offset) of the
    exchange with the shortest round trip; the peer gets (0, 0)."""
    best = (np.inf, 0.0, 0.0)  # (round trip, peer time, offset)
    buf = np.zeros(1)
    for _ in range(exchanges):
        if root:
            sent = wtime()
            comm.Send(buf, dest=peer, tag=_TAG)
            comm.Recv(buf, source=peer, tag=_TAG)
            back = wtime()
            trip = back - sent
            if trip < best[0]:
                best = (trip, float(buf[0]), float(buf[0]) - (sent + back) / 2.0)
        else:
            comm.Recv(buf, source=0, tag=_TAG)
            buf[0] = wtime()
            comm.Send(buf, dest=0, tag=_TAG)
    return best[1], best[2]


def synchronize(
    comm: Any,
    wtime: Callable[[], float],
    fitpoints: int = 8,
    exchanges: int = 20,
    seconds: float = 0.5,
) -> tuple[ClockModel, dict[int, list[tuple[float, float]]]]:
    """Every rank's model against rank 0's clock (rank 0: the identity), and on rank 0 the fitpoints per
    rank (`refresh` adds to them). Ranks are synchronized one after another, the others waiting; the
    fitpoints of all of them are spread over about `seconds`."""
    rank, size = comm.rank, comm.size
    model, history = ClockModel(), {}
    pause = seconds / max(fitpoints, 1) / max(size - 1, 1)
    for peer in range(1, size):
        if rank not in (0, peer):
            continue
        points = []
        for _ in range(fitpoints):
            points.append(_offset_with(comm, peer, exchanges, wtime, rank == 0))
            time.sleep(pause)
        if rank == 0:
            history[peer] = points
        model = _fitted(comm, peer, points) or model
    comm.Barrier()
    return model, history


def _fitted(comm: Any, peer: int, points: list[tuple[float, float]]) -> ClockModel | None:
    """Rank 0 fits `peer`'s line through `points` and sends it (returns None); `peer` receives it."""
    if comm.rank == 0:
        found = fit(*map(np.array, zip(*points)))
        comm.send((found.a, found.b), dest=peer, tag=_TAG + 1)
        return None
    return ClockModel(*comm.recv(source=0, tag=_TAG + 1))


def refresh(comm: Any, clock: "WindowClock", exchanges: int = 10, keep: int = 64) -> None:
    """One more fitpoint per rank of `comm` (a prefix of the world: its ranks are the world's), and
    every model fitted again through that rank's last `keep` fitpoints: the offset is anchored anew and
    the drift known better the longer the sweep runs. Window mode calls it before each batch, since a
    drift misjudged by the first 0.5 s of fitpoints (15 ppm measured, 3 oversubscribed ranks on 2
    cores) moves a rank's windows by 30 µs in 2 s."""
    rank = comm.rank
    for peer in range(1, comm.size):
        if rank not in (0, peer):
            continue
        point = _offset_with(comm, peer, exchanges, clock.wtime, rank == 0)
        points = clock.history.setdefault(peer, []) if rank == 0 else []
        points.append(point)
        del points[:-keep]
        clock.model = _fitted(comm, peer, points) or clock.model


def residuals(comm: Any, wtime: Callable[[], float], model: ClockModel, exchanges: int = 20) -> list[float] | None:
    """Rank 0: per rank, the offset its corrected clock still has against rank 0's now (seconds; 0 for
    rank 0), measured as a fitpoint is; None on other ranks."""
    corrected = lambda: float(model.to_global(wtime()))  # noqa: E731 - the clock the windows use
    found = [0.0]
    for peer in range(1, comm.size):
        if comm.rank in (0, peer):
            _, off = _offset_with(comm, peer, exchanges, corrected, comm.rank == 0)
            found.append(off)
    comm.Barrier()
    return found if comm.rank == 0 else None


@dataclass
class WindowClock:
    """What window-mode points share in one sweep: the clock (MPI_Wtime, or a planted one in tests),
    the model, and when it was fitted."""

    wtime: Callable[[], float]
    model: ClockModel
    fitted_at: float = 0.0  # global time of the first synchronization's end
    history: dict[int, list[tuple[float, float]]] = field(default_factory=dict)  # rank 0: fitpoints per rank

    def now(self) -> float:
        return float(self.model.to_global(self.wtime()))

    def starts(self, first: float, width: float, count: int) -> np.ndarray:
        """This rank's local clock readings for the windows first + i·width, i < count."""
        return np.asarray(self.model.to_local(first + width * np.arange(count)), dtype=float)


_CLOCK: WindowClock | None = None


def set_clock(clock: WindowClock | None) -> None:
    global _CLOCK
    _CLOCK = clock


def clock() -> WindowClock | None:
    """The sweep's window clock (None until a sweep with window mode synchronized)."""
    return _CLOCK


# The window width: twice the slowest rank's time per call in the warm-up (barrier included), and at
# least MIN_WIDTH; a batch that misses more than MISSED_MAX of its windows doubles it for the next.
WIDTH_FACTOR = 2.0
MIN_WIDTH = 5e-6
MISSED_MAX = 0.1
# A batch in which some rank missed every window measured nothing: it is run again, windows twice as wide,
# up to REDO_MAX times a point, before it counts (and is left out of the samples, iterations and missed
# windows). A CI run (MPICH wheel, n = 2 on 2 cores) reported a fixed-count point (--ci-target 0: one
# batch) not runnable; a rank descheduled for longer than a batch of a few 5 µs windows does that.
REDO_MAX = 3
# A redone batch's windows span at least REDO_SPAN in all: a rank descheduled for a whole batch waits out
# a scheduler period (Linux's: 6 ms times 1 + log2 of the cores, up to 24 ms), so doubling windows of a
# few µs would let it miss every window of the next batch too (the whole suite under a busy loop per
# core: one point not runnable after 3 redone batches of 40 windows, 175 µs wide at the last).
REDO_SPAN = 0.1
LEAD = 2e-3  # from the schedule's broadcast to its first window, at least (and one window)
