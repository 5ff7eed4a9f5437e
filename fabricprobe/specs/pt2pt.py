"""Point-to-point tests between rank pairs, as OMB defines them.

- latency: blocking ping-pong (osu_latency); the time is half a round trip.
- bw: a window of non-blocking sends, one ack per window (osu_bw); time per message.
- bibw: windows in both directions at once (osu_bibw); time per message per direction.
- multi_lat, mbw_mr: latency and bw on every pair at once, ranks r and r + n/2 (osu_multi_lat,
  osu_mbw_mr): what --pairs all measures, named as OMB names them. mbw_mr's busbw is the aggregate
  over the n/2 pairs (OMB's MB/s) and its message rate that divided by the size (OMB's Messages/s).
Ranks that are not in a pair sit the point out (their samples are NaN).
"""

from __future__ import annotations

from typing import ClassVar

from fabricprobe.memory.host import POOL, BufferPool
from fabricprobe.oracle import patterns
from fabricprobe.specs.base import Case, CollectiveSpec

ROLE_INITIATOR = 0  # latency: pings; bw: sends
ROLE_RESPONDER = 1  # latency: pongs; bw: receives
ROLE_BOTH = 2  # bibw: sends and receives


class PointToPoint(CollectiveSpec):
    pt2pt = True
    in_place_supported = False
    receives_on: tuple[int, ...] = ()  # roles that receive the partner's data
    pingpong: ClassVar[bool] = False  # OMB's ping-pong loop (else its window loop)
    only_pairs: ClassVar[str] = ""  # the pair kind it always runs on, whatever --pairs says

    def roles(self, first: bool) -> int:
        return ROLE_INITIATOR if first else ROLE_RESPONDER

    def allocate(self, case: Case, pool: BufferPool = POOL) -> None:
        """A rank in no pair sits the point out: empty buffers (the bound probe's 1 MiB bw point held
        4 MiB of buffers and their patterns on each of 8 ranks, 6 of them idle: docs/scale.md)."""
        if case.role >= 0:
            super().allocate(case, pool)
            return
        case.send = pool.get("send", 0, case.dtype, case.hugepages)
        case.recv = pool.get("recv", 0, case.dtype, case.hugepages)

    def prepare(self, case: Case) -> None:
        if case.role < 0:
            return  # sits the point out: its buffers are empty (allocate)
        if case.send is not None:
            case.send[:] = patterns.data_at(case.rank, 0, case.count)
        patterns.sentinel_fill(case.recv, case.rank)

    def results(self, case: Case):
        if case.role not in self.receives_on:
            return []
        return [(case.recv, patterns.data_at(case.peer, 0, case.count))]


class Latency(PointToPoint):
    name = "latency"
    busbw_formula = "1"
    osu_title = "Latency Test"
    receives_on = (ROLE_INITIATOR, ROLE_RESPONDER)
    pingpong = True

    def timed_region(self, mode: str, window: int) -> str:
        return "ping-pong, half a round trip, no barrier"


class Bandwidth(PointToPoint):
    name = "bw"
    busbw_formula = "1"
    osu_title = "Bandwidth Test"
    receives_on = (ROLE_RESPONDER,)

    def timed_region(self, mode: str, window: int) -> str:
        return f"window of {window} sends + ack, per message, no barrier"


class BidirectionalBandwidth(PointToPoint):
    name = "bibw"
    busbw_formula = "2 (both directions)"
    osu_title = "Bi-Directional Bandwidth Test"
    receives_on = (ROLE_BOTH,)

    def timed_region(self, mode: str, window: int) -> str:
        return f"windows of {window} sends both ways + ack, per message, no barrier"

    def busbw_factor(self, nranks: int) -> float:
        return 2.0

    def roles(self, first: bool) -> int:
        return ROLE_BOTH


class MultiLatency(Latency):
    name = "multi_lat"
    osu_title = "Multi Latency Test"
    only_pairs = "all"
    default_sweep = False


class MultiBandwidth(Bandwidth):
    name = "mbw_mr"
    busbw_formula = "n/2 (the pairs together: OMB's aggregate MB/s)"
    osu_title = "Multiple Bandwidth / Message Rate Test"
    only_pairs = "all"
    default_sweep = False
    osu_rate = True  # OMB prints Messages/s beside MB/s

    def busbw_factor(self, nranks: int) -> float:
        return float(nranks // 2)


LATENCY = Latency()
BW = Bandwidth()
BIBW = BidirectionalBandwidth()
MULTI_LAT = MultiLatency()
MBW_MR = MultiBandwidth()
