"""Keep a result file consistent: no signal lands in the middle of a write, and a reader that
holds the file open never makes the writer lose a point."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import threading
import time
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


def is_lock_error(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, (OSError, BlockingIOError)) and (
        "lock" in text or getattr(exc, "errno", None) in (errno.EAGAIN, errno.EWOULDBLOCK)
    )


def retry_locked(open_file, timeout: float = 30.0):
    """Call open_file() until it stops failing on a file lock (another reader), or time out."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return open_file()
        except OSError as exc:
            if not is_lock_error(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
