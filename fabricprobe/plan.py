"""The ordered list of points a sweep measures, and notes on what it leaves out and why."""

from __future__ import annotations

from dataclasses import dataclass

from fabricprobe import collectives
from fabricprobe.config import SweepConfig
from fabricprobe.datatypes import BYTE, NO_OP, numpy_dtype
from fabricprobe.sizes import format_size
from fabricprobe.specs import SPECS
from fabricprobe.specs.base import Layout

EMPTY = "empty"  # the harness floor: a timed region with nothing in it
_INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class PointSpec:
    index: int
    collective: str
    algorithm: str
    dtype: str
    op: str
    in_place: bool
    mode: str
    requested_bytes: int
    layout: Layout

    @property
    def key(self) -> str:
        return "|".join((self.collective, self.algorithm, self.dtype, self.op, "inplace" if self.in_place else "outofplace",
                         self.mode, str(self.layout.nbytes)))

    @property
    def label(self) -> str:
        parts = [self.collective]
        if self.algorithm != collectives.LIBRARY:
            parts[0] += f"/{self.algorithm}"
        if self.dtype != BYTE:
            parts.append(self.dtype)
        if self.op != NO_OP:
            parts.append(self.op)
        if self.collective not in ("barrier", EMPTY):
            parts.append(format_size(self.layout.nbytes))
        if self.in_place:
            parts.append("in-place")
        if self.mode != "barrier":
            parts.append(f"({self.mode} mode)")
        return " ".join(parts)


def make_plan(config: SweepConfig, nranks: int, timers: list[str]) -> tuple[list[PointSpec], list[str]]:
    """Points in measurement order, and notes on what was skipped."""
    points: list[PointSpec] = []
    notes: list[str] = []
    seen: set[str] = set()

    def add(**kw) -> None:
        point = PointSpec(index=len(points), **kw)
        if point.key not in seen:
            seen.add(point.key)
            points.append(point)

    empty = Layout(0, 0, 0, 0)
    for timer in timers:
        for mode in config.modes:
            add(collective=EMPTY, algorithm=timer, dtype=BYTE, op=NO_OP, in_place=False, mode=mode,
                requested_bytes=0, layout=empty)

    for coll in config.collectives:
        spec = SPECS[coll]
        if spec.pt2pt and nranks < 2:
            notes.append(f"{coll}: point-to-point tests need at least 2 ranks; skipped at n=1")
            continue
        for alg in config.algorithms:
            if collectives.get(coll, alg) is None:
                if alg != collectives.LIBRARY:
                    notes.append(f"{coll}: no algorithm {alg!r}; skipped")
                continue
            dtypes = [BYTE] if (spec.pt2pt or not spec.sized) else config.dtypes
            ops = config.ops if spec.reduces else [NO_OP]
            places = [p for p in config.in_place if spec.in_place_supported or not p] or [False]
            sizes = config.sizes if spec.sized else [0]
            for dtype in dtypes:
                itemsize = numpy_dtype(dtype).itemsize
                for op in ops:
                    for in_place in places:
                        for mode in config.modes:
                            for nbytes in sizes:
                                layout = spec.layout(nbytes, itemsize, nranks)
                                if max(layout.send_len, layout.recv_len) > _INT_MAX:
                                    notes.append(f"{coll} {dtype} {format_size(nbytes)}: count exceeds the C int range; skipped")
                                    continue
                                add(collective=coll, algorithm=alg, dtype=dtype, op=op, in_place=in_place,
                                    mode=mode, requested_bytes=nbytes, layout=layout)
    return points, notes
