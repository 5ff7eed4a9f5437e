"""Bytes a rank sends inside sparse collectives, counted where the messages are sent, so the
report can show what a sparse algorithm actually moved."""

from __future__ import annotations

_sent = [0]


def add(nbytes: int) -> None:
    _sent[0] += int(nbytes)


def reset() -> None:
    _sent[0] = 0


def sent() -> int:
    return _sent[0]
