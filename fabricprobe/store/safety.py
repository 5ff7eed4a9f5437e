"""No signal lands in the middle of a write: the journal's appends and the fold's rename hold them."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Iterator

_DEFERRED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP until the block ends, then deliver them as usual."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    previous = {}

    def hold(signum, frame):  # noqa: ARG001
        pending.append(signum)

    for sig in _DEFERRED:
        try:
            previous[sig] = signal.signal(sig, hold)
        except (ValueError, OSError):
            pass
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for sig in pending:
            os.kill(os.getpid(), sig)
