"""A command run in a pseudo-terminal of a given size, and its output replayed as that terminal shows
it (pyte, a VT100 emulator): what a user reads, with rich's transient progress lines erased and long
lines folded at the terminal's edge."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import termios
import time
from dataclasses import dataclass

import pyte
from mpirun import fabricprobe_argv, mpi_env

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


@dataclass
class Shown:
    returncode: int
    rows: list[str]  # the screen's rows, up to the last one written, right blanks stripped
    lines: list[str]  # the output's lines as written (escape codes out): what a copy of one gives


def run_in_terminal(args: list[str], columns: int = 80, timeout: float = 600, cwd=None) -> Shown:
    """`fabricprobe ARGS` in a pseudo-terminal `columns` wide (tall enough that nothing scrolls away)."""
    height = 2000
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", height, columns, 0, 0))
    env = mpi_env({"TERM": "xterm-256color"})
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    proc = subprocess.Popen(fabricprobe_argv() + args, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd)
    os.close(slave)
    raw = bytearray()
    deadline = time.monotonic() + timeout
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every end of the slave is closed
            break
        if not chunk:
            break
        raw += chunk
        if time.monotonic() > deadline:
            proc.kill()
            break
    os.close(master)
    rc = proc.wait(timeout=60)
    screen = pyte.Screen(columns, height)
    pyte.ByteStream(screen).feed(bytes(raw))
    rows = [row.rstrip() for row in screen.display]
    while rows and not rows[-1]:
        rows.pop()
    text = ANSI.sub("", raw.decode("utf-8", "replace"))
    return Shown(rc, rows, text.split("\n"))
