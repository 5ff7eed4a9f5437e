"""Run a command while busy loops hold the machine's cores: the planted load under which the suite must
pass as it does on an idle machine (docs/testing.md, "No verdict rests on speed or load").

    python benchmarks/under_load.py [--loops N] [--nice K] -- COMMAND...

N busy loops (default: one per core) at niceness K (default 0, the suite's own), started before the
command and ended after it, whatever its outcome; the command's exit status is this script's. Prints
how long the command ran and the share of the cores the loops got.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time


def spin(niceness: int) -> None:
    os.nice(niceness)
    while True:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loops", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--nice", type=int, default=0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    loops = []
    for _ in range(args.loops):
        pid = os.fork()
        if pid == 0:
            spin(args.nice)
        loops.append(pid)
    started = time.monotonic()
    try:
        status = subprocess.call(command)
    finally:
        used = 0.0
        for pid in loops:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                used += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
            except OSError:
                pass
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    wall = time.monotonic() - started
    share = used / (wall * (os.cpu_count() or 1))
    print(
        f"under_load: {args.loops} busy loops at nice {args.nice}; the command ran {wall:.0f} s and "
        f"exited {status}; the loops had {share:.0%} of the cores",
        file=sys.stderr,
    )
    return status


if __name__ == "__main__":
    sys.exit(main())
