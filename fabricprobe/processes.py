"""Whether a process is alive, by pid: the one check the lab's daemons and the MPI launchers' session
folders both make."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether process `pid` exists (signal 0), someone else's included."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True
