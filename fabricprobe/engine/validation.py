"""A point's validation, outside its timed region, in one place: the output of the first validated calls
and of the last timed call against the spec's expected result, and every buffer the MPI standard leaves
untouched compared bit for bit before and after each validated call, named by what it is (a send
buffer, the gaps between a vector collective's receive blocks, a non-root's receive buffer).

Every element compared counts as checked, so a point's `wrong` never exceeds its `checked` (a write
into the receive gaps read 511 wrong of 508 checked when only the output counted; issue 53)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabricprobe.engine import device_point, faults
from fabricprobe.specs.base import Case

SEND = "send buffers"
GAPS = "receive-buffer gaps"
NONROOT = "non-root receive buffers"
KINDS = (SEND, GAPS, NONROOT)  # the order of the totals


def check_output(spec: Any, case: Case, dev: Any, device: Any) -> tuple[int, int]:
    """(wrong, checked) elements of the output now in case's buffers (fetched from the device first);
    the planted-fault hook corrupts it first, so both checks can be shown to fail."""
    if dev is not None:
        device_point.fetch(case, dev, device.memory)
    # the first buffer this rank checks (a one-sided target's window is not case.recv)
    checked = next((actual for actual, _ in spec.results(case) if actual.size), case.recv)
    faults.corrupt_result(case.collective, case.rank, checked)
    return spec.check(case), spec.checked_elements(case)


def snapshot(spec: Any, case: Case, dev: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """(buffer, copy) of each buffer the call must leave as it is (spec.untouched), host buffers only:
    a device twin's input is not fetched back."""
    return [] if dev is not None else [(buf, buf.copy()) for buf in spec.untouched(case)]


def changed(kept: list[tuple[np.ndarray, np.ndarray]]) -> int:
    """Elements of the untouched buffers that the call changed (compared bit for bit: a NaN kept is equal)."""
    return sum(_changed_in(buf, copy) for buf, copy in kept)


def _changed_in(buf: np.ndarray, copy: np.ndarray) -> int:
    if not buf.size:
        return 0
    now, then = buf.reshape(-1).view(np.uint8), copy.reshape(-1).view(np.uint8)
    return int(np.count_nonzero((now != then).reshape(buf.size, -1).any(axis=1)))


def kind_of(buf: np.ndarray, case: Case) -> str:
    """What an untouched buffer is: the send buffer, a non-root's whole receive buffer, or gaps."""
    send, recv = case.send, case.recv
    if isinstance(send, np.ndarray) and send.size and np.shares_memory(buf, send):
        return SEND
    if isinstance(recv, np.ndarray) and buf.size == recv.size and np.shares_memory(buf, recv):
        return NONROOT
    return GAPS


def steady_checkable(spec: Any, point: Any) -> bool:
    """Whether the output after the timed calls is the result of one call: out of place, and not a local
    kernel (dst = dst op src accumulates) or a sparse collective (its inputs are consumed)."""
    return not point.in_place and not spec.local and not spec.sparse and spec.steady_checkable


@dataclass
class Tally:
    """One rank's validation of one point; totals() is what the ranks sum."""

    wrong_first: int = 0  # wrong output elements of the first validated calls
    wrong_steady: int = 0  # wrong output elements after the timed calls
    checked: int = 0  # every element compared: outputs and untouched buffers
    changed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    steady_checked: bool = False

    def first_call(self, spec: Any, case: Case, dev: Any, device: Any, kept: list) -> None:
        """After a validated call: its output, and the untouched buffers snapshot() kept before it."""
        bad, seen = check_output(spec, case, dev, device)
        self.wrong_first += bad
        self.checked += seen + sum(buf.size for buf, _ in kept)
        for buf, copy in kept:
            self.changed[kind_of(buf, case)] += _changed_in(buf, copy)

    def after_timed_calls(self, spec: Any, case: Case, dev: Any, device: Any) -> None:
        """The last timed call's output, checked too: a library may switch algorithms after its first
        calls on a communicator (MPICH moves allreduce to shared memory after ~5), so the timed calls
        can run other code than the one validated before the warm-up."""
        bad, seen = check_output(spec, case, dev, device)
        self.wrong_steady += bad
        self.checked += seen
        self.steady_checked = True

    def totals(self) -> np.ndarray:
        return np.array(
            [self.wrong_first, self.checked, self.wrong_steady, *(self.changed[k] for k in KINDS)], dtype=np.int64
        )


def wrong_of(totals: np.ndarray) -> int:
    """Every wrong element of the summed totals: outputs, first and steady, and untouched buffers."""
    return int(totals[0] + totals[2] + totals[3:].sum())


def note_of(totals: np.ndarray, steady_checked: bool) -> str:
    """Which validation failed, from the summed totals: the untouched buffers each call changed, by kind;
    the call before the warm-up, the last timed call, or both."""
    first, steady = int(totals[0]), int(totals[2])
    parts = [
        f"changed {int(n)} elements of {kind} the standard leaves untouched" for kind, n in zip(KINDS, totals[3:]) if n
    ]
    if first and steady:
        parts.append(f"wrong in the first validated call ({first}) and after the timed calls ({steady})")
    elif first:
        after = "right after the timed calls" if steady_checked else "the timed calls' output is not checkable"
        parts.append(f"wrong in the first validated call ({first}); {after}")
    elif steady:
        parts.append(
            f"wrong only after the timed calls ({steady} elements): the steady state differs from the first call"
        )
    return "; ".join(parts)
