"""Rank-aware terminal output: only rank 0 speaks, errors are one line on stderr."""

from __future__ import annotations

import sys

from fabricprobe.mpienv.launcher import env_rank

_rank: int | None = None


def set_rank(rank: int) -> None:
    global _rank
    _rank = rank


def is_root() -> bool:
    return (env_rank() if _rank is None else _rank) == 0


def error_line(message: str) -> None:
    if is_root():
        text = " ".join(str(message).split())  # one line, whatever the message holds
        print(f"fabricprobe: error: {text}", file=sys.stderr, flush=True)


def warn_line(message: str) -> None:
    if is_root():
        print(f"fabricprobe: warning: {message}", file=sys.stderr, flush=True)
