"""Exit statuses and the one exception type that turns into "one clear line, exit 2"."""

from __future__ import annotations

EXIT_OK = 0
EXIT_WRONG = 1  # a measured point failed validation
EXIT_USAGE = 2  # bad input: one line on rank 0, nothing written
EXIT_WATCHDOG = 3  # a point exceeded its time limit; the job was aborted
EXIT_DAMAGED = 4  # a file read was damaged: what could be read was used, the loss named (store.damage)
EXIT_LAUNCHER = 5  # a launcher this command started was killed or crashed; the ranks it left were ended
EXIT_INTERNAL = 70  # a bug in fabricprobe (sysexits' EX_SOFTWARE): a traceback, never "wrong results" (1)
EXIT_INTERRUPTED = 130  # Ctrl-C; every interrupt: 128 + its signal's number (fabricprobe.interrupts)
INTERRUPTED_STATUSES = (130, 143, 129)  # SIGINT, SIGTERM, SIGHUP


class UsageError(Exception):
    """Bad input. The message is printed as one line on rank 0 and every rank exits 2."""


class DamagedError(UsageError):
    """A file fabricprobe wrote cannot be read as written (a flipped bit, a truncation, a record that
    does not decode): one line naming it, and every rank exits EXIT_DAMAGED, the one status for damage
    whether nothing or part of the file could be used (docs/schema.md)."""


class StorageError(Exception):
    """Results could not be written (disk full, file system gone). One line, exit 1; what was written
    before is kept (the journal and the HDF5 file are never left damaged)."""


class LauncherError(Exception):
    """A launcher this command started (tune-sweep's jobs, sweep --launches) was killed or crashed: one
    line naming it, exit EXIT_LAUNCHER; every point measured before is kept."""
