"""OMB's buffer setting: message buffers from memory a rank maps and writes at its start (--early-buffers).

Why: on Open MPI's shared memory, large messages read faster from buffers that a process makes after it
has written a lot of other memory. OMB's ranks make their buffers right after MPI_Init, having written a
few MiB; a fabricprobe rank makes them after its imports and set-up, having written far more. How much
that changes a 4 MiB ping-pong, measured against OMB's own binary with its commands, is in
docs/performance.md and docs/studies/. Which setting is right is the site's question (an application's
buffers are made after its own start-up, like fabricprobe's), so both are offered and each run records
which it had:

- by default the pool's buffers are mapped when a point first needs them, and `written_before_mib` is
  the process's written anonymous memory (RssAnon) when it made its first buffer of 1 MiB or more;
- with `--early-buffers MIB` the entry point (cli/start.py) calls `reserve` before anything else is
  imported: MIB MiB are mapped and written then, and the pool's send and receive buffers are carved from
  them, as OMB's come from memory allocated right after MPI_Init. `written_before_mib` is then RssAnon
  just before the reservation. A buffer that does not fit is mapped late, and counted in `missed`;
  `peak_used_mib`, the most the buffers held at once, says how much would have been enough.

This module imports nothing but the standard library: it runs before numpy has written anything.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from dataclasses import dataclass

from fabricprobe.errors import UsageError
from fabricprobe.inputs import whole

PAGE = mmap.PAGESIZE
LARGE = 1 << 20  # the first buffer this large marks the moment `written_before_mib` is read (late buffers)
OPTION = "--early-buffers"
MAX_MIB = 1 << 20  # the option's bound (sweep's parser holds values to it too)


def pages(nbytes: int) -> int:
    """`nbytes` rounded up to whole pages."""
    return -(-nbytes // PAGE) * PAGE


class Arena:
    """A region mapped and written at once, handed out in page-aligned blocks (first fit; blocks given
    back are merged with their free neighbours)."""

    def __init__(self, nbytes: int) -> None:
        self.size = pages(nbytes)
        self.region = mmap.mmap(-1, self.size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        # Every page written now, so each has its physical frame before anything else is written.
        ctypes.memset(ctypes.addressof(ctypes.c_char.from_buffer(self.region)), 1, self.size)
        self.free: list[tuple[int, int]] = [(0, self.size)]  # (offset, length), sorted by offset
        self.taken: dict[int, int] = {}
        self.used = 0
        self.peak = 0

    def take(self, nbytes: int) -> int | None:
        """The offset of a free block of at least `nbytes` (whole pages), or None when none is left."""
        length = max(pages(nbytes), PAGE)
        for i, (offset, room) in enumerate(self.free):
            if room >= length:
                if room == length:
                    del self.free[i]
                else:
                    self.free[i] = (offset + length, room - length)
                self.taken[offset] = length
                self.used += length
                self.peak = max(self.peak, self.used)
                return offset
        return None

    def give(self, offset: int) -> None:
        """Return a block that `take` handed out."""
        length = self.taken.pop(offset)
        self.used -= length
        self.free.append((offset, length))
        self.free.sort()
        merged: list[tuple[int, int]] = []
        for start, room in self.free:
            if merged and merged[-1][0] + merged[-1][1] == start:
                merged[-1] = (merged[-1][0], merged[-1][1] + room)
            else:
                merged.append((start, room))
        self.free = merged

    def view(self, offset: int, nbytes: int) -> memoryview:
        return memoryview(self.region)[offset : offset + nbytes]


@dataclass
class Setting:
    """What this process's message buffers were made after (`record` gives it to the run)."""

    early_mib: int = 0  # reserved at start; 0: buffers made when first needed
    written_before_mib: float | None = None  # RssAnon at the moment the module docstring names
    missed: int = 0  # buffers that did not fit in the early memory
    held: int = 0  # the most bytes the message buffers held at once
    failed: str = ""  # why the reservation asked for could not be made (the sweep refuses to run)


EARLY: Arena | None = None
SETTING = Setting()


def rss_anon_mib() -> float | None:
    """The anonymous memory this process has written and still holds (Linux's RssAnon), MiB; None elsewhere."""
    try:
        with open(f"/proc/{os.getpid()}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def requested_mib(argv: list[str]) -> int:
    """The MiB `--early-buffers` asks for in a command line, 0 when absent. Read before argument parsing,
    so a malformed value reads as 0 here and the parser rejects it with its own message."""
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == OPTION and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(OPTION + "="):
            value = arg.split("=", 1)[1]
        else:
            continue
        try:
            return whole(value, OPTION, 0, MAX_MIB)
        except UsageError:
            return 0
    return 0


def reserve(mib: int) -> None:
    """Map and write `mib` MiB for the message buffers now (the process's first step); 0 does nothing."""
    global EARLY
    if mib <= 0 or EARLY is not None:
        return
    written = rss_anon_mib()
    try:
        EARLY = Arena(mib << 20)
    except OSError as exc:  # e.g. more than the kernel will map; said in one line once the sweep starts
        SETTING.failed = f"{OPTION} {mib}: could not map {mib} MiB ({exc.strerror or exc})"
        return
    SETTING.written_before_mib = written
    SETTING.early_mib = mib


def take(nbytes: int) -> tuple[memoryview, int] | None:
    """A block of the early memory for a message buffer (view, offset), or None: no early memory was
    reserved, or it has no room left (counted as missed)."""
    if EARLY is None:
        return None
    offset = EARLY.take(nbytes)
    if offset is None:
        SETTING.missed += 1
        return None
    return EARLY.view(offset, nbytes), offset


def give(offset: int) -> None:
    if EARLY is not None:
        EARLY.give(offset)


def note_held(nbytes: int) -> None:
    """The message buffers now hold `nbytes` in all (early or not): the record keeps the most."""
    SETTING.held = max(SETTING.held, nbytes)


def note_buffer(nbytes: int) -> None:
    """A message buffer is being made late: the first of `LARGE` bytes or more reads RssAnon."""
    if EARLY is None and nbytes >= LARGE and SETTING.written_before_mib is None:
        SETTING.written_before_mib = rss_anon_mib()


def check_applied(asked: int) -> None:
    """--early-buffers acts at the process's first step (cli/start.py), before any configuration is read:
    a run's stored options or a --config file can ask for it (`asked` MiB, 0: none) but not apply it, so
    what they ask must be what this process did. UsageError otherwise."""
    if SETTING.failed:
        raise UsageError(SETTING.failed)
    reserved = SETTING.early_mib
    if asked and asked != reserved:
        raise UsageError(
            f"the run's options ask for --early-buffers {asked}, which acts at start-up: "
            f"give --early-buffers {asked} on the fabricprobe command line too"
        )
    if reserved and not asked:
        raise UsageError(f"--early-buffers {reserved} was given but the run's options (stored or --config) have none")


def record() -> dict[str, float | int]:
    """This rank's setting, for the run's `buffer_memory` attribute (engine/measurement.py gathers it):
    early_mib (0: late buffers), written_before_mib (-1: not read), missed, and peak_used_mib: the most
    the message buffers held at once, in whole pages (what --early-buffers must at least give)."""
    written = SETTING.written_before_mib
    return {
        "early_mib": SETTING.early_mib,
        "written_before_mib": round(written, 1) if written is not None else -1.0,
        "missed": SETTING.missed,
        "peak_used_mib": round(SETTING.held / (1 << 20), 1),
    }
